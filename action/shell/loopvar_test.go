package shell

import "testing"

// TestLoopVariables checks that a for loop's variable stands for its words where nothing can
// change it, and is an expansion otherwise.
func TestLoopVariables(t *testing.T) {
	tests := []effectOrUnknown{
		{`for f in a b; do wc -l "$f"; done`, "read /w/a"},
		{`for f in a b; do wc -l "$f"; done`, "read /w/b"},
		{`for f in *.md; do gofmt -l $f; done`, "read /w/*.md"},
		{`for f in x/{a,b}; do rm "${f}"; done`, "delete /w/x/b"},
		{`for f in a; do echo x > "$f"; done`, "write /w/a"},
		{`for f in a; do f=/etc/passwd; cat "$f"; done`, "?"},
		{`for f in a; do read f; cat "$f"; done`, "?"},
		{`for f in a; do cd /etc; cat "$f"; done`, "?"},
		{`for f in a; do eval 'f=/etc/passwd'; cat "$f"; done`, "?"},
		{`for f in "a b"; do cat $f; done`, "?"},
		{`for f in '*.env'; do cat $f; done`, "?"},
		{`for f in $X; do cat "$f"; done`, "?"},
		{`IFS=:; for f in x:s; do cat $f; done`, "?"},
		{`for f in x:s; do IFS=: cat $f; done`, "?"},
		{`for f in a; do :; done; cat "$f"`, "?"},
	}
	for _, tt := range tests {
		checkEffectOrUnknown(t, tt)
		if tt.want == "?" {
			continue
		}
		if a, _ := Analyze(tt.give, testOptions()); len(a.Unknowns) > 0 {
			t.Errorf("%s: unknowns %v", tt.give, a.Unknowns)
		}
	}
	// "a b" quoted is one file
	checkEffectOrUnknown(t, effectOrUnknown{`for f in "a b"; do cat "$f"; done`, "read /w/a b"})
}
