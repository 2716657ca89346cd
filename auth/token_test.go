package auth_test

import (
	"strings"
	"testing"

	"github.com/wardenhq/warden/auth"
)

func TestSecrets(t *testing.T) {
	a, ha, err := auth.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, hb, _ := auth.NewSecret()
	if a == b || ha == hb || !strings.HasPrefix(a, "wdn_") || len(a) < 40 {
		t.Fatalf("secrets %q %q", a, b)
	}
	if auth.Hash(a) != ha || strings.Contains(ha, a) {
		t.Error("the hash is not the secret's, or contains it")
	}
}

func TestBearer(t *testing.T) {
	tests := []struct {
		give, want string
		ok         bool
	}{
		{"Bearer wdn_x", "wdn_x", true},
		{"bearer  wdn_x ", "wdn_x", true},
		{"Basic dXNlcjpwYXNz", "", false},
		{"Bearer ", "", false},
		{"wdn_x", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := auth.Bearer(tt.give)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Bearer(%q) = %q, %v; want %q, %v", tt.give, got, ok, tt.want, tt.ok)
		}
	}
}

func TestARoleReadsWell(t *testing.T) {
	for role, want := range map[string]string{"admin": "an admin", "agent": "an agent", "operator": "an operator",
		"approver": "an approver", "viewer": "a viewer"} {
		if got := auth.A(role); got != want {
			t.Errorf("A(%q) = %q, want %q", role, got, want)
		}
	}
}
