package secret

import (
	"bytes"
	"encoding/base64"
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

// TestFirstQuantumTests checks base32Texts and base64First, which judge a run's first
// quantum without a branch, against decoding it with encoding/base32 and encoding/base64:
// random runs of mixed alphabets, and text bytes of a matcher with values beyond ASCII.
func TestFirstQuantumTests(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 12))
	m := buildMatcher(map[int32]string{1: "k\x01ey-\xc3\xa9t\xe9\x80abcdefghijklmnop"})
	pools := []string{
		"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "abcdefghijklmnopqrstuvwxyz234567",
		"0123456789ABCDEFGHIJKLMNOPQRSTUV", "0123456789abcdefghijklmnopqrstuv",
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
		"234567", "KMNQRSTUVWXYZ", "0123456789abcdef", "+/=-_. \x00\xff",
	}
	var seen [5]int // runs that decode, by alphabet; then base64 of base64
	for _, textByte := range []*[256]uint8{&printableBytes, &m.textByte} {
		for range 200000 {
			run := make([]byte, 8)
			home := pools[rng.IntN(5)]
			for i := range run {
				pool := pools[rng.IntN(len(pools))]
				if rng.IntN(4) != 0 {
					pool = home // mostly one alphabet, so that some decode
				}
				run[i] = pool[rng.IntN(len(pool))]
			}
			var want uint8
			for a, enc := range base32Alphabets {
				dec := make([]byte, 5)
				if n, err := enc.Decode(dec, run); err == nil && n == 5 {
					ok := uint8(1)
					for _, b := range dec {
						ok &= textByte[b]
					}
					want |= ok << a
				}
			}
			for a := range 4 {
				seen[a] += int(want >> a & 1)
			}
			if got := base32Texts(string(run), textByte); got != want {
				t.Fatalf("base32Texts(%q) = %04b, want %04b", run, got, want)
			}
			var want64 uint8
			dec := make([]byte, 3)
			if n, err := base64.StdEncoding.Decode(dec, run[:4]); err == nil && n == 3 {
				want64 = base64Byte[dec[0]] & base64Byte[dec[1]] & base64Byte[dec[2]]
			}
			seen[4] += int(want64)
			if got := base64First(string(run)); got != want64 {
				t.Fatalf("base64First(%q) = %d, want %d", run[:4], got, want64)
			}
		}
	}
	for i, n := range seen {
		if n < 100 {
			t.Errorf("case %d passed %d times: the inputs do not exercise it", i, n)
		}
	}
	t.Logf("passes: %v", seen)
}
