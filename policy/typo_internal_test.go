package policy

import "testing"

func TestOneEdit(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"persn", "person", true},   // deleted
		{"personn", "person", true}, // inserted
		{"persin", "person", true},  // replaced
		{"preson", "person", true},  // swapped
		{"person", "person", false}, // the same
		{"prsn", "person", false},   // two apart
		{"inbound", "coworker", false},
		{"", "a", true},
	} {
		if got := oneEdit(tt.a, tt.b); got != tt.want {
			t.Errorf("oneEdit(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := oneEdit(tt.b, tt.a); got != tt.want {
			t.Errorf("oneEdit(%q, %q) = %v, want %v", tt.b, tt.a, got, tt.want)
		}
	}
}
