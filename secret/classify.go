package secret

import "math/bits"

// The first pass over a text classifies every byte and writes the text without its
// separators (the compacted text), which is what the gram index is probed on. Separators are
// whitespace and control bytes (every byte up to 0x20) and ':', ',' and '-': the characters
// that wrap base64 at a column, space a value out, or separate the bytes of a hex dump
// ("73:33:63", "0x73, 0x33", a UUID). Removing them makes a value wrapped or spaced out in
// any of these ways contiguous again, and values are indexed without them too (see compact).
//
// The pass keeps four bit masks per 64-byte block of the text, bit i for byte i of the block:
//
//   - keep: the byte is not a separator (it is in the compacted text);
//   - hexRun: the byte can be part of a hex dump: a hex digit, 'x' or 'X' (0x prefixes), or a
//     separator;
//   - special: the byte can start an escape ('%', '\\', '&') or a UTF-8 sequence of a
//     fullwidth or zero-width character (0xE2, 0xEF);
//   - base64: the byte is in the standard base64 alphabet (letters, digits, '+', '/'), which
//     holds both base32 alphabets.
//
// On amd64 with AVX-512 VBMI2 the pass runs 64 bytes per step (classify_amd64.s); elsewhere,
// and for the last partial block, it runs a byte at a time in Go.

// Mask layout: four uint64 per block.
const (
	maskKeep = iota
	maskHexRun
	maskSpecial
	maskBase64
	masksPerBlock
)

// byteClass bits, for the Go pass.
const (
	clsKeep    = 1 << maskKeep
	clsHexRun  = 1 << maskHexRun
	clsSpecial = 1 << maskSpecial
	clsBase64  = 1 << maskBase64
)

var byteClass = func() (t [256]uint8) {
	for b := range 256 {
		sep := b <= 0x20 || b == ':' || b == ',' || b == '-'
		hex := '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F' || b == 'x' || b == 'X'
		var c uint8
		if !sep {
			c |= clsKeep
		}
		if sep || hex {
			c |= clsHexRun
		}
		switch b {
		case '%', '\\', '&', 0xE2, 0xEF:
			c |= clsSpecial
		}
		if '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || b == '+' || b == '/' {
			c |= clsBase64
		}
		t[b] = c
	}
	return t
}()

// isSeparator reports whether compaction removes b.
func isSeparator(b byte) bool { return byteClass[b]&clsKeep == 0 }

// compact returns s without its separators.
func compact(s string) string {
	for i := 0; i < len(s); i++ {
		if isSeparator(s[i]) {
			b := make([]byte, 0, len(s))
			b = append(b, s[:i]...)
			for ; i < len(s); i++ {
				if !isSeparator(s[i]) {
					b = append(b, s[i])
				}
			}
			return string(b)
		}
	}
	return s
}

// classifyGo classifies the blocks of src (len(src) is a multiple of 64, or the last partial
// block) into masks and appends the kept bytes to dst at n, returning the new n. dst has room.
//
// Eight bytes at a time, their classes go into the bytes of one word, and each mask takes
// its eight bits from it with a multiply (byteBits) rather than a shift and an or a byte.
func classifyGo(src string, dst []byte, n int, masks []uint64) int {
	cls := &byteClass
	for blk := 0; blk*64 < len(src); blk++ {
		var keep, hexRun, special, b64 uint64
		block := src[blk*64:]
		if len(block) > 64 {
			block = block[:64]
		}
		i := 0
		for ; i+8 <= len(block); i += 8 {
			b := block[i : i+8]
			c0, c1, c2, c3 := cls[b[0]], cls[b[1]], cls[b[2]], cls[b[3]]
			c4, c5, c6, c7 := cls[b[4]], cls[b[5]], cls[b[6]], cls[b[7]]
			w := uint64(c0) | uint64(c1)<<8 | uint64(c2)<<16 | uint64(c3)<<24 |
				uint64(c4)<<32 | uint64(c5)<<40 | uint64(c6)<<48 | uint64(c7)<<56
			keep |= byteBits(w) << i
			hexRun |= byteBits(w>>1) << i
			special |= byteBits(w>>2) << i
			b64 |= byteBits(w>>3) << i
			// every byte is written, and the next written over it if it is not kept
			_ = dst[n+7]
			dst[n] = b[0]
			n += int(c0 & 1)
			dst[n] = b[1]
			n += int(c1 & 1)
			dst[n] = b[2]
			n += int(c2 & 1)
			dst[n] = b[3]
			n += int(c3 & 1)
			dst[n] = b[4]
			n += int(c4 & 1)
			dst[n] = b[5]
			n += int(c5 & 1)
			dst[n] = b[6]
			n += int(c6 & 1)
			dst[n] = b[7]
			n += int(c7 & 1)
		}
		for ; i < len(block); i++ {
			c := block[i]
			cl := uint64(cls[c])
			keep |= (cl & 1) << i
			hexRun |= (cl >> 1 & 1) << i
			special |= (cl >> 2 & 1) << i
			b64 |= (cl >> 3 & 1) << i
			dst[n] = c
			n += int(cl & 1)
		}
		m := masks[blk*masksPerBlock:]
		m[maskKeep], m[maskHexRun], m[maskSpecial], m[maskBase64] = keep, hexRun, special, b64
	}
	return n
}

