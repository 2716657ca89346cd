package secret

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestClassifyVectorIsGo compares the vector pass with the Go pass on random texts of every
// length around block boundaries, biased to the bytes the classes are made of.
func TestClassifyVectorIsGo(t *testing.T) {
	if !vectorClassify {
		t.Skip("no vector pass on this machine")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := " \t\n\r:,-0123456789abcdefxABCDEFXgG%&\\\xe2\xef\x80\x00\xff\x20\x21\x2b\x2e\x2f\x39\x3a\x3b\x40\x47\x58\x59\x5b\x5c\x60\x66\x67\x77\x78\x79"
	for round := range 3000 {
		n := rng.IntN(300)
		b := make([]byte, n)
		for i := range b {
			if round%3 == 0 {
				b[i] = byte(rng.UintN(256))
			} else {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		s := string(b)
		var vec classification
		vec.classify(s)
		full := len(s) / 64
		want := make([]byte, len(s)+padding)
		masks := make([]uint64, (full+1)*masksPerBlock)
		n2 := classifyGo(s, want, 0, masks)
		if vec.n != n2 || string(vec.compacted[:vec.n]) != string(want[:n2]) {
			t.Fatalf("%q: compacted %q, Go's %q", s, vec.compacted[:vec.n], want[:n2])
		}
		for i := range vec.masks {
			if vec.masks[i] != masks[i] {
				t.Fatalf("%q: mask %d of block %d is %064b, Go's %064b", s, i%masksPerBlock, i/masksPerBlock, vec.masks[i], masks[i])
			}
		}
	}
}

func TestClassifyRankAndRaw(t *testing.T) {
	s := strings.Repeat("ab  c:d,e-f\n", 40) + "  " + strings.Repeat(" ", 130) + "xyz"
	var c classification
	c.classify(s)
	if got, want := string(c.compacted[:c.n]), compact(s); got != want {
		t.Fatalf("compacted %q, want %q", got, want)
	}
	p := 0
	for i := 0; i < len(s); i++ {
		if got := c.rank(i); got != p {
			t.Fatalf("rank(%d) = %d, want %d", i, got, p)
		}
		if !isSeparator(s[i]) {
			if got := c.raw(p); got != i {
				t.Fatalf("raw(%d) = %d, want %d", p, got, i)
			}
			p++
		}
	}
	if c.rank(len(s)) != c.n {
		t.Fatalf("rank(len) = %d, want %d", c.rank(len(s)), c.n)
	}
}

// TestFindRuns compares the runs that the reference finds (findRunsRef, see TestDecodeRunsChoice)
// with a byte-by-byte search, on texts made of runs of hex digits, base64 characters and the
// rest, across block boundaries.
func TestFindRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	naive := func(s string, in func(byte) bool, minLen int) []span {
		var out []span
		for i := 0; i < len(s); {
			j := i
			for j < len(s) && in(s[j]) {
				j++
			}
			if j-i >= minLen {
				out = append(out, span{i, j})
			}
			i = max(j, i+1)
		}
		return out
	}
	for round := range 2000 {
		var b strings.Builder
		for b.Len() < rng.IntN(400) {
			n := rng.IntN(30)
			switch rng.IntN(3) {
			case 0:
				for range n {
					b.WriteByte("0123456789abcdef:- "[rng.IntN(19)])
				}
			case 1:
				for range n {
					b.WriteByte("ghijklmnopqrstuvwxyzGHZ+/"[rng.IntN(25)])
				}
			default:
				b.WriteString(".!?\"{}"[:1+rng.IntN(5)])
			}
		}
		s := b.String()
		var c classification
		c.classify(s)
		hex, b64 := c.findRunsRef(nil, nil)
		wantHex := naive(s, func(c byte) bool { return byteClass[c]&clsHexRun != 0 }, minHexRun)
		wantB64 := naive(s, func(c byte) bool { return byteClass[c]&clsBase64 != 0 }, minBase32Run)
		if !slices.Equal(hex, wantHex) || !slices.Equal(b64, wantB64) {
			t.Fatalf("round %d, %q:\nhex %v, want %v\nbase64 %v, want %v", round, s, hex, wantHex, b64, wantB64)
		}
	}
}

// TestClassifyGoIsBytewise compares the Go pass, eight bytes a step, with the classes of the
// bytes one at a time, on random texts of every length around the steps and blocks.
func TestClassifyGoIsBytewise(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for round := range 2000 {
		b := make([]byte, rng.IntN(200))
		for i := range b {
			b[i] = byte(rng.UintN(256))
			if round%2 == 0 {
				b[i] = " \t\n:,-0123456789abcdefxXgG%&\\\xe2\xef+/="[rng.IntN(34)]
			}
		}
		s := string(b)
		blocks := (len(s) + 63) / 64
		got := make([]byte, len(s)+padding)
		masks := make([]uint64, blocks*masksPerBlock)
		n := classifyGo(s, got, 0, masks)
		var want []byte
		for i := 0; i < len(s); i++ {
			cls := byteClass[s[i]]
			if cls&clsKeep != 0 {
				want = append(want, s[i])
			}
			for k := range masksPerBlock {
				if bit := masks[i/64*masksPerBlock+k] >> (i % 64) & 1; bit != uint64(cls>>k&1) {
					t.Fatalf("%q: byte %d, mask %d is %d, its class says %d", s, i, k, bit, cls>>k&1)
				}
			}
		}
		for k := range masks {
			if blk := k / masksPerBlock; blk == blocks-1 && len(s)%64 != 0 && masks[k]>>(len(s)%64) != 0 {
				t.Fatalf("%q: mask %d has bits past the text", s, k%masksPerBlock)
			}
		}
		if string(got[:n]) != string(want) {
			t.Fatalf("%q: compacted %q, want %q", s, got[:n], want)
		}
	}
}
