package secret

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestFirstStageVectorIsGo compares firstStage (vector probes where the machine has them)
// with the Go loop on random texts of lengths around the vector step, from every start, over
// filters from empty to nearly full. Each text is followed by the padding classify leaves and
// nothing more.
func TestFirstStageVectorIsGo(t *testing.T) {
	if !vectorProbe {
		t.Skip("no vector probes on this machine")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	buf := make([]byte, 400)
	for round := range 400 {
		words := 1 << (6 + rng.IntN(8))
		first := make([]uint64, words)
		density := rng.IntN(64) // bits of 64 set in a word, on average
		for i := range first {
			for range density {
				first[i] |= 1 << rng.IntN(64)
			}
		}
		n := rng.IntN(300)
		if round%4 == 0 {
			n = 64*(1+rng.IntN(4)) + rng.IntN(3) - 1
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
		for from := range min(n+2, 80) {
			from = from / 4 * 4 // firstStage steps by 4 from its start; start anywhere
			if got, want := firstStage(c, n, first, from), firstStageGo(c, n, first, from); got != want {
				t.Fatalf("round %d, n %d, from %d: vector %d, Go %d", round, n, from, got, want)
			}
			if got, want := firstStage(c, n, first, from+1), firstStageGo(c, n, first, from+1); got != want {
				t.Fatalf("round %d, n %d, from %d: vector %d, Go %d", round, n, from+1, got, want)
			}
		}
	}
}

// TestHexWindowsVectorIsGo compares the windows the vector pass lets through with
// hexPlausible's, on random hex text (biased to the digits values' bytes start with) and
// every range of high nibbles.
func TestHexWindowsVectorIsGo(t *testing.T) {
	if !vectorHex {
		t.Skip("no vector hex windows on this machine")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	buf := make([]byte, 64+7)
	for round := range 20000 {
		lo := byte('0' + rng.IntN(10))
		hi := lo + byte(rng.IntN(int('9'-lo)+1))
		alphabet := "0123456789abcdefABCDEFxX"
		if round%2 == 0 {
			alphabet = "00234567234567abc"
		}
		for i := range buf {
			buf[i] = alphabet[rng.IntN(len(alphabet))]
		}
		w := plausibleWindows(hexOkAVX512(&buf[0], uint64(lo), uint64(hi)))
		for j := range 8 {
			k := binary.LittleEndian.Uint64(buf[8*j:]) | foldMask
			if got, want := w>>(8*j+7)&1 == 1, hexPlausible(k, lo, hi); got != want {
				t.Fatalf("%q window %d, high nibbles %c..%c: vector %v, hexPlausible %v", buf, j, lo, hi, got, want)
			}
		}
		if w&^0x8080808080808080 != 0 {
			t.Fatalf("%q: bits %x outside the windows' top bits", buf, w)
		}
	}
}
