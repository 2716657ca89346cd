package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/wardenhq/warden/policy"
)

func TestSelectConnection(t *testing.T) {
	p, err := policy.Parse("t.yaml", []byte(`
version: 1
connectors:
  - id: shop
    effect: read
    tools: [{name: mcp__shop__list}]
tenants:
  - id: main
    account: acme
    connections:
      - {id: main-store, connector: shop, name: Main Store}
      - {id: outlet, connector: shop, name: Outlet}
      - {id: outlet-old, connector: shop, name: outlet}
      - {id: closed, connector: shop, name: Closed, enabled: false}
  - id: other
    account: acme
    connections:
      - {id: shared-store, connector: shop, name: Shared, sharedWith: [main]}
      - {id: private, connector: shop, name: Private}
`))
	if err != nil {
		t.Fatal(err)
	}
	main, _ := p.Tenant("main")
	shop, _ := p.Server("shop")
	tests := []struct {
		give, want, err string
	}{
		{give: "main-store", want: "main-store"},
		{give: "MAIN STORE", want: "main-store"},
		{give: "shared-store", want: "shared-store"},
		{give: "shared", want: "shared-store"},
		{give: "outlet", want: "outlet"}, // an exact id wins over names
		{give: "Outlet", err: "ambiguous"},
		{give: "closed", err: "no usable"},
		{give: "private", err: "no usable"},
		{give: "nothing", err: "no usable"},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			c, err := p.SelectConnection(main, shop, tt.give)
			if tt.err != "" {
				if !errors.Is(err, policy.ErrNoConnection) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, %v; want an error mentioning %q", c, err, tt.err)
				}
				return
			}
			if err != nil || c.ID != tt.want {
				t.Fatalf("got %v, %v; want %s", c, err, tt.want)
			}
		})
	}
}
