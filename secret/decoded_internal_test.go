package secret

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestBase32Decoder checks that base32Decoder decodes as encoding/base32 does, without
// padding: random runs of each alphabet of every length up to a few quanta, some with a byte
// outside the alphabet.
func TestBase32Decoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	alphabets := []string{"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "abcdefghijklmnopqrstuvwxyz234567",
		"0123456789ABCDEFGHIJKLMNOPQRSTUV", "0123456789abcdefghijklmnopqrstuv"}
	for a, alphabet := range alphabets {
		for n := range 40 {
			for range 50 {
				src := make([]byte, n)
				for i := range src {
					src[i] = alphabet[rng.IntN(len(alphabet))]
				}
				if n > 0 && rng.IntN(4) == 0 {
					src[rng.IntN(n)] = "+/=19wxyzWXYZ"[rng.IntN(13)]
				}
				want := make([]byte, base32Alphabets[a].DecodedLen(n))
				wn, werr := base32Alphabets[a].Decode(want, src)
				got := make([]byte, base32Decoder(a).DecodedLen(n))
				gn, gerr := base32Decoder(a).Decode(got, src)
				if (werr == nil) != (gerr == nil) || werr == nil && !bytes.Equal(want[:wn], got[:gn]) {
					t.Fatalf("alphabet %d, %q: got %x, %v; want %x, %v", a, src, got[:gn], gerr, want[:wn], werr)
				}
			}
		}
	}
}
