package surface_test

import (
	"fmt"
	"log"

	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/surface"
)

// ExampleOpen opens a person's session on the quickstart policy (the one Warden uses when no
// policy file is given), lists some of its tools, and explains a tool it does not hold: the
// built-in list is an exclusive allowlist, so a Claude Code tool the policy does not list is
// never registered.
func ExampleOpen() {
	p, err := policy.Load("../examples/quickstart.yaml")
	if err != nil {
		log.Fatal(err)
	}
	env := p.Env(policy.MapLookup(nil)) // the host environment; os.LookupEnv in a real server
	s, err := surface.Open(env, surface.Spec{Role: "person", Tenant: "default"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s holds %d tools, first %v\n", s.Role().ID, s.Len(), s.Tools()[:4])
	g := s.Gate("Bash")
	fmt.Println("Bash:", s.Has("Bash"), g.Decision, "for calls that", g.Effects)

	e := s.Explain("NotebookEdit")
	fmt.Printf("NotebookEdit: given=%v, removed by %s: %s\n", e.Given, e.Filter, e.Reason)
	// Output:
	// person holds 22 tools, first [files_read files_list files_find files_search]
	// Bash: true ask for calls that [delete]
	// NotebookEdit: given=false, removed by registration: not a tool of this policy
}
