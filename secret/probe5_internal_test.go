package secret

import (
	"encoding/base64"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestProbe5Batches checks that probe5, which reads the second filter for a batch of
// positions before looking closer at any, finds what probing position after position finds,
// in the same order: random texts of pieces of values, plain, hex and base64, and of words
// and digests, with more positions passing the first filter than a batch holds.
func TestProbe5Batches(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	values := map[int32]string{}
	for i := range int32(60) {
		if i%3 == 0 {
			values[i] = randString(rng, "0123456789abcdef", 16+rng.IntN(24))
		} else {
			values[i] = "tok_" + randString(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 12+rng.IntN(24))
		}
	}
	m := buildMatcher(values)
	piece := func() string {
		v := values[int32(rng.IntN(len(values)))]
		a := rng.IntN(len(v) - 8)
		part := v[a : a+8+rng.IntN(len(v)-a-7)]
		switch rng.IntN(5) {
		case 0:
			return hex.EncodeToString([]byte(part))
		case 1:
			return base64.StdEncoding.EncodeToString([]byte(part))
		case 2:
			return randString(rng, "0123456789abcdef", 8+rng.IntN(40))
		case 3:
			return randString(rng, "abcdefghijklmnopqrstuvwxyz", 2+rng.IntN(10))
		}
		return part
	}
	batched := &scanner{m: m}
	direct := &scanner{m: m}
	most, found := 0, 0
	for range 300 {
		var b strings.Builder
		for n := rng.IntN(3000); b.Len() < n; {
			b.WriteString(piece())
			b.WriteString([...]string{" ", "\n", "", ":", "/"}[rng.IntN(5)])
		}
		text := b.String()
		for _, sc := range []*scanner{batched, direct} {
			sc.matches, sc.work = sc.matches[:0], 0
			clear(sc.last)
			clear(sc.encoded)
			sc.cls.classify(text)
		}
		batched.probe5(m.ix5, &batched.cls)
		c := &direct.cls
		for p := 0; ; p += 4 {
			if p = firstStageGo(c.compacted, c.n, m.ix5.first, p); p < 0 {
				break
			}
			here, routed := m.ix5.secondRoutes((binaryGram(c.compacted, p)) * hashMul)
			direct.probeAt(c, p, here, routed)
		}
		if !slices.Equal(batched.matches, direct.matches) || batched.work != direct.work {
			t.Fatalf("%q: batched %v (work %d), direct %v (work %d)", text, batched.matches, batched.work, direct.matches, direct.work)
		}
		most = max(most, len(batched.passes))
		found += len(batched.matches)
	}
	if found == 0 {
		t.Fatal("no match in any text: nothing was compared")
	}
	if most <= 64 {
		t.Fatalf("at most %d positions passed the first filter in a text: no text took two batches", most)
	}
}

// binaryGram is the 5-byte gram at p of a compacted text.
func binaryGram(c []byte, p int) uint64 {
	var k uint64
	for i := range 5 {
		k |= uint64(c[p+i]) << (8 * i)
	}
	return k
}
