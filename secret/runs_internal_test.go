package secret

import (
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
)

// TestProbeHexIsRef checks that probeHex, which probes the windows at every eighth position of
// the compacted text that lie in long runs of hex digits, finds what probing each run found
// into a list at every eighth position from its start finds (probeHexRunsRef), and so does
// probeHexRuns, probeHex without vector instructions: random texts of
// pieces of values in every hex style, upper and lower case, with separators between bytes,
// among digests, numbers and words, for values of ASCII (high nibbles 2..7) and of other bytes
// (every window plausible).
func TestProbeHexIsRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, ascii := range []bool{true, false} {
		values := map[int32]string{}
		for i := range int32(40) {
			v := "tok_" + randString(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 8+rng.IntN(24))
			if !ascii && i%2 == 0 {
				v = "k\xc3\xa9y-" + randString(rng, "abcdef\xe2\x82\xac0123", 8+rng.IntN(16))
			}
			values[i] = v
		}
		m := buildMatcher(values)
		if ascii != (m.hexHigh <= '9') {
			t.Fatalf("values of ASCII %v, high nibbles up to %c", ascii, m.hexHigh)
		}
		piece := func() string {
			v := values[int32(rng.IntN(len(values)))]
			a := rng.IntN(len(v) - 4)
			part := v[a : a+4+rng.IntN(len(v)-a-3)]
			var h string
			switch rng.IntN(8) {
			case 0:
				for _, b := range []byte(part) {
					h += "0x" + hex.EncodeToString([]byte{b})
				}
			case 1:
				for _, u := range utf16.Encode([]rune(part)) {
					h += hex.EncodeToString([]byte{byte(u >> 8), byte(u)})
				}
			case 2:
				for _, u := range utf16.Encode([]rune(part)) {
					h += hex.EncodeToString([]byte{byte(u), byte(u >> 8)})
				}
			case 3:
				return randString(rng, "0123456789abcdef", 4+rng.IntN(60))
			case 4:
				return randString(rng, "0123456789", 4+rng.IntN(20))
			case 5:
				return randString(rng, "abcdefghijklmnopqrstuvwxyz", 2+rng.IntN(10))
			default:
				h = hex.EncodeToString([]byte(part))
			}
			if rng.IntN(3) == 0 {
				h = strings.ToUpper(h)
			}
			if rng.IntN(4) == 0 { // a separator between bytes
				sep := [...]string{":", " ", "-", "\n", ", "}[rng.IntN(5)]
				var b strings.Builder
				for i := 0; i < len(h); i += 2 {
					if i > 0 {
						b.WriteString(sep)
					}
					b.WriteString(h[i:min(i+2, len(h))])
				}
				h = b.String()
			}
			return h
		}
		now := &scanner{m: m}
		ref := &scanner{m: m}
		runs := &scanner{m: m}
		found := 0
		for range 1500 {
			var b strings.Builder
			for n := rng.IntN(2000); b.Len() < n; {
				b.WriteString(piece())
				b.WriteString([...]string{" ", "\n", "", ":", "/", ".", "g"}[rng.IntN(7)])
			}
			text := b.String()
			for _, sc := range []*scanner{now, ref, runs} {
				sc.matches, sc.work = sc.matches[:0], 0
				clear(sc.last)
				clear(sc.encoded)
				sc.cls.classify(text)
			}
			now.probeHex(m.ix8, &now.cls)
			hexRuns, _ := ref.cls.findRunsRef(nil, nil)
			ref.probeHexRunsRef(m.ix8, &ref.cls, hexRuns)
			runs.probeHexRuns(m.ix8, &runs.cls)
			got, want := sortedMatches(now.matches), sortedMatches(ref.matches)
			if !slices.Equal(got, want) {
				t.Fatalf("%q:\nprobeHex found %v\nthe reference %v", text, got, want)
			}
			if got := sortedMatches(runs.matches); !slices.Equal(got, want) {
				t.Fatalf("%q:\nprobeHexRuns found %v\nthe reference %v", text, got, want)
			}
			found += len(want)
		}
		if found < 1000 {
			t.Fatalf("values of ASCII %v: only %d matches: the texts do not exercise the hex probes", ascii, found)
		}
	}
}

// sortedMatches returns ms sorted, without repeats.
func sortedMatches(ms []match) []match {
	out := slices.Clone(ms)
	slices.SortFunc(out, func(a, b match) int {
		if a.start != b.start {
			return a.start - b.start
		}
		if a.end != b.end {
			return a.end - b.end
		}
		return int(a.id - b.id)
	})
	return slices.Compact(out)
}
