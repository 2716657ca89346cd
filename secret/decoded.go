package secret

import (
	"encoding/base32"
	"encoding/base64"
	"slices"
	"unsafe"
)

// Base32 and base64 of base64 are found by decoding: a run of the text's base64 alphabet is
// decoded, as an encoder wrote it (from the run's first character), and the decoded bytes are
// scanned as a view of the text, where the value (base32) or its base64 (base64 of base64)
// is found at any offset. Indexing their forms instead would quadruple the index, and a probe
// loop over an index larger than the processor's caches is several times slower.
//
// A run is decoded only when its first quantum decodes to what such an encoding holds: base64
// characters for base64 of base64, text for base32. A base64 blob of random bytes or of JSON,
// a run of hex digits (a digest, an id) and a long identifier are rejected at once.
const (
	minDoubleRun = 16 // base64 of base64 of 8 bytes: 16 characters
	minBase32Run = 13 // base32 of 8 bytes: 13 characters before its padding
)

// decodeRuns scans the decoded views of the base64 and base32 runs of the text just scanned
// that runs kept to decode (sc.decodedRuns).
//
// A run is judged as it is met (b64Run), and only the few to decode are kept: a git log has
// tens of thousands of runs a megabyte (paths, names, digests), and nearly all of them are
// rejected by the cheap tests of their first quanta. Scanning a view finds no runs to decode.
func (sc *scanner) decodeRuns(text string) {
	for _, d := range sc.decodedRuns {
		if d.how&decodeBase64 != 0 {
			sc.decodedView(text, d.span, base64.RawStdEncoding, 4, 3)
		}
		for a := range base32Alphabets {
			if d.how&(decodeBase32<<a) != 0 {
				sc.decodedView(text, d.span, base32Decoder(a), 8, 5)
			}
		}
	}
}

// A decodeRun is a run of the text to decode, and how: decodeBase64 for base64 of base64,
// decodeBase32<<a for base32 of base32Alphabets[a].
type decodeRun struct {
	span
	how uint8
}

// The bits of decodeRun.how.
const (
	decodeBase64 = 1 << iota
	decodeBase32 // and the three bits above it, one per base32 alphabet
)

// base64Inner reports whether a base64 run's first three quanta decode to base64 characters,
// as base64 of base64 does: base64 of random bytes passes one time in a hundred thousand,
// base64 of JSON or prose rarely.
func base64Inner(run string) bool {
	// The first quantum without a branch: random bytes, text and identifiers nearly always
	// fail it, at a place a loop's branches could not foresee.
	v := &base64Value
	_ = run[3]
	d0, d1, d2, d3 := v[run[0]], v[run[1]], v[run[2]], v[run[3]]
	q := uint32(d0)<<18 | uint32(d1)<<12 | uint32(d2)<<6 | uint32(d3)
	b := &base64Byte
	if b[byte(q>>16)]&b[byte(q>>8)]&b[byte(q)] == 0 || (d0|d1|d2|d3) < 0 {
		return false
	}
	for q := 0; q < 12; q += 4 {
		var v uint32
		for i := q; i < q+4; i++ {
			d := base64Value[run[i]]
			if d < 0 {
				return false
			}
			v = v<<6 | uint32(d)
		}
		for _, b := range [3]byte{byte(v >> 16), byte(v >> 8), byte(v)} {
			if byteClass[b]&clsBase64 == 0 && b != '-' && b != '_' {
				return false
			}
		}
	}
	return true
}

// base64Byte is 1 for the bytes of the base64 alphabets, standard and URL-safe, else 0.
var base64Byte = func() (t [256]uint8) {
	for b := range t {
		if byteClass[b]&clsBase64 != 0 || b == '-' || b == '_' {
			t[b] = 1
		}
	}
	return t
}()

// base64Value is each byte's value in the standard base64 alphabet, or -1.
var base64Value = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for i, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") {
		t[c] = int8(i)
	}
	return t
}()

// The base32 alphabets, upper and lower case, and which bytes each holds.
var (
	base32Alphabets = [4]*base32.Encoding{
		base32.StdEncoding.WithPadding(base32.NoPadding),
		base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding),
		base32.HexEncoding.WithPadding(base32.NoPadding),
		base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding),
	}
	base32Values = func() (t [4][256]int8) {
		for a, alphabet := range []string{"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "abcdefghijklmnopqrstuvwxyz234567",
			"0123456789ABCDEFGHIJKLMNOPQRSTUV", "0123456789abcdefghijklmnopqrstuv"} {
			for i := range t[a] {
				t[a][i] = -1
			}
			for i, c := range []byte(alphabet) {
				t[a][c] = int8(i)
			}
		}
		return t
	}()
)

// A base32Decoder decodes unpadded base32 of base32Alphabets[a] as its Decode does, without
// the copy that Decode makes of its source to drop line ends (a run has none).
type base32Decoder int