// byteBits returns bit 0 of each byte of w, byte j's as bit j.
func byteBits(w uint64) uint64 {
	return (w & 0x0101010101010101) * 0x0102040810204080 >> 56
}

// classification is the first pass's result for one text.
type classification struct {
	text string
	// compacted is the text without separators, followed by at least 8 zero bytes so that
	// a gram may be loaded at any position of it.
	compacted []byte
	n         int // len of the compacted text proper
	masks     []uint64
	// before[k] is the number of kept bytes in blocks before block k: the compacted
	// position of block k's first byte.
	before []int32
	// hex holds the compacted text's hex masks (see hexMasks)
	hex []uint64
}

// padding is the zero bytes after the compacted text, and the room the vector pass needs.
const padding = 64

// classify runs the first pass over s into c, reusing c's buffers.
func (c *classification) classify(s string) {
	c.text = s
	blocks := (len(s) + 63) / 64
	if cap(c.compacted) < len(s)+padding {
		c.compacted = make([]byte, len(s)+padding)
	}
	c.compacted = c.compacted[:cap(c.compacted)]
	if cap(c.masks) < blocks*masksPerBlock {
		c.masks = make([]uint64, blocks*masksPerBlock)
	}
	c.masks = c.masks[:blocks*masksPerBlock]
	if cap(c.before) < blocks+1 {
		c.before = make([]int32, blocks+1)
	}
	c.before = c.before[:blocks+1]

	full := len(s) / 64
	n := classifyBlocks(s[:full*64], c.compacted, c.masks)
	n = classifyGo(s[full*64:], c.compacted, n, c.masks[full*masksPerBlock:])
	clear(c.compacted[n : n+padding])
	c.n = n
	kept := int32(0)
	for k := range blocks {
		c.before[k] = kept
		kept += int32(bits.OnesCount64(c.masks[k*masksPerBlock+maskKeep]))
	}
	c.before[blocks] = kept
}

// rank is the compacted position of raw position i (of the first kept byte at or after it).
func (c *classification) rank(i int) int {
	k := i / 64
	if k*masksPerBlock >= len(c.masks) {
		return c.n
	}
	return int(c.before[k]) + bits.OnesCount64(c.masks[k*masksPerBlock+maskKeep]&(1<<(i%64)-1))
}

// raw is the raw position of the kept byte at compacted position p (p < c.n).
func (c *classification) raw(p int) int {
	// the last block whose first compacted position is at or before p
	lo, hi := 0, len(c.before)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if int(c.before[mid]) <= p {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	// That block holds p: an empty block shares its start with the next one.
	k := lo
	keep := c.masks[k*masksPerBlock+maskKeep]
	for r := p - int(c.before[k]); r > 0; r-- {
		keep &= keep - 1
	}
	return k*64 + bits.TrailingZeros64(keep)
}
