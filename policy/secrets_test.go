package policy_test

import (
	"strings"
	"testing"

	"github.com/wardenhq/warden/policy"
)

// TestSecretsHosts: where a server's protected values may go, as written or defaulted from a
// url connector's host (the mistakes are among badDocs in load_test.go).
func TestSecretsHosts(t *testing.T) {
	tests := []struct {
		name       string
		give       string // the connectors section
		wantHosts  []string
		wantExpose bool
	}{
		{
			name:      "a url connector's own host by default",
			give:      "  - {id: gh, upstream: {url: \"https://api.example.com/mcp\"}}\n",
			wantHosts: []string{"api.example.com"},
		},
		{
			name:      "a port other than the default is kept",
			give:      "  - {id: gh, upstream: {url: \"https://api.example.com:8443/mcp\"}}\n",
			wantHosts: []string{"api.example.com:8443"},
		},
		{
			name: "a command connector has none by default",
			give: "  - {id: gh, upstream: {command: [server]}}\n",
		},
		{
			name: "a loopback connector's host is no place for a value",
			give: "  - {id: gh, upstream: {url: \"http://127.0.0.1:9000/mcp\"}}\n",
		},
		{
			name:      "hosts as written replace the default",
			give:      "  - {id: gh, upstream: {url: \"https://mcp.example.com/\"}, secrets: {hosts: [api.example.com, \"*.example.org\", 198.51.100.7]}}\n",
			wantHosts: []string{"api.example.com", "*.example.org", "198.51.100.7"},
		},
		{
			name: "an empty list is none",
			give: "  - {id: gh, upstream: {url: \"https://mcp.example.com/\"}, secrets: {hosts: []}}\n",
		},
		{
			name:       "exposeToProcess",
			give:       "  - {id: gh, upstream: {command: [server]}, secrets: {exposeToProcess: true}}\n",
			wantExpose: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := policy.Parse(fileName, []byte(doc("connectors:\n"+tt.give)))
			if err != nil {
				t.Fatal(err)
			}
			s, ok := p.Server("gh")
			if !ok {
				t.Fatal("no connector gh")
			}
			var got []string
			if s.SecretHosts != nil {
				got = s.SecretHosts.Entries()
			}
			if strings.Join(got, ",") != strings.Join(tt.wantHosts, ",") {
				t.Errorf("hosts %q, want %q", got, tt.wantHosts)
			}
			if s.ExposeSecrets != tt.wantExpose {
				t.Errorf("exposeToProcess %v, want %v", s.ExposeSecrets, tt.wantExpose)
			}
		})
	}
}
