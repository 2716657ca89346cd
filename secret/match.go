package secret

import "strings"

// automaton finds the leftmost-longest occurrences of a fixed set of patterns: at the first
// position where any pattern occurs, the longest pattern that occurs there wins, and the
// search resumes after it. It is an Aho-Corasick automaton over bytes, immutable once built,
// so Redact reads it without a lock. Redact uses it for the values too short to be indexed by
// grams (minRunLen), found whole, with their encodings (forms).
//
// The automaton holds the patterns reversed and reads the text from its end: the state after
// reading s[i:] backwards tells the longest pattern that starts at i, which is what
// leftmost-longest needs, and a second, forward pass over those starts picks the occurrences.
// Both passes are linear in the text whatever the patterns; a forward automaton would have to
// scan past a match to rule out a longer one and scan again from its end, quadratic with a
// pattern that is a long repetition of another.
//
// States are numbered breadth first. The shallow states, where a scan of ordinary text
// spends nearly all its time, have full transition rows; deeper states, which are long chains
// in practice, keep only their own edges and a failure link. That keeps memory linear in the
// patterns' length. A row entry is the next state's row offset when that state is dense and
// ends no pattern, and the bitwise complement of its number otherwise, so that the scan of
// text holding no value is one table load and one sign test per byte.
type automaton struct {
	class [256]uint16 // byte → column of a dense row; 0 for bytes in no pattern (up to 257 columns)
	cols  int         // columns per dense row
	dense int32       // states below this number have a dense row
	rows  []int32     // dense rows: rows[state*cols+class], encoded as above

	edgeStart []int32 // state s has edges edgeStart[s] .. edgeStart[s+1]-1
	edgeByte  []byte
	edgeNext  []int32

	fail []int32 // state → failure state
	out  []int32 // state → the longest (reversed) pattern ending here, itself or on its failure chain, or -1

	plen []int32  // pattern → its length
	repl []string // pattern → what replaces it
	id   []int32  // pattern → its value's id
}

// denseBudget bounds the dense rows' memory, in transitions (4 bytes each): 64 KiB, which
// with 20 values covers the trie to a depth that ordinary text rarely passes. More makes every
// rebuild slower and Redact no faster.
const denseBudget = 16 << 10

// pattern is one string to find, and its value's id or what to replace it with.
type pattern struct {
	find, repl string
	id         int32
}

// newAutomaton builds an automaton. Empty patterns are ignored; of patterns with the same find
// string the first one given wins. It returns nil when there is nothing to find.
func newAutomaton(pats []pattern) *automaton { return buildAutomaton(pats, denseBudget) }

// buildAutomaton is newAutomaton with dense rows for at most budget transitions (at least the
// root's row).
func buildAutomaton(pats []pattern, budget int) *automaton {
	// The trie, in flat arrays: each node's children are a list through next.
	size := 1
	for _, p := range pats {
		size += len(p.find)
	}
	var (
		first  = append(make([]int32, 0, size), -1) // node → its first child, or -1
		next   = append(make([]int32, 0, size), -1) // node → its next sibling, or -1
		label  = append(make([]byte, 0, size), 0)   // node → the byte on the edge into it
		term   = append(make([]int32, 0, size), -1) // node → the pattern it ends, or -1
		rootAt [256]int32                           // the root's children by byte, 0 for none
		used   [256]bool
		plen   = make([]int32, 0, len(pats))
		repl   = make([]string, 0, len(pats))
		ids    = make([]int32, 0, len(pats))
	)
	child := func(n int32, b byte) int32 {
		if n == 0 {
			return rootAt[b]
		}
		for c := first[n]; c >= 0; c = next[c] {
			if label[c] == b {
				return c
			}
		}
		return 0
	}
	for _, p := range pats {
		if p.find == "" {
			continue
		}
		n := int32(0)
		for i := len(p.find) - 1; i >= 0; i-- {
			b := p.find[i]
			c := child(n, b)
			if c == 0 {
				c = int32(len(first))
				first, next, label, term = append(first, -1), append(next, first[n]), append(label, b), append(term, -1)
				first[n] = c
				if n == 0 {
					rootAt[b] = c
				}
				used[b] = true
			}
			n = c
		}
		if term[n] < 0 {
			term[n] = int32(len(plen))
			plen = append(plen, int32(len(p.find)))
			repl = append(repl, p.repl)
			ids = append(ids, p.id)
		}
	}
	if len(plen) == 0 {
		return nil
	}

	// Number the states breadth first, so that a state's failure state, being shallower,
	// comes before it.
	ns := len(first)
	m := &automaton{plen: plen, repl: repl, id: ids}
	order := make([]int32, 1, ns) // state → trie node
	m.edgeStart = make([]int32, 1, ns+1)
	m.edgeByte = make([]byte, 0, ns-1)
	m.edgeNext = make([]int32, 0, ns-1)
	for i := 0; i < len(order); i++ {
		for c := first[order[i]]; c >= 0; c = next[c] {
			m.edgeByte = append(m.edgeByte, label[c])
			m.edgeNext = append(m.edgeNext, int32(len(order)))
			order = append(order, c)
		}
		m.edgeStart = append(m.edgeStart, int32(len(m.edgeByte)))
	}

	// Columns: one per byte that occurs in a pattern, column 0 for all the others.
	m.cols = 1
	for b := range 256 {
		if used[b] {
			m.class[b] = uint16(m.cols)
			m.cols++
		}
	}
	m.dense = int32(min(ns, max(1, budget/m.cols)))
	m.rows = make([]int32, int(m.dense)*m.cols)
	m.fail = make([]int32, ns)
	m.out = make([]int32, ns)
	m.out[0] = -1
	for i := 0; i < ns; i++ {
		// The children's failure states and outputs first: the row below encodes them.
		for j := m.edgeStart[i]; j < m.edgeStart[i+1]; j++ {
			c := m.edgeNext[j]
			f := int32(0)
			if i != 0 {
				f = m.step(m.fail[i], m.edgeByte[j])
			}
			m.fail[c] = f
			if p := term[order[c]]; p >= 0 {
				m.out[c] = p
			} else {
				m.out[c] = m.out[f]
			}
		}
		if i < int(m.dense) {
			row := m.rows[i*m.cols : (i+1)*m.cols]
			if i != 0 {
				copy(row, m.rows[int(m.fail[i])*m.cols:]) // what the failure state does...
			}
			for j := m.edgeStart[i]; j < m.edgeStart[i+1]; j++ {
				row[m.class[m.edgeByte[j]]] = m.encode(m.edgeNext[j]) // ...unless this state has its own edge
			}
		}
	}
	return m
}

