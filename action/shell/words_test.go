package shell

import (
	"fmt"
	"slices"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// TestWordsShareNoSegments checks that the arguments of one command, whose segments share one
// allocation, do not write over each other when one of them is appended to.
func TestWordsShareNoSegments(t *testing.T) {
	const src = `cp 'a'b "c"\d e{f,g} ''`
	f, err := parseText(src)
	if err != nil {
		t.Fatal(err)
	}
	w := newWalker(src, testOptions())
	args := w.words(f.Stmts[0].Cmd.(*syntax.CallExpr).Args)
	var want []string
	for _, a := range args {
		want = append(want, a.val)
	}
	if got := []string{"cp", "ab", "cd", "ef", "eg", ""}; !slices.Equal(want, got) {
		t.Fatalf("the words are %q, want %q", want, got)
	}
	for i := range args {
		args[i].segs = append(args[i].segs, seg{text: "X"})
		for j, a := range args {
			a.finish()
			if j != i && a.val != want[j] {
				t.Fatalf("appending to argument %d changed argument %d to %q, want %q", i, j, a.val, want[j])
			}
		}
		args[i].segs = args[i].segs[:len(args[i].segs)-1]
	}
}

// TestPosText checks that the positions taken from the table of the first line's columns are
// written as every other position is.
func TestPosText(t *testing.T) {
	w := newWalker("true", testOptions())
	for _, line := range []uint{1, 2, 40} {
		for col := uint(1); col < 600; col++ {
			if got, want := w.pos(syntax.NewPos(0, line, col)), fmt.Sprintf("%d:%d", line, col); got != want {
				t.Fatalf("pos(line %d, col %d) = %q, want %q", line, col, got, want)
			}
		}
	}
}
