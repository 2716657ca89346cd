package secret

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"slices"
	"strings"
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

// TestDecodeRunsChoice checks which runs the scan keeps to decode (b64Run), and how, against a
// reference that judges every base64 run on its own: a run inside a run of hex digits is
// left, one whose first three quanta are base64 of base64 characters is decoded as base64,
// and one whose first quantum encoding/base32 decodes to text bytes in an alphabet is
// decoded as base32 in it. Random texts of digests, words, paths, base32 and base64.
func TestDecodeRunsChoice(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	m := buildMatcher(map[int32]string{1: "k3y-\xc3\xa9-0123456789abcdef"})
	pieces := []func() string{
		func() string { return randString(rng, "0123456789abcdef", 8+rng.IntN(40)) },
		func() string { return randString(rng, "abcdefghijklmnopqrstuvwxyz/", 4+rng.IntN(30)) },
		func() string { return randString(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 8+rng.IntN(40)) },
		func() string { return randString(rng, "0123456789abcdefghijklmnopqrstuv", 8+rng.IntN(40)) },
		func() string {
			inner := base64.StdEncoding.EncodeToString([]byte(randString(rng, "abcdefgh .:", 12+rng.IntN(30))))
			return base64.RawStdEncoding.EncodeToString([]byte(inner))
		},
		func() string {
			return base32Alphabets[rng.IntN(4)].EncodeToString([]byte(randString(rng, "abc xyz!", 8+rng.IntN(20))))
		},
		func() string { return [...]string{" ", "\n", ": ", "-", ".", "\"", "="}[rng.IntN(7)] },
	}
	decodes := 0
	for round := range 3000 {
		var b strings.Builder
		for b.Len() < rng.IntN(600) {
			b.WriteString(pieces[rng.IntN(len(pieces))]())
			b.WriteString(pieces[len(pieces)-1]())
		}
		text := b.String()
		if round%3 == 0 && len(text) >= 64 {
			text = text[:len(text)/64*64] // runs to the end of the last block
		}
		sc := &scanner{m: m}
		sc.cls.classify(text)
		hexRuns, b64Runs := sc.cls.findRunsRef(nil, nil)
		var want []decodeRun
		for _, r := range b64Runs {
			if slices.ContainsFunc(hexRuns, func(h span) bool { return h.start <= r.start && r.end <= h.end }) {
				continue
			}
			run := text[r.start:r.end]
			var how uint8
			if len(run) >= minDoubleRun && base64Inner(run) {
				how |= decodeBase64
			}
			for a, enc := range base32Alphabets {
				dec := make([]byte, 5)
				if n, err := enc.Decode(dec, []byte(run[:8])); err == nil && n == 5 {
					ok := true
					for _, c := range dec {
						ok = ok && m.textByte[c] == 1
					}
					if ok {
						how |= decodeBase32 << a
					}
				}
			}
			if how != 0 {
				want = append(want, decodeRun{r, how})
			}
		}
		sc.runs(&sc.cls)
		if !slices.Equal(sc.decodedRuns, want) {
			t.Fatalf("%q:\nthe scan kept %v\nwant %v", text, sc.decodedRuns, want)
		}
		decodes += len(want)
	}
	if decodes < 1000 {
		t.Fatalf("only %d runs to decode: the texts do not exercise decodeRuns", decodes)
	}
}

// randString returns n characters drawn from alphabet.
func randString(rng *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}
