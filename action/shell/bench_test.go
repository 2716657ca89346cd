package shell

import "testing"

// benchCommand is a realistic command line of about 200 characters: a cd, a pipe, redirects,
// an rm and a grep.
const benchCommand = `cd /srv/app && git status --short | grep -v '^??' > /tmp/changes.txt; ` +
	`rm -rf ./build/cache/*.tmp && grep -rn "TODO" src/ --include='*.go' | head -20 >> notes.md 2>/dev/null; ` +
	`ls -la ./dist || echo failed`

// BenchmarkAnalyze analyses the command with its syntax tree kept from the run before, as a
// command reviewed again is, and parsed anew each time, as a command seen for the first time
// is.
func BenchmarkAnalyze(b *testing.B) {
	opt := testOptions()
	for _, kept := range []bool{true, false} {
		name := "tree=parsed"
		if kept {
			name = "tree=kept"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(benchCommand)))
			for b.Loop() {
				if !kept {
					trees.reset()
				}
				if _, err := Analyze(benchCommand, opt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
