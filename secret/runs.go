package secret

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// The runs of hex digits of a text are probed for the values' hex forms without being found
// one by one: a pass over the compacted text, 64 bytes at a time, marks its hex digits and the
// bytes that can be high nibbles of the values' bytes (hexMasks), and bit operations on the
// masks give the windows of 8 bytes to probe (probeHex). A git log has some sixteen thousand
// runs of hex digits a megabyte (digests, dates, diffstats); finding each, ranking its ends in
// the compacted text and judging its windows cost more than the probes.
//
// The runs of base64 characters are found 64 bytes at a time too, and each is judged by its
// first quanta where it is found (runs).

// probeHex probes the hex index ix (8-byte grams folded) at every position of the compacted
// text that is a multiple of 8, where the window of 8 bytes lies in a run of hex digits ('x'
// too, for 0x prefixes) of minHexRun or more, and can be hex of the values' bytes
// (hexPlausible). Every hex form of a value is hex digits and 'x', and a run of one that is
// redacted has 8 bytes of the value, 16 characters: it holds such a window, at whose gram the
// run is found and extended.
//
// The index's first filter, of a thousand values' hex forms, is larger than the processor's
// nearer caches, and a text of digests (a git log) lets a window in fourteen through
// hexPlausible: one probe after another, each would wait for its word from memory. The windows
// are taken in batches instead (sc.hexBatch), their words loaded in a loop of independent loads
// whose misses overlap, and only then looked at closer, in the order of the text.
func (sc *scanner) probeHex(ix *gramIndex, c *classification) {
	nb := (c.n + 63) / 64
	masks := c.hexMasks(sc.m.hexLow, sc.m.hexHigh)
	if len(masks) < 2*nb+2 || len(c.compacted) < c.n+padding {
		panic("secret: hex probe out of bounds")
	}
	text := unsafe.Pointer(unsafe.SliceData(c.compacted))
	sc.nHex = 0
	for j := 0; j < nb; j++ {
		w := zeroBytes(^masks[2*j]) // bit 8i+7: window i is hex digits
		if w == 0 {
			continue // most blocks of most texts
		}
		// the bits of runs of minHexRun hex digits, from their starts here and in the block
		// before (no run of 16 ends here that starts further back)
		long := smear16(longStarts(masks[2*j], masks[2*j+2]))
		if j > 0 {
			long |= smear16(longStarts(masks[2*j-2], masks[2*j])>>49) >> 15
		}
		w &= zeroBytes(^long) & plausibleWindows(masks[2*j+1])
		for ; w != 0; w &= w - 1 {
			p := 64*j + bits.TrailingZeros64(w)&^7
			sc.hexWindow(c, p, *(*uint64)(unsafe.Add(text, p))|foldMask)
		}
	}
	sc.probeHexBatch(ix, c, &sc.hexBatch, sc.nHex)
	sc.nHex = 0
}

// longStarts returns the bits of x where 16 ones start, reading on into y, the bits after x.
func longStarts(x, y uint64) uint64 {
	x &= x>>1 | y<<63
	y &= y >> 1
	x &= x>>2 | y<<62
	y &= y >> 2
	x &= x>>4 | y<<60
	y &= y >> 4
	return x & (x>>8 | y<<56)
}

// smear16 sets the 15 bits above each bit of x, those that fit.
func smear16(x uint64) uint64 {
	x |= x << 1
	x |= x << 2
	x |= x << 4
	return x | x<<8
}

// hexWindow adds the window at compacted position p, its 8 bytes folded k, to the batch to
// probe, and probes the batch when it is full.
func (sc *scanner) hexWindow(c *classification, p int, k uint64) {
	sc.hexBatch[sc.nHex&63] = hexProbe{p: p, k: k, h: (k ^ k>>31) * hashMul} // gramHash(k, 8)
	sc.nHex++
	if sc.nHex == len(sc.hexBatch) {
		sc.probeHexBatch(sc.m.ix8, c, &sc.hexBatch, sc.nHex)
		sc.nHex = 0
	}
}

