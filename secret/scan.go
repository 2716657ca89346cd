package secret

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"unsafe"
)

// A matcher finds the known values of a Shared in texts. It is immutable once built, so that
// Redact reads it without a lock; a change to the values builds a new one.
type matcher struct {
	ix5 *gramIndex // plain, reversed and base64 needles: 5-byte grams
	ix8 *gramIndex // hex needles: 8-byte grams, folded
	// ixh holds the plain and reversed needles of the values made of hex digits only
	// (digests, hex keys, numbers), 8-byte grams folded. Their 5-byte grams, of four bits a
	// character, would match a text's ids and digests by chance at every other probe of the
	// main index: they are only in its first filter, and a probe that passes it with a gram of
	// hex digits looks the 8 bytes at the same place up in ixh (probe5).
	ixh *gramIndex
	// ixhb holds the base64 needles of the values made of hex digits, 8-byte grams: their
	// 5-byte grams, of base64 of hex digits, match base64 of ordinary text (JSON with ids)
	// by chance, so they too are only in ix5's first filter, and every probe that passes it
	// looks the 8 bytes up in ixhb, a small index.
	ixhb *gramIndex
	// short finds the values too short to be indexed by grams, whole, and their whole
	// encodings (see forms), the patterns of shortPatterns; nil if there are none.
	short         *automaton
	shortPatterns []pattern
	vals          []mval
	// valueByte: the bytes of the indexed values (without separators). An escape matters
	// only if it stands for one of them.
	valueByte [256]bool
	// textByte is 1 for the bytes that base32 of text may decode to (base32Text): printable
	// ASCII, tabs and line ends, and the bytes of the indexed values, separators too.
	textByte [256]uint8
	// hexLow and hexHigh are the lowest and highest high nibble of a value byte, as hex
	// digits, for hexPlausible.
	hexLow, hexHigh byte
	numeric         bool // some value, or a run that would be redacted, can be printed as a number
}

// mval is a value the matcher finds.
type mval struct {
	id int32  // the Shared's id
	v  string // the value
}

// A match is a place of a text where a value was found, raw positions [start, end).
type match struct {
	start, end int
	id         int32
}

// buildMatcher indexes values (id → value); it returns nil when there is nothing to find.
func buildMatcher(values map[int32]string) *matcher { return (*matcher)(nil).with(values) }

