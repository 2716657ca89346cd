package boundary

import "slices"

// automaton is an Aho-Corasick automaton over bytes, compiled to a full transition table:
// one table lookup per byte of the text finds every occurrence of every key at once. Bytes
// that occur in no key share one column, which keeps the table small.
type automaton struct {
	class  [256]uint8 // byte → column
	stride int        // columns per state
	// delta maps row + column to the next state's row (state*stride), with the sign bit
	// set when that state ends a key, so that a scan makes one load per byte.
	delta []int32
	out   []int32   // state → the nearest state on its failure chain (itself included) that ends a key, or -1
	next  []int32   // for a state that ends a key: the next such state on its failure chain, or -1
	term  []int32   // state → the key it ends, or -1
	pay   []*bucket // key → its payload
}

// newAutomaton compiles key → payload. Keys are non-empty.
func newAutomaton(m map[string]*bucket) *automaton {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)

	a := &automaton{}
	var used [256]bool
	for _, k := range keys {
		for i := 0; i < len(k); i++ {
			used[k[i]] = true
		}
	}
	cols := 1 // column 0: bytes in no key
	for c := range 256 {
		if used[c] {
			a.class[c] = uint8(cols)
			cols++
		}
	}
	a.stride = cols
	newState := func() int32 {
		s := int32(len(a.term))
		for range cols {
			a.delta = append(a.delta, -1)
		}
		a.term = append(a.term, -1)
		return s
	}
	newState()
	for id, k := range keys {
		s := int32(0)
		for i := 0; i < len(k); i++ {
			cell := int(s)*cols + int(a.class[k[i]])
			if a.delta[cell] < 0 {
				t := newState()
				a.delta[cell] = t
			}
			s = a.delta[cell]
		}
		a.term[s] = int32(id)
		a.pay = append(a.pay, m[k])
	}

	// Breadth first: every state's failure target is shallower, so its row is complete.
	n := len(a.term)
	fail := make([]int32, n)
	a.out = make([]int32, n)
	a.next = make([]int32, n)
	a.out[0], a.next[0] = -1, -1
	queue := make([]int32, 0, n)
	for c := range cols {
		if t := a.delta[c]; t < 0 {
			a.delta[c] = 0
		} else {
			queue = append(queue, t)
		}
	}
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		f := fail[r]
		a.next[r] = a.out[f]
		if a.term[r] >= 0 {
			a.out[r] = r
		} else {
			a.out[r] = a.out[f]
		}
		for c := range cols {
			cell := int(r)*cols + c
			if t := a.delta[cell]; t < 0 {
				a.delta[cell] = a.delta[int(f)*cols+c]
			} else {
				fail[t] = a.delta[int(f)*cols+c]
				queue = append(queue, t)
			}
		}
	}
	for cell, t := range a.delta {
		v := t * int32(cols)
		if a.out[t] >= 0 {
			v |= hasOutput
		}
		a.delta[cell] = v
	}
	return a
}

const hasOutput = -1 << 31

// scan runs the automaton over s once and checks the payload of every key found.
func (a *automaton) scan(s string, want int, hits []Hit) []Hit {
	row := int32(0)
	for i := 0; i < len(s); i++ {
		v := a.delta[row+int32(a.class[s[i]])]
		row = v &^ hasOutput
		if v < 0 {
			for t := a.out[row/int32(a.stride)]; t >= 0; t = a.next[t] {
				hits = a.pay[a.term[t]].check(s, want, hits)
			}
		}
	}
	return hits
}
