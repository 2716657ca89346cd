package shell

import "testing"

// benchCommand is a realistic command line of about 200 characters: a cd, a pipe, redirects,
// an rm and a grep.
const benchCommand = `cd /srv/app && git status --short | grep -v '^??' > /tmp/changes.txt; ` +
	`rm -rf ./build/cache/*.tmp && grep -rn "TODO" src/ --include='*.go' | head -20 >> notes.md 2>/dev/null; ` +
	`ls -la ./dist || echo failed`

func BenchmarkAnalyze(b *testing.B) {
	opt := testOptions()
	b.ReportAllocs()
	b.SetBytes(int64(len(benchCommand)))
	for b.Loop() {
		if _, err := Analyze(benchCommand, opt); err != nil {
			b.Fatal(err)
		}
	}
}