// with returns a matcher of m's values (m may be nil) and values more; m is not changed. The
// indexes grow by segments (see gramIndex.with); the automaton of short values, small, is
// built again.
func (old *matcher) with(values map[int32]string) *matcher {
	m := &matcher{hexLow: 0xff, textByte: printableBytes}
	if old != nil {
		m.vals, m.shortPatterns = slices.Clone(old.vals), slices.Clone(old.shortPatterns)
		m.valueByte, m.textByte, m.hexLow, m.hexHigh, m.numeric = old.valueByte, old.textByte, old.hexLow, old.hexHigh, old.numeric
		m.ix5, m.ix8, m.ixh, m.ixhb = old.ix5, old.ix8, old.ixh, old.ixhb
	}
	var n5, n8, nh, nhb []needleSource
	var hexGrams []string // the hex values' needles, as they may be written, for ix5's first filter
	short := m.shortPatterns
	ids := make([]int32, 0, len(values))
	for id := range values {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		v := values[id]
		if len(v) < MinRedactLen {
			continue
		}
		// A value too short for its runs to be found by grams is found whole, with its whole
		// encodings, by the automaton.
		cv := compact(v)
		if len(cv) < minRunLen || len(cv) < minHexValueRun && isHex(cv) {
			for _, f := range forms(v) {
				short = append(short, pattern{find: f, id: id})
				if strings.Trim(f, "0123456789+-.eE") == "" {
					m.numeric = true
				}
			}
			continue
		}
		val := int32(len(m.vals))
		m.vals = append(m.vals, mval{id: id, v: v})
		for i := 0; i < len(cv); i++ {
			m.valueByte[cv[i]] = true
		}
		for i := 0; i < len(v); i++ {
			m.textByte[v[i]] = 1
			// hex forms hold every byte, separators too
			d := "0123456789abcdef"[v[i]>>4]
			m.hexLow, m.hexHigh = min(m.hexLow, d), max(m.hexHigh, d)
		}
		if numericRun(cv) {
			m.numeric = true
		}
		hexOnly := isHex(cv)
		seen := map[string]bool{}
		for _, f := range formsOf(len(v)) {
			s := f.encode(v)
			if !f.hexIndexed() {
				s = compact(s)
			}
			if s == "" || seen[s] {
				continue
			}
			seen[s] = true
			switch {
			case f.hexIndexed():
				n8 = append(n8, needleSource{s: s, val: val, form: f})
			case hexOnly && (f.kind == formPlain || f.kind == formReversed):
				f.alt = hexValueForm
				nh = append(nh, needleSource{s: strings.ToLower(s), val: val, form: f})
				hexGrams = append(hexGrams, strings.ToLower(s), strings.ToUpper(s))
			case hexOnly:
				f.alt |= hexValueForm << 1
				nhb = append(nhb, needleSource{s: s, val: val, form: f})
				hexGrams = append(hexGrams, s)
			default:
				n5 = append(n5, needleSource{s: s, val: val, form: f})
			}
		}
	}
	if m.ix5 == nil && len(n5) == 0 && len(hexGrams) > 0 {
		// the probe loop runs over ix5: give it an index to run over
		n5 = append(n5, needleSource{s: "\x00\x00\x00\x00\x00", val: -1})
	}
	m.ix5 = m.ix5.with(5, false, n5, hexGrams...)
	m.ix8 = m.ix8.with(8, true, n8)
	m.ixh = m.ixh.with(8, true, nh)
	m.ixhb = m.ixhb.with(8, false, nhb)
	m.shortPatterns = short
	m.short = newAutomaton(short)
	if m.ix5 == nil && m.ix8 == nil && m.ixh == nil && m.ixhb == nil && m.short == nil {
		return nil
	}
	return m
}

// isHex reports whether s is made of hex digits only.
func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if hexDigit(s[i]) < 0 {
			return false
		}
	}
	return true
}

