package secret

import (
	"cmp"
	"encoding/binary"
	"math/bits"
	"slices"
	"sort"
)

// A gramIndex finds the places of a text where a run of some needle (a form of a known value)
// may begin, by grams: substrings of a fixed length. Every gram of every needle is in it.
//
// The main index has 5-byte grams and is probed at every fourth position of the compacted
// text: a run of 8 bytes or more always contains a gram that starts at a multiple of 4, so
// probing a quarter of the positions finds every run. The hex index has 8-byte grams, folded
// to lower case, and is probed at every eighth position of the runs of hex digits only: a hex
// run stands for at least 8 bytes of a value, so it is 16 characters or more.
//
// A probe first tests two Bloom filters of the grams. The first has three bits a gram in one
// word and 16 to 32 bits of room for each, so that about 99% of the probes of a text without
// values stop at one load, and the probe loop runs at several gigabytes a second: three bits
// in half the room of two stop as many probes, from a filter that is more often in the
// nearer caches. The second has two bits a gram in 16 to 32, and with the first
// is wrong for about one probe in ten thousand. Only then does the probe look the gram up exactly, in buckets of offsets into the
// arena of needles, and extend what it finds byte by byte (see scanner). For a thousand
// 40-byte values the main index holds about 1.4 million grams in some 15 megabytes.
type gramIndex struct {
	gram          int  // gram length: 5 or 8
	fold          bool // grams are compared folded to lower case (the needles are lower case)
	first, second []uint64
	fmask         uint64 // first filter word = hash >> 40 & fmask (a constant shift is cheaper)
	sshift        uint   // second filter word = second hash >> sshift
	segs          []*segment
	firstOnly     []string // strings whose grams are routed elsewhere (see with)
	ngrams        int      // grams in the filters
}

// A segment holds needles and the offsets of their grams by bucket.
type segment struct {
	arena   []byte   // a zero byte, then the needles each followed by a zero byte, then padding
	needles []needle // by start
	bshift  uint     // bucket = hash >> bshift
	bstart  []uint32 // bucket b's offsets are entries[bstart[b]:bstart[b+1]]
	entries []uint32 // arena offsets of grams, with repeatedGram for a gram its needle repeats
	// shared are the grams left out of entries because too many values hold them (see
	// maxGramValues); they stay in the filters, so that a probe that finds one looks at its
	// neighbours.
	shared map[uint64]bool
}

// A needle is one form of one value, as the index holds it (without separators).
type needle struct {
	start, end uint32 // in the arena
	val        int32  // index into matcher.vals
	form       form
}

const hashMul = 0x9E3779B97F4A7C15

// gramKey loads the gram of length n at b[i:], which has 8 bytes of room.
func gramKey(b []byte, i, n int) uint64 {
	k := binary.LittleEndian.Uint64(b[i:])
	if n < 8 {
		k &= 1<<(8*n) - 1
	}
	return k
}

// gramHash hashes a gram; the main index's probe inlines it.
func gramHash(k uint64, n int) uint64 {
	if n == 8 {
		k ^= k >> 31 // an 8-byte gram's high bytes must reach the filter's bit positions too
	}
	return k * hashMul
}

// firstBit is the three bits of a hash in its word of the first filter; firstWord is the
// word.
func firstBit(h uint64) uint64 { return 1<<(h>>20&63) | 1<<(h>>26&63) | 1<<(h>>32&63) }

func (ix *gramIndex) firstWord(h uint64) uint64 { return h >> 40 & ix.fmask }

// maxFirstWords bounds the first filter: its word index is 24 bits of the hash.
const maxFirstWords = 1 << 24

// secondHash is the hash of the second filter, independent of the first's bits.
func secondHash(h uint64) uint64 { return (h ^ h>>29) * 0xBF58476D1CE4E5B9 }

// secondBits are the two bits of a second hash in its word; routedBits are two others, for
// the grams an index routes to others (see with).
func secondBits(h2 uint64) uint64 { return 1<<(h2>>20&63) | 1<<(h2>>26&63) }

func routedBits(h2 uint64) uint64 { return 1<<(h2>>32&63) | 1<<(h2>>38&63) }

// foldMask lowers the case of letters (and moves some punctuation, harmlessly: grams and
// needles of the hex index only hold hex digits and x).
const foldMask = 0x2020202020202020

// needleSource is a needle before it is indexed.
type needleSource struct {
	s    string
	val  int32
	form form
}

