package secret

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// naiveReplace is the definition of leftmost-longest replacement, slowly.
func naiveReplace(pats []pattern, s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		best := -1
		for j, p := range pats {
			if p.find != "" && strings.HasPrefix(s[i:], p.find) && (best < 0 || len(p.find) > len(pats[best].find)) {
				best = j
			}
		}
		if best < 0 {
			b.WriteByte(s[i])
			i++
			continue
		}
		b.WriteString(pats[best].repl)
		i += len(pats[best].find)
	}
	return b.String()
}

func TestMatcherReplace(t *testing.T) {
	pats := []pattern{
		{find: "abcd", repl: "<1>"},
		{find: "abcdef", repl: "<2>"}, // longer, same start: wins
		{find: "cdefgh", repl: "<3>"}, // starts later than abcd...: loses where they overlap
		{find: "xyz", repl: "<4>"},
		{find: "xyz", repl: "<dup>"}, // the first of equal patterns wins
		{find: "", repl: "<empty>"},  // ignored
		{find: "bcdx", repl: "<5>"},
	}
	tests := []struct {
		give, want string
	}{
		{give: "", want: ""},
		{give: "nothing here", want: "nothing here"},
		{give: "abcd", want: "<1>"},
		{give: "abcde", want: "<1>e"},
		{give: "abcdef", want: "<2>"},
		{give: "abcdefgh", want: "<2>gh"},
		{give: "zabcdefgh", want: "z<2>gh"},
		{give: "cdefgh", want: "<3>"},
		{give: "abcdxyz", want: "<1><4>"},
		{give: "abcdx", want: "<1>x"}, // abcd starts before bcdx
		{give: "abcbcdx", want: "abc<5>"},
		{give: "xyzxyzxy", want: "<4><4>xy"},
		{give: "abcabcdab", want: "abc<1>ab"},
	}
	m := newAutomaton(pats)
	small := buildAutomaton(pats, 1) // only the root dense: the sparse path
	for _, tt := range tests {
		if got := m.replace(tt.give); got != tt.want {
			t.Errorf("replace(%q) = %q; want %q", tt.give, got, tt.want)
		}
		if got := small.replace(tt.give); got != tt.want {
			t.Errorf("sparse replace(%q) = %q; want %q", tt.give, got, tt.want)
		}
	}
	if newAutomaton(nil) != nil || newAutomaton([]pattern{{find: "", repl: "x"}}) != nil {
		t.Error("a matcher with nothing to find is not nil")
	}
}

func TestMatcherNoMatchReturnsInput(t *testing.T) {
	m := newAutomaton([]pattern{{find: "needle", repl: "N"}})
	s := strings.Repeat("hay stack needl ", 100)
	if allocs := testing.AllocsPerRun(10, func() { _ = m.replace(s) }); allocs != 0 {
		t.Errorf("%v allocations for a text without a match; want 0", allocs)
	}
}

// TestMatcherRandom compares the automaton with naiveReplace on small alphabets, where
// patterns overlap and share prefixes and suffixes all the time.
func TestMatcherRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(alphabet string, max int) string {
		n := 1 + rng.IntN(max)
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for round := range 3000 {
		alphabet := "abc"[:1+round%3]
		if round%5 == 0 {
			alphabet = "ab\x00\xff"
		}
		var pats []pattern
		for i := range 1 + rng.IntN(8) {
			pats = append(pats, pattern{find: word(alphabet, 7), repl: "<" + string(rune('A'+i)) + ">"})
		}
		text := word(alphabet, 60)
		want := naiveReplace(pats, text)
		for _, budget := range []int{1, 8, denseBudget} {
			if got := buildAutomaton(pats, budget).replace(text); got != want {
				t.Fatalf("budget %d, patterns %q, text %q:\n%s", budget, pats, text, cmp.Diff(want, got))
			}
		}
	}
}

// TestMatcherEveryByte uses all 256 byte values in patterns, so that no byte is left for the
// "in no pattern" column: the column numbers must not wrap.
func TestMatcherEveryByte(t *testing.T) {
	var all []byte
	for b := range 256 {
		all = append(all, byte(b))
	}
	pats := []pattern{{find: string(all), repl: "<all>"}, {find: "\xff\xfe\xfd\xfc", repl: "<ff>"}, {find: "\x00\x01\x02\x03", repl: "<00>"}}
	for _, give := range []string{"x\xff\xfe\xfd\xfcy", "\x00\x01\x02\x03\x04", string(all) + "\xff\xfe\xfd\xfc", "\xff\xff\xfe\xfd\xfc\xfc"} {
		want := naiveReplace(pats, give)
		for _, budget := range []int{1, denseBudget} {
			if got := buildAutomaton(pats, budget).replace(give); got != want {
				t.Errorf("budget %d: replace(%q) = %q; want %q", budget, give, got, want)
			}
		}
	}
}
