package patch

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzChanges checks that no input panics, that every Change names the paths its Op needs
// and a line of the input, that every error is a *ParseError at a line of the input, and that
// CRLF line ends make no difference.
func FuzzChanges(f *testing.F) {
	for _, tt := range changeTests {
		f.Add(tt.give)
	}
	for _, tt := range errorTests {
		f.Add(tt.give)
	}
	f.Add(benchPatch)
	f.Fuzz(func(t *testing.T, patch string) {
		n := strings.Count(patch, "\n")
		if !strings.HasSuffix(patch, "\n") {
			n++
		}
		got, err := Changes(patch)
		if !strings.Contains(patch, "\r") {
			// CRLF line ends name the same files and fail at the same lines.
			crlf, crlfErr := Changes(strings.ReplaceAll(patch, "\n", "\r\n"))
			if diff := cmp.Diff(got, crlf); diff != "" || errLine(err) != errLine(crlfErr) {
				t.Fatalf("CRLF changes the result: %v, %v (-LF +CRLF):\n%s", err, crlfErr, diff)
			}
		}
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *ParseError", err, err)
			}
			if pe.Line < 0 || pe.Line > n || pe.Msg == "" {
				t.Fatalf("error %q at line %d of %d", pe.Msg, pe.Line, n)
			}
			if got != nil {
				t.Fatalf("changes %+v returned with error %v", got, err)
			}
			return
		}
		if len(got) == 0 {
			t.Fatal("no changes and no error")
		}
		for _, c := range got {
			if c.Line < 1 || c.Line > n {
				t.Fatalf("change %+v at line %d of %d", c, c.Line, n)
			}
			switch c.Op {
			case Create:
				if c.Old != "" || c.New == "" {
					t.Fatalf("create %+v", c)
				}
			case Delete:
				if c.Old == "" || c.New != "" {
					t.Fatalf("delete %+v", c)
				}
			case Modify, Rename, Copy:
				if c.Old == "" || c.New == "" {
					t.Fatalf("%s %+v", c.Op, c)
				}
			default:
				t.Fatalf("unknown op in %+v", c)
			}
			if strings.Contains(c.Old, "\x00") || strings.Contains(c.New, "\x00") {
				t.Fatalf("NUL in %+v", c)
			}
			if c.ModeOnly && (c.Op != Modify || c.Binary) {
				t.Fatalf("mode-only %+v", c)
			}
		}
	})
}

// errLine is the line of a *ParseError, -1 for no error.
func errLine(err error) int {
	var pe *ParseError
	if errors.As(err, &pe) {
		return pe.Line
	}
	return -1
}