// with returns an index of ix's needles and needles more (ix may be nil), or nil if there are
// none long enough to hold a gram. The grams of firstOnly are routed: they get the first
// filter's bit and, in the same word of the second filter, the bits of routedBits rather than
// secondBits, so that one load tells a probe whether to look in this index, in the indexes of
// hex values, or nowhere (see matcher.ixh). ix is not changed: Redact may be reading it.
//
// The new needles make a segment of their own, and the filters are copied with their bits
// set: adding a value costs a copy of the filters and the indexing of that value, not a
// rebuild. A segment is merged with the one before when it grows to half its size, so that
// a probe looks in a few segments at most and a value is indexed again a logarithmic number
// of times. The filters are built again, larger, when they hold more than a gram for 16 bits of
// the first.
func (ix *gramIndex) with(gram int, fold bool, needles []needleSource, firstOnly ...string) *gramIndex {
	seg := newSegment(gram, needles)
	n := &gramIndex{gram: gram, fold: fold}
	if ix != nil {
		n.segs = slices.Clone(ix.segs)
		n.firstOnly = slices.Clone(ix.firstOnly)
		n.ngrams = ix.ngrams
	}
	if seg == nil && len(firstOnly) == 0 {
		return ix
	}
	if seg != nil {
		n.segs = append(n.segs, seg)
		n.ngrams += len(seg.entries) + len(seg.shared)
	}
	n.firstOnly = append(n.firstOnly, firstOnly...)
	for _, s := range firstOnly {
		n.ngrams += max(0, len(s)-gram+1)
	}
	if len(n.segs) == 0 {
		return nil
	}
	for len(n.segs) >= 2 {
		last, prev := n.segs[len(n.segs)-1], n.segs[len(n.segs)-2]
		if 2*len(last.entries) < len(prev.entries) {
			break
		}
		n.segs = append(n.segs[:len(n.segs)-2], newSegment(gram, append(prev.sources(), last.sources()...)))
	}
	if ix != nil && n.ngrams <= 4*len(ix.first) {
		// room in the filters: copy them and set the new grams' bits
		n.first, n.fmask = slices.Clone(ix.first), ix.fmask
		n.second, n.sshift = slices.Clone(ix.second), ix.sshift
		if seg != nil {
			n.addSegment(seg)
		}
		n.addFirstOnly(firstOnly)
		return n
	}
	words := min(maxFirstWords, 1<<max(6, bits.Len(uint(n.ngrams/4))))
	n.first = make([]uint64, words)
	n.fmask = uint64(words - 1)
	words = max(64, words)
	n.second = make([]uint64, words)
	n.sshift = uint(64 - bits.TrailingZeros(uint(words)))
	for _, seg := range n.segs {
		n.addSegment(seg)
	}
	n.addFirstOnly(n.firstOnly)
	return n
}

// addSegment sets the filters' bits for a segment's grams, shared ones too.
func (ix *gramIndex) addSegment(seg *segment) {
	add := func(k uint64) {
		h := gramHash(k, ix.gram)
		ix.first[ix.firstWord(h)] |= firstBit(h)
		h2 := secondHash(h)
		ix.second[h2>>ix.sshift] |= secondBits(h2)
	}
	for _, e := range seg.entries {
		add(gramKey(seg.arena, int(e&^repeatedGram), ix.gram))
	}
	for k := range seg.shared {
		add(k)
	}
}

// addFirstOnly sets the filters' bits for the routed grams of firstOnly.
func (ix *gramIndex) addFirstOnly(firstOnly []string) {
	for _, s := range firstOnly {
		b := []byte(s + "\x00\x00\x00\x00\x00\x00\x00\x00")
		for i := 0; i+ix.gram <= len(s); i++ {
			h := gramHash(gramKey(b, i, ix.gram), ix.gram)
			ix.first[ix.firstWord(h)] |= firstBit(h)
			h2 := secondHash(h)
			ix.second[h2>>ix.sshift] |= routedBits(h2)
		}
	}
}

// sources returns the needles of a segment, to index them again.
func (seg *segment) sources() []needleSource {
	out := make([]needleSource, len(seg.needles))
	for i, nd := range seg.needles {
		out[i] = needleSource{s: string(seg.arena[nd.start:nd.end]), val: nd.val, form: nd.form}
	}
	return out
}