// Decode decodes src into dst, which has room for DecodedLen(len(src)) bytes: whole quanta,
// and a last partial one of 2, 4, 5 or 7 characters; a partial quantum of 1, 3 or 6 decodes
// to nothing, as for the standard decoder without padding. A byte outside the alphabet is an
// error.
func (a base32Decoder) Decode(dst, src []byte) (int, error) {
	values := &base32Values[a]
	n := 0
	for q := 0; q < len(src); q += 8 {
		var v uint64
		j := 0
		for ; j < 8 && q+j < len(src); j++ {
			d := values[src[q+j]]
			if d < 0 {
				return n, base32.CorruptInputError(q + j)
			}
			v = v<<5 | uint64(d)
		}
		v <<= 5 * uint(8-j)
		var bytes int
		switch j {
		case 8:
			bytes = 5
		case 7:
			bytes = 4
		case 5:
			bytes = 3
		case 4:
			bytes = 2
		case 2:
			bytes = 1
		}
		for b := range bytes {
			dst[n] = byte(v >> (32 - 8*b))
			n++
		}
	}
	return n, nil
}

// DecodedLen is the most bytes n characters decode to.
func (a base32Decoder) DecodedLen(n int) int { return n * 5 / 8 }

// base32Fits returns the base32 alphabets (bit a for base32Alphabets[a]) that hold the run's
// first quantum: one table load a character.
func base32Fits(run string) uint8 {
	// eight loads and no branch: a loop that stops at the first misfit stops at a place
	// the processor cannot foresee
	t := &base32Alphabet
	_ = run[7]
	return t[run[0]] & t[run[1]] & t[run[2]] & t[run[3]] & t[run[4]] & t[run[5]] & t[run[6]] & t[run[7]]
}

var base32Alphabet = func() (t [256]uint8) {
	for a := range base32Values {
		for c, d := range base32Values[a] {
			if d >= 0 {
				t[c] |= 1 << a
			}
		}
	}
	return t
}()

// base32Text reports whether a run's first quantum is base32 in alphabet a and decodes to
// text: printable ASCII, tabs and line ends, or bytes the values hold (textByte, see
// matcher). It has no branch but its loop's: most runs that fit an alphabet do not decode to
// text, at a byte the processor cannot foresee.
func base32Text(a int, run string, textByte *[256]uint8) bool {
	t := &base32Values[a]
	_ = run[7]
	var v uint64
	var bad int8
	for i := range 8 {
		d := t[run[i]]
		bad |= d
		v = v<<5 | uint64(d&31)
	}
	ok := textByte[byte(v>>32)] & textByte[byte(v>>24)] & textByte[byte(v>>16)] & textByte[byte(v>>8)] & textByte[byte(v)]
	return ok != 0 && bad >= 0
}

// printableBytes is 1 for printable ASCII, tabs and line ends.
var printableBytes = func() (t [256]uint8) {
	for b := 0x20; b <= 0x7e; b++ {
		t[b] = 1
	}
	t['\t'], t['\n'], t['\r'] = 1, 1, 1
	return t
}()

// A decoder decodes base64 or base32 (*base64.Encoding, *base32.Encoding).
type decoder interface {
	Decode(dst, src []byte) (int, error)
	DecodedLen(n int) int
}

// decodedView decodes the run r of text (in quanta of in characters for out bytes) and scans
// it as a view: a decoded byte stands for its quantum's characters, and the last ones for
// the padding after the run too. It decodes into the scanner's buffer: a text without values
// costs no allocation.
func (sc *scanner) decodedView(text string, r span, enc decoder, in, out int) {
	run := text[r.start:r.end]
	// Decode only reads its source: the run's bytes are not copied.
	src := unsafe.Slice(unsafe.StringData(run), len(run))
	sc.view = slices.Grow(sc.view[:0], enc.DecodedLen(len(run)))[:enc.DecodedLen(len(run))]
	n, err := enc.Decode(sc.view, src)
	// a run whose last characters hold no whole byte: decoders refuse them
	for drop := 1; err != nil && drop < in && drop < len(run); drop++ {
		n, err = enc.Decode(sc.view, src[:len(src)-drop])
	}
	if err != nil || n == 0 {
		return
	}
	sc.view = sc.view[:n]
	end := r.end
	for end < len(text) && text[end] == '=' {
		end++
	}
	sc.viewStart, sc.viewEnd = sc.viewStart[:0], sc.viewEnd[:0]
	for i := range n {
		q := r.start + i/out*in
		sc.viewStart = append(sc.viewStart, int32(q))
		sc.viewEnd = append(sc.viewEnd, int32(min(q+in, r.end)))
	}
	last := n - 1
	for i := last; i >= 0 && int(sc.viewEnd[i]) == r.end; i-- {
		sc.viewEnd[i] = int32(end)
	}
	sc.scanView()
}
