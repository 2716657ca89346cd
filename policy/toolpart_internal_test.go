package policy

import "testing"

// isToolPart is toolPartPattern without the regexp: they must agree.
func TestIsToolPartAgreesWithItsPattern(t *testing.T) {
	for _, s := range []string{"", "a", "A9", "9a", "_a", "a_b.c-d", "a b", "a/b", "é", "a\n", "-", ".a", "a.", "x__y", "a*"} {
		if got, want := isToolPart(s), toolPartPattern.MatchString(s); got != want {
			t.Errorf("isToolPart(%q) = %v, the pattern says %v", s, got, want)
		}
	}
}

func FuzzIsToolPart(f *testing.F) {
	f.Add("a_b.c-d")
	f.Add("_x")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isToolPart(s), toolPartPattern.MatchString(s); got != want {
			t.Errorf("isToolPart(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}