func newSegment(gram int, needles []needleSource) *segment {
	size, ngrams := 0, 0
	for _, n := range needles {
		if len(n.s) >= gram {
			size += len(n.s) + 1
			ngrams += len(n.s) - gram + 1
		}
	}
	if ngrams == 0 {
		return nil
	}
	seg := &segment{arena: make([]byte, 1, size+9)}
	for _, n := range needles {
		if len(n.s) < gram {
			continue
		}
		start := uint32(len(seg.arena))
		seg.arena = append(seg.arena, n.s...)
		seg.needles = append(seg.needles, needle{start: start, end: uint32(len(seg.arena)), val: n.val, form: n.form})
		seg.arena = append(seg.arena, 0)
	}
	seg.arena = append(seg.arena, make([]byte, 8)...)

	nb := 1 << max(4, bits.Len(uint(ngrams/4))) // about four grams a bucket
	seg.bshift = uint(64 - bits.TrailingZeros(uint(nb)))
	seg.bstart = make([]uint32, nb+1)
	type gramAt struct {
		k      uint64
		off    uint32
		val    int32
		needle int32
	}
	grams := make([]gramAt, 0, ngrams)
	for n, nd := range seg.needles {
		for i := nd.start; i+uint32(gram) <= nd.end; i++ {
			k := gramKey(seg.arena, int(i), gram)
			grams = append(grams, gramAt{k, i, nd.val, int32(n)})
			seg.bstart[gramHash(k, gram)>>seg.bshift+1]++
		}
	}
	for b := 1; b <= nb; b++ {
		seg.bstart[b] += seg.bstart[b-1]
	}
	byBucket := make([]gramAt, ngrams)
	fill := make([]uint32, nb)
	copy(fill, seg.bstart[:nb])
	for _, g := range grams {
		b := gramHash(g.k, gram) >> seg.bshift
		byBucket[fill[b]] = g
		fill[b]++
	}
	// Write the offsets bucket by bucket, leaving out the grams that more than maxGramValues
	// values share.
	seg.entries = make([]uint32, 0, ngrams)
	for b := range nb {
		bucket := byBucket[seg.bstart[b]:seg.bstart[b+1]]
		slices.SortFunc(bucket, func(x, y gramAt) int {
			return cmp.Or(cmp.Compare(x.k, y.k), cmp.Compare(x.val, y.val), cmp.Compare(x.needle, y.needle), cmp.Compare(x.off, y.off))
		})
		seg.bstart[b] = uint32(len(seg.entries))
		for i := 0; i < len(bucket); {
			j, values := i, 0
			for ; j < len(bucket) && bucket[j].k == bucket[i].k; j++ {
				if j == i || bucket[j].val != bucket[j-1].val {
					values++
				}
			}
			if values <= maxGramValues {
				group := bucket[i:j]
				for n, g := range group {
					// A needle that repeats a gram (a periodic value) keeps its first four and
					// last four, marked: the first probe inside a run that reaches an end of the
					// needle (a whole value) finds it at one of them, and in between the text
					// is the same at every offset (see scanner.candidate).
					repeated := n > 0 && group[n-1].needle == g.needle || n+1 < len(group) && group[n+1].needle == g.needle
					if n >= 4 && group[n-4].needle == g.needle && n+4 < len(group) && group[n+4].needle == g.needle {
						continue
					}
					off := g.off
					if repeated {
						off |= repeatedGram
					}
					seg.entries = append(seg.entries, off)
				}
			} else {
				if seg.shared == nil {
					seg.shared = map[uint64]bool{}
				}
				seg.shared[bucket[i].k] = true
			}
			i = j
		}
	}
	seg.bstart[nb] = uint32(len(seg.entries))
	return seg
}

// repeatedGram marks an entry whose gram its needle holds more than once.
const repeatedGram = 1 << 31

// maxGramValues is how many values may share a gram for it to be indexed. A gram that more
// values hold comes from what they have in common (a vendor's prefix, a JWT's header, plain or
// encoded), not from any one of them: a text holding it is ordinary, and matching it would
// extend dozens of needles for nothing. A run of a value is found by its own grams: where a
// probe finds a shared gram, its neighbours are probed (see scanner.candidate), and a run is
// extended through the shared part like any other. A run made only of shared grams is not a
// secret of any one value, and is left.
const maxGramValues = 8

// mayHold reports whether the filters may hold the gram of hash h.
func (ix *gramIndex) mayHold(h uint64) bool {
	return ix.first[ix.firstWord(h)]&firstBit(h) == firstBit(h) && ix.secondMayHold(h)
}

// secondRoutes reads the second filter once for a gram that passed the first: whether this
// index may hold it, and whether a routed gram may be it.
func (ix *gramIndex) secondRoutes(h uint64) (here, routed bool) {
	h2 := secondHash(h)
	w := ix.second[h2>>ix.sshift]
	m, r := secondBits(h2), routedBits(h2)
	return w&m == m, w&r == r
}

// secondMayHold is mayHold's second filter.
func (ix *gramIndex) secondMayHold(h uint64) bool {
	h2 := secondHash(h)
	m := secondBits(h2)
	return ix.second[h2>>ix.sshift]&m == m
}

// needleAt returns the needle whose bytes hold arena offset e.
func (seg *segment) needleAt(e uint32) *needle {
	i := sort.Search(len(seg.needles), func(i int) bool { return seg.needles[i].end > e })
	return &seg.needles[i]
}
