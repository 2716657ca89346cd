package examples

import _ "embed"

// Quickstart is examples/quickstart.yaml: the policy Warden uses when no file is given.
//
//go:embed quickstart.yaml
var Quickstart []byte

// Scout is examples/scout/warden.yaml: the seed's Scout deployment, reproduced.
//
//go:embed scout/warden.yaml
var Scout []byte

// QuickstartName is the name the built-in quickstart policy is reported under.
const QuickstartName = "quickstart.yaml (built in)"
