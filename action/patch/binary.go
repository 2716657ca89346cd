package patch

import (
	"bytes"
	"compress/zlib"
	"errors"
	"io"
	"strconv"
	"strings"
)

// binaryPatch reads the GIT binary patch block whose first line is line i: a forward hunk, an
// optional reverse hunk, each "literal N" or "delta N", lines of base85 zlib data and an empty
// line. The data is decoded and inflated, so a block cut short, even at a line end, is an error.
func (p *parser) binaryPatch(i int) (int, error) {
	j, err := p.binaryHunk(i, i+1)
	if err != nil || j >= len(p.lines) {
		return j, err
	}
	if h := p.header(j); strings.HasPrefix(h, "literal ") || strings.HasPrefix(h, "delta ") {
		return p.binaryHunk(i, j)
	}
	return j, nil
}

// binaryHunk reads one hunk of the block that starts at line start, from line i.
func (p *parser) binaryHunk(start, i int) (int, error) {
	if i >= len(p.lines) {
		return i, fail(start, "binary patch without data")
	}
	h := p.header(i)
	size, ok := strings.CutPrefix(h, "literal ")
	if !ok {
		if size, ok = strings.CutPrefix(h, "delta "); !ok {
			return i, fail(i, `binary patch hunk must start with "literal" or "delta"`)
		}
	}
	n, rest, ok := number(size)
	if !ok || rest != "" {
		return i, fail(i, "bad size in binary patch")
	}
	var data []byte
	j := i + 1
	for ; ; j++ {
		if j >= len(p.lines) {
			return j, fail(i, "binary patch ends early: no empty line after its data")
		}
		l := p.header(j)
		if l == "" {
			break
		}
		var err error
		if data, err = decode85Line(data, l); err != nil {
			return j, fail(j, err.Error())
		}
	}
	if j == i+1 {
		return j, fail(i, "binary patch hunk without data")
	}
	if err := checkInflated(data, n); err != nil {
		return j, fail(i, err.Error())
	}
	return j + 1, nil
}

// b85 maps a byte to its value in git's base85 alphabet, or 0xff.
var b85 = func() (t [256]byte) {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
	for i := range t {
		t[i] = 0xff
	}
	for i := 0; i < len(alphabet); i++ {
		t[alphabet[i]] = byte(i)
	}
	return t
}()

// decode85Line decodes one line of a binary hunk: a length byte (A-Z for 1 to 26, a-z for 27
// to 52) and that many bytes in groups of four, each written as five base85 digits.
func decode85Line(dst []byte, l string) ([]byte, error) {
	var n int
	switch c := l[0]; {
	case 'A' <= c && c <= 'Z':
		n = int(c-'A') + 1
	case 'a' <= c && c <= 'z':
		n = int(c-'a') + 27
	default:
		return dst, errors.New("bad length byte in binary patch line")
	}
	digits := l[1:]
	if len(digits) != (n+3)/4*5 {
		return dst, errors.New("binary patch line of the wrong length")
	}
	for k := 0; k < len(digits); k += 5 {
		var acc uint64
		for m := k; m < k+5; m++ {
			d := b85[digits[m]]
			if d == 0xff {
				return dst, errors.New("bad base85 digit in binary patch line")
			}
			acc = acc*85 + uint64(d)
		}
		if acc > 0xffffffff {
			return dst, errors.New("bad base85 group in binary patch line")
		}
		group := [4]byte{byte(acc >> 24), byte(acc >> 16), byte(acc >> 8), byte(acc)}
		take := min(n, 4)
		dst = append(dst, group[:take]...)
		n -= take
	}
	return dst, nil
}

// checkInflated checks that data is a zlib stream of exactly size bytes.
func checkInflated(data []byte, size int) error {
	zr, err := zlib.NewReader(bytes.NewReader(data))
	if err != nil {
		return errors.New("binary patch data is not zlib data")
	}
	got, err := io.Copy(io.Discard, io.LimitReader(zr, int64(size)+1))
	if err != nil {
		return errors.New("binary patch data is corrupt")
	}
	if got > int64(size) {
		return errors.New("binary patch data is longer than its header says")
	}
	if got < int64(size) {
		return errors.New("binary patch data holds " + strconv.FormatInt(got, 10) +
			" bytes, its header says " + strconv.Itoa(size))
	}
	return nil
}
