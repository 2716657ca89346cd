package policy_test

import (
	"strings"
	"testing"

	"github.com/wardenhq/warden/policy"
)

// TestSecretsHosts: where a server's protected values may go, as written, defaulted from a url
// connector's host, and refused with the place of the mistake.
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

func TestSecretsErrors(t *testing.T) {
	tests := []struct {
		name string
		give string // the connectors section, from line 2
		want string
	}{
		{
			name: "a host the allowlist cannot read",
			give: "  - id: gh\n    upstream: {command: [server]}\n    secrets:\n      hosts:\n        - api.example.com\n        - \"exa mple.com\"\n",
			want: fileName + `:7:12: gh: secrets: host "exa mple.com": malformed entry`,
		},
		{
			name: "a never-allowed address",
			give: "  - id: gh\n    upstream: {command: [server]}\n    secrets:\n      hosts: [169.254.169.254]\n",
			want: fileName + `:5:15: gh: secrets: host "169.254.169.254": `,
		},
		{
			name: "a host listed twice",
			give: "  - id: gh\n    upstream: {command: [server]}\n    secrets:\n      hosts: [api.example.com, api.example.com]\n",
			want: fileName + `:5:32: gh: secrets: host "api.example.com" is listed twice`,
		},
		{
			name: "hosts and exposeToProcess together",
			give: "  - id: gh\n    upstream: {command: [server]}\n    secrets:\n      exposeToProcess: true\n      hosts: [api.example.com]\n",
			want: fileName + `:6:14: gh: secrets: a process given the values themselves (exposeToProcess) reaches any host it may; hosts would never be used`,
		},
		{
			name: "an unknown key",
			give: "  - id: gh\n    upstream: {command: [server]}\n    secrets:\n      host: [api.example.com]\n",
			want: fileName + `:5:7: `,
		},
		{
			name: "hosts not a list",
			give: "  - id: gh\n    upstream: {command: [server]}\n    secrets:\n      hosts: api.example.com\n",
			want: fileName + `:5:14: `,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.Parse(fileName, []byte(doc("connectors:\n"+tt.give)))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error\n%v\nwant a line starting %q", err, tt.want)
			}
		})
	}
}
