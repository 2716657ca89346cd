package secret

import (
	"encoding/base64"
	"encoding/hex"
	"math"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// A value of minRunLen bytes or more (without separators) is indexed by grams: each of its
// forms below becomes a needle, and a run of a needle in a text is redacted when it stands for
// enough of the value (see accept). A shorter value is only redacted whole (see forms).
const minRunLen = 8

// Lengths up to which a value's encodings are indexed. Each form costs memory in proportion
// to the value's length (about 22 grams per byte for all of them), so a long value (a
// certificate, a whole file) gets fewer: base64 up to MaxEncodedLen, hex up to
// maxHexIndexLen. Its plain and reversed forms are always indexed.
const maxHexIndexLen = 1 << 10

// formKind is how a needle encodes its value.
type formKind uint8

const (
	formPlain    formKind = iota // the value without separators
	formReversed                 // the same, backwards
	formBase64                   // base64 of the value after pad bytes
	formHex                      // hex of the value's bytes, lower case; see hexStyle
)

// hexValueForm, in a plain or reversed form's alt (and shifted left by one, in a base64
// form's), marks the needle of a value made of hex digits only, indexed in matcher.ixh (or
// matcher.ixhb).
const hexValueForm = 1

// Hex styles, for formHex.
const (
	hexPlain   = iota // 73336372
	hexPrefix         // 0x730x330x63 (the separators between are removed by compaction)
	hexUTF16BE        // 0073003300630072
	hexUTF16LE        // 7300330063007200
)

// A form says how to make one needle from a value.
type form struct {
	kind formKind
	// pad is how many bytes of unknown content come before the value in what was encoded
	// (0-2), which fixes its alignment. The needle holds only the characters whose bits all
	// come from the value; with pad 0 it is the whole encoding, padding included, so that an
	// encoded value is replaced with its padding.
	pad uint8
	// alt: the URL-safe base64 alphabet; for formHex, the hex style.
	alt uint8
}

// formsOf returns the forms indexed for a value of n bytes.
func formsOf(n int) []form {
	out := []form{{kind: formPlain}, {kind: formReversed}}
	if n > MaxEncodedLen {
		return out
	}
	for alt := range uint8(2) {
		for pad := range uint8(3) {
			out = append(out, form{kind: formBase64, pad: pad, alt: alt})
		}
	}
	if n > maxHexIndexLen {
		return out
	}
	for style := range uint8(4) {
		out = append(out, form{kind: formHex, alt: style})
	}
	return out
}

// hexIndexed reports whether the form's needle goes into the hex index (8-byte grams, case
// folded, probed only in runs of hex digits) rather than the main one.
func (f form) hexIndexed() bool { return f.kind == formHex }

// encode returns the form of v, separators kept (compact removes them for the needle).
func (f form) encode(v string) string {
	switch f.kind {
	case formPlain:
		return v
	case formReversed:
		b := []byte(v)
		slices.Reverse(b)
		return string(b)
	case formBase64:
		return partialEncoding(b64(f.alt), 6, v, int(f.pad))
	case formHex:
		return hexForm(v, f.alt)
	}
	return ""
}

// separated reports whether f's encoding of v may hold separators, so that it differs from
// its needle (see matcher.with): a value with separators as it is or reversed, and URL-safe
// base64, whose alphabet holds '-'. Standard base64 and hex hold none.
func (f form) separated(v string) bool {
	switch f.kind {
	case formPlain, formReversed:
		for i := 0; i < len(v); i++ {
			if isSeparator(v[i]) {
				return true
			}
		}
		return false
	case formBase64:
		return f.alt&1 == 1
	}
	return false
}

func b64(alt uint8) *base64.Encoding {
	if alt&1 == 1 {
		return base64.URLEncoding
	}
	return base64.StdEncoding
}

// partialEncoding returns the characters of the encoding of pad unknown bytes followed by v
// whose bits all come from v, unitBits bits a character. With pad 0 that is the whole
// encoding of v, padding included.
func partialEncoding(enc *base64.Encoding, unitBits int, v string, pad int) string {
	if pad == 0 {
		return enc.EncodeToString([]byte(v))
	}
	buf := make([]byte, pad+len(v))
	copy(buf[pad:], v)
	s := enc.EncodeToString(buf)
	first := (8*pad + unitBits - 1) / unitBits
	last := (8 * (pad + len(v))) / unitBits
	if last <= first {
		return ""
	}
	return s[first:last]
}

// hexForm returns v's bytes in hex in a style.
func hexForm(v string, style uint8) string {
	switch style {
	case hexPrefix:
		b := make([]byte, 0, 4*len(v))
		for i := 0; i < len(v); i++ {
			b = append(b, '0', 'x')
			b = hex.AppendEncode(b, []byte{v[i]})
		}
		return string(b)
	case hexUTF16BE, hexUTF16LE:
		if !utf8.ValidString(v) {
			return ""
		}
		units := utf16.Encode([]rune(v))
		b := make([]byte, 0, 4*len(units))
		for _, u := range units {
			hi, lo := byte(u>>8), byte(u)
			if style == hexUTF16LE {
				hi, lo = lo, hi
			}
			b = hex.AppendEncode(b, []byte{hi, lo})
		}
		return string(b)
	}
	return hex.EncodeToString([]byte(v))
}

// valueBits returns the bits of v, [b0, b1) counting from its first byte's top bit, that the
// characters [u0, u1) of the form's encoding (separators kept, as encode returns it) stand for.
func (f form) valueBits(v string, u0, u1 int) (b0, b1 int) {
	clip := func(lo, hi int) (int, int) {
		return max(lo, 0), min(hi, 8*len(v))
	}
	switch f.kind {
	case formPlain:
		return 8 * u0, 8 * u1
	case formReversed:
		return 8 * (len(v) - u1), 8 * (len(v) - u0)
	case formBase64:
		first := (8*int(f.pad) + 5) / 6
		return clip(6*(first+u0)-8*int(f.pad), 6*(first+u1)-8*int(f.pad))
	case formHex:
		switch f.alt {
		case hexPrefix:
			return 8 * ((u0 + 3) / 4), 8 * (u1 / 4)
		case hexUTF16BE, hexUTF16LE:
			// four characters a UTF-16 unit; a unit stands for its rune's UTF-8 bytes
			units := utf16.Encode([]rune(v))
			unitByte := make([]int, len(units)+1)
			at := 0
			for i := 0; i < len(units); i++ {
				unitByte[i] = at
				r := rune(units[i])
				if utf16.IsSurrogate(r) && i+1 < len(units) {
					r = utf16.DecodeRune(r, rune(units[i+1]))
					unitByte[i+1] = at
					i++
				}
				at += utf8.RuneLen(r)
			}
			unitByte[len(units)] = at
			k0, k1 := (u0+3)/4, u1/4
			if k1 <= k0 {
				return 0, 0
			}
			return 8 * unitByte[k0], 8 * unitByte[k1]
		}
		return 4 * u0, 4 * u1
	}
	return 0, 0
}

// minChars is the fewest characters of a needle of the form that can stand for minRunBits of
// the value, or minRunLen bytes where accept asks for them: a shorter run is never accepted
// unless it is the whole needle.
func (f form) minChars() int {
	switch f.kind {
	case formPlain, formReversed:
		if f.alt == hexValueForm {
			return minHexValueRun
		}
	case formBase64:
		if f.alt&(hexValueForm<<1) != 0 {
			return minHexValueRun
		}
		return minRunBits / 6
	case formHex:
		if f.alt == hexPrefix || f.alt == hexUTF16BE || f.alt == hexUTF16LE {
			return 4 * minRunLen
		}
		return 2 * minRunLen
	}
	return minRunLen
}

// Acceptance of a run of a needle that is not the whole needle (see accept).
const (
	// minRunBits: a run stands for at least 7 whole bytes of the value (plain and hex runs
	// for 8, see accept): base64 of 8 bytes, cut from a longer encoding, holds 60 of their
	// 64 bits in characters of their own.
	minRunBits = 56
	// minRunEntropy: the value bytes the run stands for carry at least 40 bits by the
	// alphabet they use (runEntropy), so that a run of digits, of hex, or of one letter case
	// must be longer than a run of mixed characters to count.
	minRunEntropy = 40
	// minRunDistinct: and they hold at least 5 different characters.
	minRunDistinct = 5
)

// runEntropy estimates the bits that nbits bits of value bytes carry, by the alphabet the
// bytes run uses (separators do not count): decimal digits (10 symbols), hex digits of one case (16), letters of one
// case (26), with digits (36), both cases (52), both with digits (62), plus one symbol for
// each other distinct byte. It also returns how many distinct bytes there are.
func runEntropy(run string, nbits int) (bitsOf float64, distinct int) {
	var seen [256]bool
	var digit, lowerHex, lowerOther, upperHex, upperOther bool
	others := 0
	for i := 0; i < len(run); i++ {
		c := run[i]
		if seen[c] || isSeparator(c) {
			continue
		}
		seen[c] = true
		distinct++
		switch {
		case '0' <= c && c <= '9':
			digit = true
		case 'a' <= c && c <= 'f':
			lowerHex = true
		case 'g' <= c && c <= 'z':
			lowerOther = true
		case 'A' <= c && c <= 'F':
			upperHex = true
		case 'G' <= c && c <= 'Z':
			upperOther = true
		default:
			others++
		}
	}
	lower, upper := lowerHex || lowerOther, upperHex || upperOther
	size := others
	if !lowerOther && !upperOther && lower != upper {
		size += 16 // hex digits of one case, with or without decimal digits
	} else {
		if digit {
			size += 10
		}
		if lower {
			size += 26
		}
		if upper {
			size += 26
		}
	}
	if size < 2 {
		return 0, distinct
	}
	return float64(nbits) / 8 * math.Log2(float64(size)), distinct
}
