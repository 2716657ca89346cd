// Package examples holds the example policies that ship with Warden: quickstart.yaml, the
// default when no policy file is given (its hard blocks are those of boundaries.json), and
// scout/warden.yaml, the Scout deployment. Its test checks every example against the published
// JSON Schema in docs/warden.schema.json.
package examples
