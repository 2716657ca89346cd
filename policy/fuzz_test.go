package policy_test

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/wardenhq/warden/policy"
)

// fuzzErrorLine is the shape of every error line: the file name, then a place when there is
// one, then a message on the same line.
var fuzzErrorLine = regexp.MustCompile(`^name\.yaml:\d+:\d+: .+$|^name\.yaml: .+$`)

// FuzzParse checks that no document crashes Parse, that every error it reports is one line
// naming the file (and a place), and that a policy it accepts has a stable revision.
//
// It is seeded with the example policies and every document of the load tests; any crasher it
// finds is kept under testdata/fuzz/FuzzParse as a regression seed.
func FuzzParse(f *testing.F) {
	for _, path := range examples {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, b := range badDocs {
		f.Add([]byte(b.text()))
	}
	for _, w := range warningDocs {
		f.Add([]byte(doc(w.give)))
	}
	f.Add([]byte(doc("")))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := policy.Parse("name.yaml", data)
		if err != nil {
			if p != nil {
				t.Errorf("Parse returned a policy and an error")
			}
			if !errors.Is(err, policy.ErrInvalid) {
				t.Errorf("the error is not ErrInvalid: %v", err)
			}
			var list policy.ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("the error is not a non-empty ErrorList: %T %v", err, err)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(list) {
				t.Errorf("%d errors print as %d lines:\n%s", len(list), len(lines), err)
			}
			for _, line := range lines {
				if !fuzzErrorLine.MatchString(line) {
					t.Errorf("error line %q does not read name.yaml[:line:col]: message", line)
				}
			}
			for i := 1; i < len(list); i++ {
				a, b := list[i-1].Pos, list[i].Pos
				if a.Line > b.Line || a.Line == b.Line && a.Col > b.Col {
					t.Errorf("errors out of document order: %v before %v", list[i-1], list[i])
				}
			}
			return
		}
		if p.Revision == "" {
			t.Fatalf("a policy without a revision")
		}
		again, err := policy.Parse("name.yaml", data)
		if err != nil {
			t.Fatalf("the second Parse of the same bytes failed: %v", err)
		}
		if again.Revision != p.Revision {
			t.Errorf("the same bytes give revisions %s and %s", p.Revision, again.Revision)
		}
		for _, w := range p.Warnings() {
			if !fuzzErrorLine.MatchString(w.Error()) {
				t.Errorf("warning %q does not read name.yaml[:line:col]: message", w.Error())
			}
		}
	})
}
