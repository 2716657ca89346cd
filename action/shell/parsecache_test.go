package shell

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// tableCommands are the commands of the table tests.
func tableCommands() []string {
	var out []string
	for _, tests := range allTests {
		for _, tt := range tests {
			out = append(out, tt.give)
		}
	}
	return out
}

func analysis(src string) string {
	a, err := Analyze(src, testOptions())
	return fmt.Sprintf("%#v %v", a, err)
}

// TestParseCacheSameAnalysis checks that an analysis of a kept tree says exactly what the
// analysis of a fresh parse says, for every command of the table tests.
func TestParseCacheSameAnalysis(t *testing.T) {
	defer trees.reset()
	kept := 0
	for _, src := range tableCommands() {
		trees.reset()
		fresh := analysis(src)
		if _, ok := trees.get(src); ok {
			kept++
		}
		if got := analysis(src); got != fresh {
			t.Errorf("Analyze(%q) from a kept tree:\n%s\nfrom a fresh parse:\n%s", src, got, fresh)
		}
	}
	if kept < 200 {
		t.Errorf("only %d of the commands were analysed again from a kept tree", kept)
	}
}

// TestParseCacheConcurrent analyses the same commands from several goroutines at once, so
// that they walk the same kept trees: under the race detector, any write to a shared tree
// fails the test, and every analysis must agree with the one made alone.
func TestParseCacheConcurrent(t *testing.T) {
	defer trees.reset()
	all := tableCommands()
	for len(all) > 0 {
		chunk := all[:min(64, len(all))] // well within the cache: every tree stays kept
		all = all[len(chunk):]
		trees.reset()
		want := map[string]string{}
		for _, src := range chunk {
			want[src] = analysis(src)
		}
		var wg sync.WaitGroup
		errs := make(chan string, 4)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, src := range chunk {
					if got := analysis(src); got != want[src] {
						errs <- fmt.Sprintf("Analyze(%q) concurrently:\n%s\nalone:\n%s", src, got, want[src])
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	}
}

// TestParseCacheBounds checks that the cache keeps at most parseCacheSize trees, forgets the
// least recently used first, and keeps no tree of a long text.
func TestParseCacheBounds(t *testing.T) {
	trees.reset()
	defer trees.reset()
	for i := range parseCacheSize + 10 {
		if _, err := parse(fmt.Sprintf("echo %d", i)); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			continue
		}
		parse("echo 0") // kept in use: never the least recently used
	}
	if n := trees.len(); n != parseCacheSize {
		t.Errorf("the cache holds %d trees, want %d", n, parseCacheSize)
	}
	if _, ok := trees.get("echo 0"); !ok {
		t.Error("the tree used most often was forgotten")
	}
	if _, ok := trees.get("echo 1"); ok {
		t.Error("the least recently used tree was kept past the bound")
	}
	long := "echo " + strings.Repeat("x", parseCacheMaxSource)
	if _, err := parse(long); err != nil {
		t.Fatal(err)
	}
	if _, ok := trees.get(long); ok {
		t.Errorf("a tree of a %d-byte text was kept; the bound is %d", len(long), parseCacheMaxSource)
	}
	if _, err := parse("echo ("); err == nil {
		t.Fatal("echo ( parsed")
	}
	if _, ok := trees.get("echo ("); ok {
		t.Error("a text that does not parse was kept")
	}
}