// numericRun reports whether v has a run that would be redacted and that a number can print:
// 13 digits (see runEntropy), or the whole value.
func numericRun(v string) bool {
	if strings.Trim(v, "0123456789+-.eE") == "" {
		return true
	}
	run := 0
	for i := 0; i < len(v); i++ {
		if '0' <= v[i] && v[i] <= '9' {
			run++
			if run >= 13 {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// A scanner holds one scan's buffers; scanners are pooled.
type scanner struct {
	m       *matcher
	matches []match
	// the classification of the text, and of a view of it being scanned
	cls, sub classification
	// last run found of each needle, so that the probes inside a run do not extend it again
	last map[*needle]run
	// bytes compared extending runs, this scan
	work int
	// the needles' forms as encoded with their separators, for accept, this scan
	encoded map[*needle]string
	// a view of the text (decoded escapes, a decoded base64 or base32 run), and for each of
	// its bytes the raw positions [start, end) it stands for
	view               []byte
	viewStart, viewEnd []int32
	// the windows of hex runs to probe, batched (see probeHex)
	hexBatch [64]hexProbe
	nHex     int
	// the runs of hex digits, without vector instructions (see probeHexRuns)
	hexRuns []span
	// the compacted positions whose grams passed the main index's first filter, this scan
	passes []int32
	// the base64 and base32 runs of the text to decode, kept while their views are scanned
	decodedRuns []decodeRun
}

type run struct{ align, end int }

var scanners = sync.Pool{New: func() any { return new(scanner) }}

// find appends the matches of m's values in text to sc.matches, raw positions.
func (sc *scanner) find(text string) {
	m := sc.m
	sc.work = 0
	clear(sc.encoded)
	if m.ix5 != nil || m.ix8 != nil || m.ixh != nil || m.ixhb != nil {
		c := &sc.cls
		sc.scan(c, text, nil, nil)
		sc.decodeRuns(text)
		if escapes, percent := sc.escapesMatter(text); escapes {
			// A query's '+' is a space, and anywhere else a plus: both ways if it may be a query.
			for _, plusSpace := range []bool{false, true} {
				if plusSpace && !percent {
					break
				}
				sc.escapeView(text, plusSpace)
				sc.scanView()
			}
		}
	}
	if m.short != nil {
		m.short.find(text, func(pos, end int, id int32) {
			sc.matches = append(sc.matches, match{start: pos, end: end, id: id})
		})
	}
}

// scanView scans sc.view, mapping its matches to raw positions. The view is scanned in
// place, not copied: nothing the scan keeps refers to it after.
func (sc *scanner) scanView() {
	sc.scan(&sc.sub, unsafe.String(unsafe.SliceData(sc.view), len(sc.view)), sc.viewStart, sc.viewEnd)
}

// scan classifies text into c and finds the indexed values in it. With starts and ends, text
// is a view of the raw text and its byte i stands for raw [starts[i], ends[i]); the matches
// are in raw positions. Without them, text is the raw text, and its runs of base64 to decode
// are kept for decodeRuns (a view is not decoded again).
func (sc *scanner) scan(c *classification, text string, starts, ends []int32) {
	clear(sc.last)
	c.classify(text)
	from := len(sc.matches)
	if ix := sc.m.ix5; ix != nil {
		sc.probe5(ix, c)
	}
	if ix := sc.m.ix8; ix != nil {
		sc.probeHex(ix, c)
	}
	if starts == nil {
		sc.runs(c)
	}
	if starts != nil {
		for i := from; i < len(sc.matches); i++ {
			mt := &sc.matches[i]
			mt.start, mt.end = int(starts[mt.start]), int(ends[mt.end-1])
		}
	}
}

// probe5 probes the main index at every fourth position of the compacted text, and the index
// of hex values where the gram is made of hex digits.
//
// The positions whose grams pass the first filter are gathered first, and then looked at
// closer a batch at a time: the second filter, like the first larger than the nearer caches,
// is read for a whole batch in a loop of independent loads, whose misses overlap, before any
// of them is looked at further, in the text's order as before.
func (sc *scanner) probe5(ix *gramIndex, c *classification) {
	passes := firstStages(c.compacted, c.n, ix.first, sc.passes[:0])
	sc.passes = passes
	if len(c.compacted) < c.n+padding {
		panic("secret: probe out of bounds")
	}
	text := unsafe.Pointer(unsafe.SliceData(c.compacted))
	for len(passes) > 0 {
		batch := passes[:min(len(passes), 64)]
		passes = passes[len(batch):]
		var here, routed uint64
		for i, p := range batch {
			k := *(*uint64)(unsafe.Add(text, p)) & (1<<40 - 1)
			h, r := ix.secondRoutes(k * hashMul)
			here |= b2u(h) << i
			routed |= b2u(r) << i
		}
		for todo := here | routed; todo != 0; todo &= todo - 1 {
			i := bits.TrailingZeros64(todo)
			sc.probeAt(c, int(batch[i]), here>>i&1 != 0, routed>>i&1 != 0)
		}
	}
}

// b2u is 1 for true and 0 for false.
func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// probeAt looks closer at compacted position p, whose gram passed the first filter of ix5 and
// whose reading of its second filter (secondRoutes) gave here and routed: the main index; where
// the gram is hex digits, the index of hex values; and the index of their base64. A run of a
// hex value, or of its base64, of minHexValueRun holds the 8 bytes at a fourth position.
func (sc *scanner) probeAt(c *classification, p int, here, routed bool) {
	m := sc.m
	k := binary.LittleEndian.Uint64(c.compacted[p:]) & (1<<40 - 1)
	h := k * hashMul
	if here {
		sc.candidate(m.ix5, c, p, k, h)
	}
	if !routed || p+8 > c.n {
		return
	}
	if m.ixh != nil && hexDigits5(k) {
		k8 := binary.LittleEndian.Uint64(c.compacted[p:]) | foldMask
		if h8 := gramHash(k8, 8); m.ixh.mayHold(h8) {
			sc.candidate(m.ixh, c, p, k8, h8)
		}
	}
	if m.ixhb != nil {
		k8 := binary.LittleEndian.Uint64(c.compacted[p:])
		if h8 := gramHash(k8, 8); m.ixhb.mayHold(h8) {
			sc.candidate(m.ixhb, c, p, k8, h8)
		}
	}
}

// mayStart reports whether a run of some value may hold the gram at b[p:] (b has 8 bytes of
// room from p): what probeAt would look closer at.
func (m *matcher) mayStart(b []byte, p, n int) bool {
	k := binary.LittleEndian.Uint64(b[p:]) & (1<<40 - 1)
	h := k * hashMul
	if m.ix5.first[m.ix5.firstWord(h)]&firstBit(h) != firstBit(h) {
		return false
	}
	here, routed := m.ix5.secondRoutes(h)
	if here {
		return true
	}
	if !routed || p+8 > n {
		return false
	}
	k8 := binary.LittleEndian.Uint64(b[p:])
	return m.ixh != nil && hexDigits5(k) && m.ixh.mayHold(gramHash(k8|foldMask, 8)) ||
		m.ixhb != nil && m.ixhb.mayHold(gramHash(k8, 8))
}

// hexDigits5 reports whether the 5 bytes of k are hex digits.
func hexDigits5(k uint64) bool {
	const ones, tops = 0x0101010101, 0x8080808080
	if k&tops != 0 {
		return false
	}
	y := k | ones*0x20 // fold A-F to a-f
	digit := (y + ones*(0x80-'0')) &^ (y + ones*(0x7f-'9'))
	letter := (y + ones*(0x80-'a')) &^ (y + ones*(0x7f-'f'))
	return (digit|letter)&tops == tops
}

// firstStages appends to passes the positions p = 0, 4, 8... with p+5 <= n whose 5-byte
// grams the first filter may hold. It is the loop every byte of every text goes through: in
// Go (firstStageGo) four probes a step, each one load and three bits, and one branch for the
// four; with AVX-512, sixteen a step in vectors (firstStagesAVX512), which write the positions
// that pass and go on, rather than return at each. It reads c without bounds checks: c holds n
// bytes and at least padding more, and a word index is masked to len(first), a power of two.
func firstStages(c []byte, n int, first []uint64, passes []int32) []int32 {
	fmask := uint64(len(first) - 1)
	if len(c) < n+padding || len(first)&int(fmask) != 0 {
		panic("secret: first filter stage out of bounds")
	}
	p := 0
	if vectorProbe {
		for p+65 <= n {
			passes = slices.Grow(passes, 256)
			out := passes[len(passes):cap(passes)]
			next, found := firstStagesAVX512(unsafe.SliceData(c), n, unsafe.SliceData(first), fmask, p,
				unsafe.SliceData(out), len(out))
			passes, p = passes[:len(passes)+found], next
		}
	}
	for ; p+5 <= n; p += 4 {
		if p = firstStageGo(c, n, first, p); p < 0 {
			break
		}
		passes = append(passes, int32(p))
	}
	return passes
}

// firstStageGo returns the first position p >= from, from+4, from+8... with p+5 <= n whose
// gram the first filter may hold, or -1; firstStages has checked the bounds.
func firstStageGo(c []byte, n int, first []uint64, from int) int {
	fmask := uint64(len(first) - 1)
	text := unsafe.Pointer(unsafe.SliceData(c))
	words := unsafe.Pointer(unsafe.SliceData(first))
	bit := &bitOf
	p := from
	for ; p+17 <= n; p += 16 {
		k0 := *(*uint64)(unsafe.Add(text, p)) & (1<<40 - 1)
		k1 := *(*uint64)(unsafe.Add(text, p+4)) & (1<<40 - 1)
		k2 := *(*uint64)(unsafe.Add(text, p+8)) & (1<<40 - 1)
		k3 := *(*uint64)(unsafe.Add(text, p+12)) & (1<<40 - 1)
		h0, h1, h2, h3 := k0*hashMul, k1*hashMul, k2*hashMul, k3*hashMul
		// a table of bits rather than a shift by a variable, which x86 takes only from CL
		m0 := bit[h0>>20&63] | bit[h0>>26&63] | bit[h0>>32&63]
		m1 := bit[h1>>20&63] | bit[h1>>26&63] | bit[h1>>32&63]
		m2 := bit[h2>>20&63] | bit[h2>>26&63] | bit[h2>>32&63]
		m3 := bit[h3>>20&63] | bit[h3>>26&63] | bit[h3>>32&63]
		b0 := *(*uint64)(unsafe.Add(words, (h0>>40&fmask)*8))&m0 ^ m0
		b1 := *(*uint64)(unsafe.Add(words, (h1>>40&fmask)*8))&m1 ^ m1
		b2 := *(*uint64)(unsafe.Add(words, (h2>>40&fmask)*8))&m2 ^ m2
		b3 := *(*uint64)(unsafe.Add(words, (h3>>40&fmask)*8))&m3 ^ m3
		if b0 == 0 || b1 == 0 || b2 == 0 || b3 == 0 {
			switch {
			case b0 == 0:
				return p
			case b1 == 0:
				return p + 4
			case b2 == 0:
				return p + 8
			default:
				return p + 12
			}
		}
	}
	for ; p+5 <= n; p += 4 {
		k := *(*uint64)(unsafe.Add(text, p)) & (1<<40 - 1)
		h := k * hashMul
		m := bit[h>>20&63] | bit[h>>26&63] | bit[h>>32&63]
		if *(*uint64)(unsafe.Add(words, (h>>40&fmask)*8))&m == m {
			return p
		}
	}
	return -1
}

// bitOf[i] is 1 << i.
var bitOf = func() (t [64]uint64) {
	for i := range t {
		t[i] = 1 << i
	}
	return t
}()

// minHexValueRun is the shortest run of a value of hex digits that is redacted: 8-byte grams
// probed at every fourth position find every run of 11 (see ixh); by its 4 bits a character,
// the entropy rule (accept) asks for 10.
const minHexValueRun = 11

// minHexRun is the shortest run of hex digits probed for hex forms of the values: 8 bytes.
const minHexRun = 2 * minRunLen

// plausibleWindows returns, for ok the bits of 64 bytes that can be high nibbles of value
// bytes or '0' (hexOkAVX512), bit 8j+7 set for each window of 8 bytes j that hexPlausible
// lets through: the four even bytes of it are ok, or the four odd ones.
func plausibleWindows(ok uint64) uint64 {
	const even, odd = 0x5555555555555555, 0xaaaaaaaaaaaaaaaa
	return zeroBytes(^(ok | odd)) | zeroBytes(^(ok | even))
}

// zeroBytes returns the top bit of each byte of x that is zero.
func zeroBytes(x uint64) uint64 {
	const low7 = 0x7f7f7f7f7f7f7f7f
	return ^((x&low7 + low7) | x | low7)
}

// A hexProbe is a window of a hex run to probe: compacted position, folded gram and hash.
type hexProbe struct {
	p    int
	k, h uint64
}

// probeHexBatch probes the first nb windows of batch (see probeHexRuns).
func (sc *scanner) probeHexBatch(ix *gramIndex, c *classification, batch *[64]hexProbe, nb int) {
	first, fmask := ix.first, ix.fmask
	if uint64(len(first)) != fmask+1 {
		panic("secret: hex probe out of bounds")
	}
	words := unsafe.Pointer(unsafe.SliceData(first))
	var pass uint64
	for i, b := range batch[:nb] {
		if m := firstBit(b.h); *(*uint64)(unsafe.Add(words, (b.h>>40&fmask)*8))&m == m {
			pass |= 1 << i
		}
	}
	for pass != 0 {
		b := &batch[bits.TrailingZeros64(pass)]
		pass &= pass - 1
		if ix.secondMayHold(b.h) {
			sc.candidate(ix, c, b.p, b.k, b.h)
		}
	}
}

// hexPlausible reports whether 8 hex characters (folded, without separators) can be a part of
// a hex form of the values: in hex of a byte, of "0x" and a byte, or of a UTF-16 unit, every
// other character, on one side, is a high nibble of a value byte or '0'. The values' high
// nibbles are the digits lo..hi (2..7 for ASCII); hi above '9' lets everything through. In a
// run of random hex (a SHA, a UUID) about one window in fourteen passes; no memory is read.
func hexPlausible(k uint64, lo, hi byte) bool {
	if hi > '9' {
		return true
	}
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	// bytes in [lo, hi]: adding 0x80-lo sets the top bit from lo on, adding 0x7f-hi from hi+1
	in := (k + ones*uint64(0x80-lo)) &^ (k + ones*uint64(0x7f-hi)) & tops
	// bytes that are '0'
	z := k ^ ones*'0'
	zero := ^((z&^tops + ^uint64(tops)&(ones*0x7f)) | z) & tops
	ok := in | zero
	const even, odd = 0x0080008000800080, 0x8000800080008000
	return ok&even == even || ok&odd == odd
}

// candidate looks the gram k (of hash h) at compacted position p up exactly, and extends
// every needle that holds it into the longest run around p; the runs that stand for enough
// of their value are matches. Needles are separated by a zero byte in the arena, which no
// compacted text holds, so a run is extended before its needle is looked up: most grams found
// by chance extend to fewer than minRunLen bytes and cost no more.
func (sc *scanner) candidate(ix *gramIndex, c *classification, p int, k, h uint64) {
	text, n := c.compacted, c.n
	var fold byte
	if ix.fold {
		fold = 0x20
	}
	for _, seg := range ix.segs {
		if seg.shared[k] {
			sc.neighbours(ix, c, p)
		}
		b := h >> seg.bshift
		a := seg.arena
		for _, entry := range seg.entries[seg.bstart[b]:seg.bstart[b+1]] {
			e := entry &^ repeatedGram
			if gramKey(a, int(e), ix.gram) != k {
				continue
			}
			if entry&repeatedGram != 0 && sc.work > 8*n+1<<14 && seg.needleAt(e).longerThan(maxCheapPeriodic) {
				// A periodic value in a text that repeats it costs its length at each probe;
				// past a budget linear in the text, its repeated grams are passed over: its
				// runs are still found by their other grams, at their ends. A short needle
				// costs little at any probe, and may have no other gram at a probed
				// position: its repeated grams are always looked at.
				continue
			}
			i := 0 // bytes matched before p
			for p-i > 0 && text[p-i-1]|fold == a[int(e)-i-1] {
				i++
			}
			j := ix.gram // bytes matched from p
			for p+j < n && text[p+j]|fold == a[int(e)+j] {
				j++
			}
			sc.work += i + j
			whole := a[int(e)-i-1] == 0 && a[int(e)+j] == 0
			if i+j < minRunLen && !whole {
				continue
			}
			nd := seg.needleAt(e)
			off := int(e - nd.start)
			align := p - off
			if r, ok := sc.last[nd]; ok && r.align == align && p < r.end {
				continue // inside a run of this needle already extended at the same place
			}
			if i+j+2 < nd.form.minChars() && !whole {
				continue // (two separators at its ends may count, see accept)
			}
			if sc.last == nil {
				sc.last = map[*needle]run{}
			}
			sc.last[nd] = run{align: align, end: p + j}
			start, end, ok := sc.accept(nd, off-i, off+j, c.text, c.raw(p-i), c.raw(p+j-1)+1)
			if !ok {
				continue
			}
			sc.matches = append(sc.matches, match{start: start, end: end, id: sc.m.vals[nd.val].id})
		}
	}
}

// maxCheapPeriodic is the longest needle whose repeated grams are looked at past the work
// budget of a scan (see candidate): extending a run of it costs at most its length.
const maxCheapPeriodic = 64

// longerThan reports whether the needle has more than n bytes.
func (nd *needle) longerThan(n int) bool { return int(nd.end-nd.start) > n }

// neighbours probes the grams around compacted position p, where a shared gram was found: a
// run of a value that holds the shared gram at p holds one of its own at p-3..p+3 (a run of
// minRunLen holds four grams, from its start to three after), or is no run of any one value.
func (sc *scanner) neighbours(ix *gramIndex, c *classification, p int) {
	for q := max(0, p-3); q <= p+3 && q+ix.gram <= c.n; q++ {
		if q == p {
			continue
		}
		k := gramKey(c.compacted, q, ix.gram)
		if ix.fold {
			k |= foldMask & (1<<(8*ix.gram) - 1)
			if ix.gram == 8 {
				k |= foldMask
			}
		}
		h := gramHash(k, ix.gram)
		if !ix.mayHold(h) || ix.isShared(k) {
			continue
		}
		sc.candidate(ix, c, q, k, h)
	}
}

// isShared reports whether a segment left gram k out as shared.
func (ix *gramIndex) isShared(k uint64) bool {
	for _, seg := range ix.segs {
		if seg.shared[k] {
			return true
		}
	}
	return false
}

// accept reports whether the run [k0, k1) of a needle, at [start, end) of text, is redacted,
// and where: separators the needle holds at its ends, that the text holds too, are taken in.
// The whole needle always is (a whole value, or a whole encoding of one, as Redact always
// found), and any run that stands for every bit of the value; a part of it when it stands for
// enough of the value: at least 8 bytes for a plain, reversed or hex run and 7 for
// the other encodings (whose characters split bytes), holding at least 40 bits by their
// alphabet (runEntropy) and 5 different characters. The rule keeps a text of hex ids, of
// numbers or of words from matching a value's run by chance, while a run of a random key
// counts from 8 characters.
func (sc *scanner) accept(nd *needle, k0, k1 int, text string, start, end int) (int, int, bool) {
	if k0 == 0 && k1 == int(nd.end-nd.start) {
		return start, end, true
	}
	v := sc.m.vals[nd.val].v
	u0, u1 := k0, k1 // the run in the needle's encoding, separators and all
	if !nd.form.separated(v) {
		// the encoding is the needle: no need to make it
		sc.work += int(nd.end - nd.start)
	} else {
		u, ok := sc.encoded[nd]
		if !ok {
			if sc.encoded == nil {
				sc.encoded = map[*needle]string{}
			}
			u = nd.form.encode(v)
			sc.encoded[nd] = u
		}
		sc.work += len(u)
		u0, u1 = uncompactedIndex(u, k0), uncompactedIndex(u, k1-1)+1
		// Separators at the run's ends that the text holds too are part of it: in URL-safe
		// base64, '-' is data.
		for u0 > 0 && start > 0 && isSeparator(u[u0-1]) && text[start-1] == u[u0-1] {
			u0, start = u0-1, start-1
		}
		for u1 < len(u) && end < len(text) && isSeparator(u[u1]) && text[end] == u[u1] {
			u1, end = u1+1, end+1
		}
	}
	b0, b1 := nd.form.valueBits(v, u0, u1)
	if b1 <= b0 {
		return start, end, false
	}
	if b0 == 0 && b1 == 8*len(v) {
		return start, end, true // every bit of the value: the whole value, in an encoding without its padding
	}
	raw := v[b0/8 : (b1+7)/8]
	seps := 0
	for i := 0; i < len(raw); i++ {
		if isSeparator(raw[i]) {
			seps++
		}
	}
	covered := b1 - b0 - 8*seps
	need := minRunBits
	switch nd.form.kind {
	case formPlain, formReversed, formHex:
		need = 8 * minRunLen
	}
	if covered < need {
		return start, end, false
	}
	e, distinct := runEntropy(raw, covered)
	return start, end, e >= minRunEntropy && distinct >= minRunDistinct
}

// uncompactedIndex returns the index in u of its k-th byte that is not a separator.
func uncompactedIndex(u string, k int) int {
	for i := 0; i < len(u); i++ {
		if !isSeparator(u[i]) {
			if k == 0 {
				return i
			}
			k--
		}
	}
	return len(u)
}
