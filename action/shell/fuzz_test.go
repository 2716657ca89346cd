package shell

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzAnalyze checks that Analyze never panics or hangs, and that it returns either a
// *ParseError or an analysis whose effects have absolute, clean paths and valid command
// indexes.
func FuzzAnalyze(f *testing.F) {
	for _, tests := range allTests {
		for _, tt := range tests {
			f.Add(tt.give)
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		for _, opt := range []Options{testOptions(), {}} {
			done := make(chan struct{})
			var a *Analysis
			var err error
			go func() {
				defer close(done)
				a, err = Analyze(src, opt)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("Analyze(%q) did not return", src)
			}
			if err != nil {
				var pe *ParseError
				if !errors.As(err, &pe) {
					t.Fatalf("Analyze(%q) error %T %v, want *ParseError", src, err, err)
				}
				if a != nil {
					t.Fatalf("Analyze(%q) returned an analysis with an error", src)
				}
				continue
			}
			for _, u := range a.Unknowns {
				if strings.HasPrefix(u.What, internalError) {
					t.Fatalf("Analyze(%q): %s", src, u.What)
				}
			}
			for _, e := range a.Effects {
				if !filepath.IsAbs(e.Path) || filepath.Clean(e.Path) != e.Path {
					t.Fatalf("Analyze(%q): effect path %q is not absolute and clean", src, e.Path)
				}
				if e.Cmd < 0 || e.Cmd >= len(a.Commands) {
					t.Fatalf("Analyze(%q): effect %+v: Cmd out of range (%d commands)", src, e, len(a.Commands))
				}
				if e.Op != Read && e.Op != Write && e.Op != Delete && e.Op != Execute {
					t.Fatalf("Analyze(%q): effect %+v: unknown op", src, e)
				}
			}
		}
	})
}
