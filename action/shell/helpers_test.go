package shell

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// links is the fake file system's symbolic links, for testResolve.
var links = map[string]string{
	"/w/ln":   "/etc",          // /w/ln/passwd is /etc/passwd
	"/w/up":   "/srv/deep/dir", // /w/up/../x is /srv/deep/x, not /w/x
	"/w/loop": "/w/loop",
}

// testResolve resolves through links, component by component, like the real resolver.
func testResolve(p string) (string, error) {
	for range 40 {
		changed := false
		for from, to := range links {
			if p == from || strings.HasPrefix(p, from+"/") {
				if from == "/w/loop" {
					return "", errors.New("too many levels of symbolic links")
				}
				p = to + p[len(from):]
				changed = true
			}
		}
		if !changed {
			return p, nil
		}
	}
	return "", errors.New("too many levels of symbolic links")
}

func testOptions() Options {
	return Options{Dir: "/w", Home: "/home/u", Resolve: testResolve}
}

// result is an analysis in a form tables can spell: each command as "VIA: normalized" (or
// just normalized at the top level), each effect as "op path [-r] #cmd why", each unknown's
// What.
type result struct {
	Cmds     []string
	Effects  []string
	Unknowns []string
}

func summarize(a *Analysis) result {
	var r result
	for _, c := range a.Commands {
		s := c.Normalized()
		if c.Via != "" {
			s = c.Via + ": " + s
		}
		r.Cmds = append(r.Cmds, s)
	}
	for _, e := range a.Effects {
		rec := ""
		if e.Recursive {
			rec = " -r"
		}
		r.Effects = append(r.Effects, fmt.Sprintf("%s %s%s #%d %s", e.Op, e.Path, rec, e.Cmd, e.Why))
	}
	for _, u := range a.Unknowns {
		r.Unknowns = append(r.Unknowns, u.What)
	}
	return r
}

type testCase struct {
	give string
	want result
}

// check analyses each case with testOptions and compares the summary.
func check(t *testing.T, tests []testCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			a, err := Analyze(tt.give, testOptions())
			if err != nil {
				t.Fatalf("Analyze(%q): %v", tt.give, err)
			}
			if diff := cmp.Diff(tt.want, summarize(a)); diff != "" {
				t.Errorf("Analyze(%q) mismatch (-want +got):\n%s", tt.give, diff)
			}
		})
	}
}