// hexMasks returns two masks for each 64-byte block of the compacted text, and two zero masks
// after them: bit i of masks[2j], byte i of block j, folded to lower case, is a hex digit or
// 'x'; bit i of masks[2j+1], it is in [lo, hi] or is '0', a byte that hexPlausible lets be a
// high nibble (every byte if hi is above '9').
func (c *classification) hexMasks(lo, hi byte) []uint64 {
	nb := (c.n + 63) / 64
	if cap(c.hex) < 2*nb+2 {
		c.hex = make([]uint64, 2*nb+2)
	}
	masks := c.hex[:2*nb+2]
	if len(c.compacted) < 64*nb {
		panic("secret: hex masks out of bounds")
	}
	j := 0
	if vectorHex && nb > 0 {
		hexMasksAVX512(unsafe.SliceData(c.compacted), nb, uint64(lo), uint64(hi), unsafe.SliceData(masks))
		j = nb
	}
	for ; j < nb; j++ {
		masks[2*j], masks[2*j+1] = hexMasksGo(c.compacted[64*j:64*j+64], lo, hi)
	}
	if hi > '9' {
		for j := range nb {
			masks[2*j+1] = ^uint64(0)
		}
	}
	masks[2*nb], masks[2*nb+1] = 0, 0
	return masks
}

// hexMasksGo returns the two masks of hexMasks for the 64 bytes of b, eight at a time.
func hexMasksGo(b []byte, lo, hi byte) (hex, ok uint64) {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	_ = b[63]
	for i := 0; i < 64; i += 8 {
		k := binary.LittleEndian.Uint64(b[i:]) | foldMask
		ascii := ^k & tops
		y := k &^ tops // sums of bytes below 0x80 carry into no other byte
		digit := (y + ones*(0x80-'0')) &^ (y + ones*(0x7f-'9'))
		letter := (y + ones*(0x80-'a')) &^ (y + ones*(0x7f-'f'))
		h := (digit | letter | zeroBytes(y^ones*'x')) & ascii
		in := (y + ones*uint64(0x80-lo)) &^ (y + ones*uint64(0x7f-hi))
		o := (in | zeroBytes(y^ones*'0')) & ascii
		hex |= byteBits(h>>7) << i
		ok |= byteBits(o>>7) << i
	}
	return hex, ok
}

// runs finds the runs of the base64 alphabet of the text classified in c, of minBase32Run
// bytes or more, 64 bytes at a time into sc.b64Runs, and then judges each by its first quanta
// (see decodeRuns): the few to decode are kept in sc.decodedRuns, which decodeRuns decodes when the text's scan is over.
// (Judging each run where it is found, in the same loop, is slower: the loop's branches then
// foresee neither.)
func (sc *scanner) runs(c *classification) {
	sc.b64Runs = c.base64Runs(sc.b64Runs[:0])
	masks := c.masks
	sc.decodedRuns = sc.decodedRuns[:0]
	textByte := &sc.m.textByte
	for _, r := range sc.b64Runs {
		// A run inside a run of hex digits of minHexRun or more (an id, a digest) is neither
		// base32 nor base64 of base64: its characters are all hex digits or 'x' (in the
		// hexRun mask), and the run of the mask around it is long enough.
		// The mask's 64 bits from the run's start, of its block and the next:
		k, sh := uint(r.start)/64, uint(r.start)%64
		w := masks[k*masksPerBlock+maskHexRun] >> sh
		if next := (k+1)*masksPerBlock + maskHexRun; next < uint(len(masks)) {
			w |= masks[next] << (64 - sh) // nothing if sh is 0
		}
		var hexOnly bool
		if n := r.end - r.start; n <= 64 {
			hexOnly = ^w&(1<<n-1) == 0
		} else {
			hexOnly = c.hexOnly(r)
		}
		if hexOnly && (r.end-r.start >= minHexRun || c.hexRunAround(r) >= minHexRun) {
			continue
		}
		run := c.text[r.start:r.end]
		var how uint8
		if len(run) >= minDoubleRun && base64Inner(run) {
			how = decodeBase64
		}
		if fits := base32Fits(run); fits != 0 {
			for a := range base32Alphabets {
				if fits&(1<<a) != 0 && base32Text(a, run, textByte) {
					how |= decodeBase32 << a
				}
			}
		}
		if how != 0 {
			sc.decodedRuns = append(sc.decodedRuns, decodeRun{r, how})
		}
	}
}

