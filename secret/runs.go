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
// The runs of base64 characters are found 64 bytes at a time too, with sums rather than one
// by one (runs).

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
	if !vectorHex {
		sc.probeHexRuns(ix, c)
		return
	}
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

// probeHexRuns is probeHex without vector instructions, where the masks of the compacted text
// would cost more than they save: the runs of the hexRun mask of the raw text, minHexRun or
// more, are found one by one (a run of hex digits of the compacted text is one of them without
// its separators), and the windows at every eighth position of the compacted text probed where
// they lie in a run of minHexRun compacted bytes, as probeHex probes them.
func (sc *scanner) probeHexRuns(ix *gramIndex, c *classification) {
	lo, hi := sc.m.hexLow, sc.m.hexHigh
	if len(c.compacted) < c.n+padding {
		panic("secret: hex probe out of bounds")
	}
	text := unsafe.Pointer(unsafe.SliceData(c.compacted))
	sc.nHex = 0
	f := runFinder{minLen: minHexRun, out: sc.hexRuns[:0]}
	masks := c.masks
	for i := 0; i+masksPerBlock <= len(masks); i += masksPerBlock {
		// bits where a run of 16 ones starts inside the block
		h := masks[i+maskHexRun]
		hl := h & (h >> 1)
		hl &= hl >> 2
		hl &= hl >> 4
		hl &= hl >> 8
		f.block(i*(64/masksPerBlock), h, hl)
	}
	f.end(len(c.text))
	sc.hexRuns = f.out
	for _, r := range sc.hexRuns {
		from, to := c.rank(r.start), c.rank(r.end)
		if to-from < minHexRun {
			continue
		}
		for p := (from + 7) &^ 7; p+8 <= to; p += 8 {
			if k := *(*uint64)(unsafe.Add(text, p)) | foldMask; hexPlausible(k, lo, hi) {
				sc.hexWindow(c, p, k)
			}
		}
	}
	sc.probeHexBatch(ix, c, &sc.hexBatch, sc.nHex)
	sc.nHex = 0
}

// A runFinder finds the runs of ones of a bit stream, 64 bits at a time, and appends those of
// minLen ones or more to out. probeHexRuns computes the starts of long runs with shifts for
// minLen; keep them in step.
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

// runs judges the runs of the base64 alphabet of the text classified in c, of minBase32Run
// bytes or more, by their first quanta (judge), and keeps the few to decode in sc.decodedRuns,
// which decodeRuns decodes when the text's scan is over.
//
// The runs are not found one by one into a list, but 64 bytes at a time with sums: adding to
// the base64 mask b a bit of each run (a seed) carries through the run and leaves one bit set,
// the run's end marker, at the first byte after it. With seeds where 13 ones start, the markers
// are those of the runs of 13 or more; with the base64 bytes that are not hex digits, of the
// runs that hold one. A carry out of a block is the run going on into the next. A run made of
// hex digits alone, in a run of them of minHexRun or more (a digest, an id), is neither base32
// nor base64 of base64, and is passed over at its marker.
func (sc *scanner) runs(c *classification) {
	sc.decodedRuns = sc.decodedRuns[:0]
	masks := c.masks
	nb := len(masks) / masksPerBlock
	var c13, cNotHex uint64 // the carries out of the block before
	open := 0               // where the run of b open at the block's start starts
	for k := range nb {
		i := k * masksPerBlock
		b := masks[i+maskBase64]
		if b == ^uint64(0) {
			// the open run goes on, 64 longer: every sum carries through
			c13 = 1
			if b&^masks[i+maskHexRun] != 0 {
				cNotHex = 1
			}
			continue
		}
		var next uint64
		if k+1 < nb {
			next = masks[i+masksPerBlock+maskBase64]
		}
		s13 := starts13(b, next)
		if s13|c13 == 0 {
			// No run of 13 ends here or goes on from here (it would start here); what
			// goes on into the next block is shorter, and judged by no one.
			cNotHex = 0
			if b != ^uint64(0) {
				open = 64*k + 64 - bits.LeadingZeros64(^b)
			}
			continue
		}
		var e13, eNotHex uint64
		e13, c13 = bits.Add64(b, s13, c13)
		eNotHex, cNotHex = bits.Add64(b, b&^masks[i+maskHexRun], cNotHex)
		e13, eNotHex = e13&^b, eNotHex&^b
		for ; e13 != 0; e13 &= e13 - 1 {
			end := bits.TrailingZeros64(e13)
			start := open
			if z := ^b & (1<<end - 1); z != 0 {
				start = 64*k + 64 - bits.LeadingZeros64(z)
			}
			r := span{start, 64*k + end}
			if eNotHex>>end&1 == 0 && (r.end-r.start >= minHexRun || c.hexRunAround(r) >= minHexRun) {
				continue // hex digits alone, in a run of them of minHexRun or more
			}
			sc.judge(c, r)
		}
		if b != ^uint64(0) {
			open = 64*k + 64 - bits.LeadingZeros64(^b)
		}
	}
	if r := (span{open, len(c.text)}); c13 != 0 { // a run to the end of the text
		if cNotHex != 0 || r.end-r.start < minHexRun && c.hexRunAround(r) < minHexRun {
			sc.judge(c, r)
		}
	}
}

// starts13 returns the bits of x where 13 ones start, reading on into y, the bits after x.
func starts13(x, y uint64) uint64 {
	x &= x>>1 | y<<63
	y &= y >> 1
	x &= x>>2 | y<<62
	y &= y >> 2
	x &= x>>4 | y<<60
	y &= y >> 4
	return x & (x>>5 | y<<59)
}

// judge judges the run r of the base64 alphabet by its first quanta, and keeps it in
// sc.decodedRuns if it is to be decoded: base64 of base64 if its first three quanta decode to
// base64 characters (base64Inner), base32 of an alphabet if its first quantum decodes to text
// in it (base32Text).
func (sc *scanner) judge(c *classification, r span) {
	run := c.text[r.start:r.end]
	if run[0] == '+' || run[0] == '/' {
		// In no base32 alphabet, and base64 of bytes from 0xf8 up, which are not base64: the
		// runs of a diffstat's pluses are neither.
		return
	}
	var how uint8
	if len(run) >= minDoubleRun && base64Inner(run) {
		how = decodeBase64
	}
	if fits := base32Fits(run); fits != 0 {
		for a := range base32Alphabets {
			if fits&(1<<a) != 0 && base32Text(a, run, &sc.m.textByte) {
				how |= decodeBase32 << a
			}
		}
	}
	if how != 0 {
		sc.decodedRuns = append(sc.decodedRuns, decodeRun{r, how})
	}
}

// hexRunAround returns the length of the run of the hexRun mask that holds r, all of whose
// bytes are in it, a byte at a time: it is asked only for a short run of hex digits.
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
