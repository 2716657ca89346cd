package secret

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFirstStageVectorIsGo compares firstStages (vector probes where the machine has them)
// with the Go loop on random texts of lengths around the vector step, and long enough for more
// passes than the room the vector loop is given at once, over filters from empty to nearly
// full. Each text is followed by the padding classify leaves and nothing more.
func TestFirstStageVectorIsGo(t *testing.T) {
	if !vectorProbe {
		t.Skip("no vector probes on this machine")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	buf := make([]byte, 5000)
	for round := range 1000 {
		words := 1 << (6 + rng.IntN(8))
		first := make([]uint64, words)
		density := rng.IntN(64) // bits of 64 set in a word, on average
		for i := range first {
			for range density {
				first[i] |= 1 << rng.IntN(64)
			}
		}
		n := rng.IntN(300)
		switch round % 4 {
		case 0:
			n = 64*(1+rng.IntN(4)) + rng.IntN(3) - 1
		case 1:
			n = rng.IntN(len(buf) - padding)
		}
		c := buf[len(buf)-n-padding:]
		for i := range n {
			if round%2 == 0 {
				c[i] = byte(rng.UintN(256))
			} else {
				c[i] = "abcdef0123456789xyzABC+/="[rng.IntN(25)]
			}
		}
		clear(c[n:])
		var want []int32
		for p := 0; ; p += 4 {
			if p = firstStageGo(c, n, first, p); p < 0 {
				break
			}
			want = append(want, int32(p))
		}
		if got := firstStages(c, n, first, nil); !slices.Equal(got, want) {
			t.Fatalf("round %d, n %d: vector %v\nGo %v", round, n, got, want)
		}
	}
}

// TestHexMasks compares the hex masks of compacted texts, vector and Go, with the bytes one
// at a time, and the windows plausibleWindows lets through with hexPlausible's: random hex
// text (biased to the digits values' bytes start with) and other bytes, every range of high
// nibbles.
func TestHexMasks(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 5000 {
		lo := byte('0' + rng.IntN(10))
		hi := lo + byte(rng.IntN(int('9'-lo)+1))
		if round%7 == 0 {
			hi = 'f'
		}
		alphabet := "0123456789abcdefABCDEFxXgG/\xff\x80\xb0\xd8\xf8"
		if round%2 == 0 {
			alphabet = "00234567234567abc"
		}
		var c classification
		c.n = rng.IntN(300)
		c.compacted = make([]byte, c.n+padding)
		for i := range c.n {
			c.compacted[i] = alphabet[rng.IntN(len(alphabet))]
		}
		masks := c.hexMasks(lo, hi)
		nb := (c.n + 63) / 64
		if len(masks) != 2*nb+2 || masks[2*nb] != 0 || masks[2*nb+1] != 0 {
			t.Fatalf("%d bytes: %d masks, the last %x %x", c.n, len(masks), masks[len(masks)-2], masks[len(masks)-1])
		}
		for j := range nb {
			block := c.compacted[64*j : 64*j+64]
			h, ok := hexMasksGo(block, lo, hi)
			if hi > '9' {
				ok = ^uint64(0)
			}
			if h != masks[2*j] || ok != masks[2*j+1] {
				t.Fatalf("%q, %c..%c: vector %x %x, Go %x %x", block, lo, hi, masks[2*j], masks[2*j+1], h, ok)
			}
			for i, b := range block {
				f := b | 0x20
				wantH := '0' <= f && f <= '9' || 'a' <= f && f <= 'f' || f == 'x'
				wantOK := hi > '9' || lo <= f && f <= hi || f == '0'
				if h>>i&1 == 1 != wantH || ok>>i&1 == 1 != wantOK {
					t.Fatalf("%q, %c..%c: byte %d: hex %v ok %v, want %v %v", block, lo, hi, i, h>>i&1, ok>>i&1, wantH, wantOK)
				}
			}
			// (probeHex asks only of windows of hex digits)
			w := plausibleWindows(ok)
			for i := range 8 {
				if h>>(8*i)&0xff != 0xff {
					continue
				}
				k := binary.LittleEndian.Uint64(block[8*i:]) | foldMask
				if got, want := w>>(8*i+7)&1 == 1, hexPlausible(k, lo, hi); got != want {
					t.Fatalf("%q window %d, high nibbles %c..%c: masks %v, hexPlausible %v", block, i, lo, hi, got, want)
				}
			}
		}
	}
}