// base64Runs appends to out the runs of the base64 alphabet of minBase32Run bytes or more.
func (c *classification) base64Runs(out []span) []span {
	fb := runFinder{minLen: minBase32Run, out: out}
	masks := c.masks
	for i := 0; i+masksPerBlock <= len(masks); i += masksPerBlock {
		base := i * (64 / masksPerBlock)
		// bits where a run of 13 ones starts inside the block
		b := masks[i+maskBase64]
		bl := b & (b >> 1)
		bl &= bl >> 2
		bl &= bl >> 4
		bl &= bl >> 5
		fb.block(base, b, bl)
	}
	fb.end(len(c.text))
	return fb.out
}

// A runFinder finds the runs of ones of a bit stream, 64 bits at a time, and appends those of
// minLen ones or more to out. runs computes the starts of long runs with shifts for minLen;
// keep them in step.
type runFinder struct {
	minLen int
	// open is where the run of ones that reaches the end of the blocks taken so far starts:
	// the next block's base if there is none, so that the run a block starts with needs no
	// other case, and the branches are taken alike block after block (a branch on whether a
	// run is open is a coin toss on text, and mispredicted half the time).
	open int
	out  []span
}

// block takes the block at base, r its bits and long the bits where a run of minLen ones
// starts inside it.
func (f *runFinder) block(base int, r, long uint64) {
	if r == ^uint64(0) {
		return // the open run goes on
	}
	lo := bits.TrailingZeros64(^r) // the run open from before ends at lo
	if base+lo-f.open >= f.minLen {
		f.out = append(f.out, span{f.open, base + lo})
	}
	top := 64 - bits.LeadingZeros64(^r) // bits from top up are ones
	f.open = base + top
	if x := long &^ (1<<lo - 1) & (1<<top - 1); x != 0 {
		f.inner(base, r&^(1<<lo-1)&(1<<top-1), x)
	}
}

// inner appends the long runs inside the block at base: rest is its bits of runs that start
// and end inside it, x the bits where those of minLen ones or more start.
func (f *runFinder) inner(base int, rest, x uint64) {
	for x != 0 {
		a := bits.TrailingZeros64(x)
		length := bits.TrailingZeros64(^(rest >> a))
		f.out = append(f.out, span{base + a, base + a + length})
		x &^= (1<<length - 1) << a
	}
}

// end closes a run that reaches the end of the text.
func (f *runFinder) end(n int) {
	if n-f.open >= f.minLen {
		f.out = append(f.out, span{f.open, n})
	}
}

// hexOnly reports whether every byte of r is in the hexRun mask: a run of the base64 alphabet
// is then made of hex digits and 'x' alone, and lies inside a run of the hexRun mask.
func (c *classification) hexOnly(r span) bool {
	for k := r.start / 64; k*64 < r.end; k++ {
		m := c.masks[k*masksPerBlock : k*masksPerBlock+masksPerBlock]
		out := ^m[maskHexRun]
		out &= ^uint64(0) << max(r.start-64*k, 0)
		if e := r.end - 64*k; e < 64 {
			out &= 1<<e - 1
		}
		if out != 0 {
			return false
		}
	}
	return true
}

// hexRunAround returns the length of the run of the hexRun mask that holds r, all of whose
// bytes are in it (hexOnly), a byte at a time: it is asked only for a short run of hex digits.
func (c *classification) hexRunAround(r span) int {
	in := func(i int) bool { return c.masks[i/64*masksPerBlock+maskHexRun]>>(i%64)&1 != 0 }
	start, end := r.start, r.end
	for start > 0 && in(start-1) {
		start--
	}
	for end < len(c.text) && in(end) {
		end++
	}
	return end - start
}
