package secret

import (
	"math/bits"
	"unsafe"
)

// The passes over the runs of a text as they were before probeHex: the runs of hex digits and
// of base64 found into lists (findRunsRef), then the runs of hex digits probed one by one
// (probeHexRunsRef) and the base64 runs judged (decodeRunsRef), a run inside a run of hex
// digits found in its list. They are the reference of the differential tests
// (TestProbeHexIsRef, TestDecodeRunsChoice) and of BenchmarkScanRuns.

// probeHexRunsRef probes the hex index ix8 (8-byte grams folded) at every eighth position of
// each run of hex digits of the compacted text (sc.hexRuns, raw positions) of minHexRun or
// more. A window is probed only if it can be hex of the values' bytes (hexPlausible).
//
// The index's first filter, of a thousand values' hex forms, is larger than the processor's
// nearer caches, and a text of digests (a git log) lets a window in fourteen through
// hexPlausible: one probe after another, each waits for its word from memory. The windows are
// taken in batches instead, their words loaded in a loop of independent loads whose misses
// overlap, and only then looked at closer, in the order of the text.
func (sc *scanner) probeHexRunsRef(ix *gramIndex, c *classification, hexRuns []span) {
	lo, hi := sc.m.hexLow, sc.m.hexHigh
	text := c.compacted
	if len(text) < c.n+padding {
		panic("secret: hex probe out of bounds")
	}
	base := unsafe.Pointer(unsafe.SliceData(text))
	var batch [64]hexProbe
	nb := 0
	for _, r := range hexRuns {
		from, to := c.rank(r.start), c.rank(r.end)
		if to-from < minHexRun {
			continue
		}
		if vectorHex && hi <= '9' {
			// eight windows a step: the bytes that can be high nibbles, then the windows
			// they make plausible (bit 8j+7 for window j)
			for p := from; p+8 <= to; p += 64 {
				var m [2]uint64 // the call hexOkAVX512 was, with a mask more
				hexMasksAVX512((*byte)(unsafe.Add(base, p)), 1, uint64(lo), uint64(hi), &m[0])
				w := plausibleWindows(m[1])
				if nw := (to - p) / 8; nw < 8 {
					w &= 1<<(8*nw) - 1
				}
				for ; w != 0; w &= w - 1 {
					q := p + bits.TrailingZeros64(w)/8*8
					k := *(*uint64)(unsafe.Add(base, q)) | foldMask
					batch[nb] = hexProbe{p: q, k: k, h: (k ^ k>>31) * hashMul} // gramHash(k, 8)
					nb++
					if nb == len(batch) {
						sc.probeHexBatch(ix, c, &batch, nb)
						nb = 0
					}
				}
			}
			continue
		}
		for p := from; p+8 <= to; p += 8 {
			k := *(*uint64)(unsafe.Add(base, p)) | foldMask
			if !hexPlausible(k, lo, hi) {
				continue
			}
			batch[nb] = hexProbe{p: p, k: k, h: (k ^ k>>31) * hashMul} // gramHash(k, 8)
			nb++
			if nb == len(batch) {
				sc.probeHexBatch(ix, c, &batch, nb)
				nb = 0
			}
		}
	}
	sc.probeHexBatch(ix, c, &batch, nb)
}

// findRunsRef appends to hex every run [a, b) of the raw text, minHexRun bytes or more, whose
// bytes can all be part of a hex dump (the hexRun mask), and to b64 every run of minBase32Run
// or more of the base64 alphabet. The runs are found 64 bytes at a time with bit
// operations: a block without a long run inside costs a dozen operations a mask.
func (c *classification) findRunsRef(hex, b64 []span) ([]span, []span) {
	fh := runFinderRef{minLen: minHexRun, out: hex}
	fb := runFinderRef{minLen: minBase32Run, out: b64}
	masks := c.masks
	for i := 0; i+masksPerBlock <= len(masks); i += masksPerBlock {
		base := i * (64 / masksPerBlock)
		// bits where a run of 16 (hex) or 13 (base64) ones starts inside the block
		h := masks[i+maskHexRun]
		hl := h & (h >> 1)
		hl &= hl >> 2
		hl &= hl >> 4
		hl &= hl >> 8
		b := masks[i+maskBase64]
		bl := b & (b >> 1)
		bl &= bl >> 2
		bl &= bl >> 4
		bl &= bl >> 5
		fh.block(base, h, hl)
		fb.block(base, b, bl)
	}
	fh.end(len(c.text))
	fb.end(len(c.text))
	return fh.out, fb.out
}

// A runFinderRef finds the runs of ones of a bit stream, 64 bits at a time. findRunsRef computes the
// starts of long runs with shifts for minLen; keep them in step.
type runFinderRef struct {
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
func (f *runFinderRef) block(base int, r, long uint64) {
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
func (f *runFinderRef) inner(base int, rest, x uint64) {
	for x != 0 {
		a := bits.TrailingZeros64(x)
		length := bits.TrailingZeros64(^(rest >> a))
		f.out = append(f.out, span{base + a, base + a + length})
		x &^= (1<<length - 1) << a
	}
}

// end closes a run that reaches the end of the text.
func (f *runFinderRef) end(n int) {
	if n-f.open >= f.minLen {
		f.out = append(f.out, span{f.open, n})
	}
}

// decodeRunsRef keeps in sc.decodedRuns the base64 and base32 runs of the text to decode.
//
// A run is judged as it is met, and only the few to decode are kept (scanning a view
// replaces b64Runs): a git log has tens of thousands of runs a megabyte (paths, names,
// digests), and nearly all of them are rejected by the cheap tests of their first quanta.
func (sc *scanner) decodeRunsRef(text string, hexRuns, b64Runs []span) {
	sc.decodedRuns = sc.decodedRuns[:0]
	textByte := &sc.m.textByte
	h := 0
	for _, r := range b64Runs {
		// A run within a run of hex digits (an id, a digest) is neither: both lists are sorted.
		for h < len(hexRuns) && hexRuns[h].end < r.end {
			h++
		}
		if h < len(hexRuns) && hexRuns[h].start <= r.start {
			continue
		}
		run := text[r.start:r.end]
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