// encode is the row entry for a transition to state s.
func (m *automaton) encode(s int32) int32 {
	if s < m.dense && m.out[s] < 0 {
		return s * int32(m.cols)
	}
	return ^s
}

// step is the state after reading b in state s.
func (m *automaton) step(s int32, b byte) int32 {
	c := m.class[b]
	if c == 0 {
		return 0
	}
	for s >= m.dense {
		for j := m.edgeStart[s]; j < m.edgeStart[s+1]; j++ {
			if m.edgeByte[j] == b {
				return m.edgeNext[j]
			}
		}
		s = m.fail[s]
	}
	if e := m.rows[int(s)*m.cols+int(c)]; e < 0 {
		return ^e
	} else {
		return e / int32(m.cols)
	}
}

// hit is a pattern starting at pos.
type hit struct {
	pos int
	pat int32
}

// hits appends to hits the longest pattern starting at each position of s where one starts,
// in descending positions. A text in which no pattern occurs costs one pass.
func (m *automaton) hits(s string, hits []hit) []hit {
	rows, class, cols := m.rows, &m.class, int32(m.cols)
	off := int32(0) // the current state's row offset on the fast path
	for i := len(s) - 1; i >= 0; i-- {
		// Fast path: the state is dense and no pattern starts here.
		e := rows[int(off)+int(class[s[i]])]
		if e >= 0 {
			off = e
			continue
		}
		// Slow path: a pattern starts at i, or the state is sparse.
		st := ^e
		for {
			if p := m.out[st]; p >= 0 {
				hits = append(hits, hit{i, p})
			}
			if st < m.dense {
				off = st * cols
				break
			}
			if i--; i < 0 {
				break
			}
			st = m.step(st, s[i])
		}
	}
	return hits
}

// find calls fn with every leftmost-longest occurrence in s, in order.
func (m *automaton) find(s string, fn func(pos, end int, id int32)) {
	hits := m.hits(s, nil)
	last := 0
	for k := len(hits) - 1; k >= 0; k-- {
		h := hits[k]
		if h.pos < last {
			continue // overlaps the occurrence before
		}
		last = h.pos + int(m.plen[h.pat])
		fn(h.pos, last, m.id[h.pat])
	}
}

// replace returns s with every leftmost-longest occurrence replaced by its pattern's repl. A
// text in which no pattern occurs is returned as it is, after one pass and no allocation.
func (m *automaton) replace(s string) string {
	hits := m.hits(s, nil)
	if len(hits) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 64)
	last := 0 // s[last:] is not yet written
	for k := len(hits) - 1; k >= 0; k-- {
		h := hits[k]
		if h.pos < last {
			continue // overlaps the occurrence before
		}
		b.WriteString(s[last:h.pos])
		b.WriteString(m.repl[h.pat])
		last = h.pos + int(m.plen[h.pat])
	}
	b.WriteString(s[last:])
	return b.String()
}
