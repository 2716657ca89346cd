package secret

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestEscapeWindowCompactedIsDecoded compares the window taken from the compacted text with
// the window decoded a byte at a time, around every special byte of random texts of escapes,
// separators and letters, wherever the compacted one is taken.
func TestEscapeWindowCompactedIsDecoded(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	pieces := []string{"a", "b", "Z", "0", "7", " ", "\n", ":", "-", ",", "+", "%41", "%2", "\\u0041",
		"\\u00", "\\x41", "\\\"", "\\n", "&#65;", "&amp;", "&", "\u200b", "\uff21", "\\"}
	taken := 0
	for range 3000 {
		var b []byte
		for range rng.IntN(60) {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
			if rng.IntN(3) == 0 {
				for range rng.IntN(30) {
					b = append(b, "abcdefgh12345 "[rng.IntN(14)])
				}
			}
		}
		text := string(b)
		var c classification
		c.classify(text)
		for i := range len(text) {
			if byteClass[text[i]]&clsSpecial == 0 {
				continue
			}
			if _, _, size := decodeEscape(text, i); size == 0 {
				continue
			}
			for before, after := 12, 20; before < 200; before, after = 2*before, 2*after {
				got, gw, gq, gfrom, gto, ok := escapeWindowCompacted(nil, &c, text, i, before, after)
				if !ok {
					continue
				}
				taken++
				want, w, q, from, to := escapeWindow(nil, text, i, false, before, after)
				if !bytes.Equal(got, want) || gw != w || gq != q || gfrom != from || gto != to {
					t.Fatalf("%q at %d, window %d %d: compacted %q %d %d %d %d, decoded %q %d %d %d %d",
						text, i, before, after, got, gw, gq, gfrom, gto, want, w, q, from, to)
				}
			}
		}
	}
	if taken < 1000 {
		t.Fatalf("the compacted window was taken %d times; the test is too weak", taken)
	}
}
