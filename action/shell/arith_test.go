package shell

import (
	"strings"
	"testing"
)

// TestCodeInValues checks the places where bash evaluates text as code: literal code there is
// analysed, a variable whose value is not known to be inert is an Unknown, and values the
// command itself makes inert are not.
func TestCodeInValues(t *testing.T) {
	// The output of a substitution in a subscript is itself evaluated as arithmetic, so the
	// cases that run cat s both read s and ask.
	tests := []struct {
		give    string
		effect  string // an effect that must be found ("op path")
		unknown bool   // whether an Unknown is expected
	}{
		{give: `let 'a[$(cat s)]=1'`, effect: "read /w/s", unknown: true},
		{give: `[[ 'a[$(cat s)]' -eq 0 ]]`, effect: "read /w/s", unknown: true},
		{give: `test -v 'a[$(cat s)]'`, effect: "read /w/s", unknown: true},
		{give: `printf -v 'a[$(cat s)]' x`, effect: "read /w/s", unknown: true},
		{give: `declare 'a[$(cat s)]=1'`, effect: "read /w/s", unknown: true},
		{give: `declare -n r='a[$(cat s)]'`, effect: "read /w/s", unknown: true},
		{give: `x='a[$(cat s)]'; echo $((x))`, unknown: true},
		{give: `read x; (( x ))`, unknown: true},
		{give: `[[ $X -eq 0 ]]`, unknown: true},
		{give: `for f in *; do echo $((f)); done`, unknown: true},
		{give: `y=z; x=y; echo $((x))`, unknown: true},
		{give: `echo "${p@P}"`, unknown: true},
		{give: `x=HOME; echo "${!x}"`},
		{give: `x='a[1]'; echo "${!x}"`, unknown: true},
		{give: `printf -v "$V" x`, unknown: true},
		{give: `declare -i n; n=$1`, unknown: true},
		{give: `declare "$N=1"`, unknown: true},
		{give: `r='a[$(cat s)]'; declare -n r; echo $r`, unknown: true},
		{give: `declare -n r; r='a[$(cat s)]'`, effect: "read /w/s", unknown: true},
		{give: `wait -n -p 'a[$(cat s)]'`, effect: "read /w/s", unknown: true},
		{give: `declare -n r=x; r=1`},
		{give: `n=$(wc -l < f); echo $((n + 1)); [[ "$(ls | wc -l)" -gt 0 ]]`},
		{give: `echo $(( $(date +%s) - $(nproc) ))`},
		{give: `n=$(wc -l f); echo $((n))`, unknown: true}, // wc prints the file name too
		{give: `n=$(cat f | head -1); echo $((n))`, unknown: true},
		{give: `for ((i = 0; i < 3; i++)); do echo $i; done`},
		{give: `n=0; n=$((n + 1)); [[ $n -gt 0 ]] && [[ $# -eq 0 ]]`},
		{give: `for i in 1 2 3; do echo $((i * 2)); done`},
		{give: `declare -i n=5; let 'm = n * 2'; echo $((m + RANDOM))`},
		{give: `s=hello; echo "${s:1:2}"; test -v HOME`},
	}
	for _, tt := range tests {
		a, err := Analyze(tt.give, testOptions())
		if err != nil {
			t.Fatalf("%s: %v", tt.give, err)
		}
		if got := len(a.Unknowns) > 0; got != tt.unknown {
			t.Errorf("%s: unknowns %v; want some: %v", tt.give, a.Unknowns, tt.unknown)
		}
		if tt.effect == "" {
			continue
		}
		found := false
		for _, e := range a.Effects {
			found = found || strings.HasPrefix(string(e.Op)+" "+e.Path, tt.effect)
		}
		if !found {
			t.Errorf("%s: effects %v; want %s", tt.give, a.Effects, tt.effect)
		}
	}
}
