package policy

import (
	"iter"
	"math/bits"
)

// Bitset is a set of small integers: tool indexes (Tool.Index) or server indexes
// (Server.Index). A session's surface is computed with a handful of word-wide operations over
// sets sized for the policy, so opening one costs the same whatever the roles look like.
type Bitset []uint64

// NewBitset returns an empty set that can hold 0..n-1.
func NewBitset(n int) Bitset { return make(Bitset, (n+63)/64) }

// Has reports whether i is in the set.
func (b Bitset) Has(i int) bool {
	w := i >> 6
	return w < len(b) && b[w]&(1<<(uint(i)&63)) != 0
}

// Add puts i in the set, which must be large enough.
func (b Bitset) Add(i int) { b[i>>6] |= 1 << (uint(i) & 63) }

// Del removes i from the set.
func (b Bitset) Del(i int) {
	if w := i >> 6; w < len(b) {
		b[w] &^= 1 << (uint(i) & 63)
	}
}

// Copy sets b to o. Both must have the same size.
func (b Bitset) Copy(o Bitset) { copy(b, o) }

// And keeps only the members of b also in o.
func (b Bitset) And(o Bitset) {
	for i := range b {
		b[i] &= o[i]
	}
}

// Or adds every member of o.
func (b Bitset) Or(o Bitset) {
	for i := range b {
		b[i] |= o[i]
	}
}

// AndNot removes every member of o.
func (b Bitset) AndNot(o Bitset) {
	for i := range b {
		b[i] &^= o[i]
	}
}

// Intersects reports whether b and o share a member.
func (b Bitset) Intersects(o Bitset) bool {
	for i := range b {
		if b[i]&o[i] != 0 {
			return true
		}
	}
	return false
}

// SubsetOf reports whether every member of b is in o.
func (b Bitset) SubsetOf(o Bitset) bool {
	for i := range b {
		if b[i]&^o[i] != 0 {
			return false
		}
	}
	return true
}

// Empty reports whether b has no member.
func (b Bitset) Empty() bool {
	for _, w := range b {
		if w != 0 {
			return false
		}
	}
	return true
}

// Len counts the members.
func (b Bitset) Len() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// All yields the members in increasing order.
func (b Bitset) All() iter.Seq[int] {
	return func(yield func(int) bool) {
		for wi, w := range b {
			for w != 0 {
				i := bits.TrailingZeros64(w)
				if !yield(wi<<6 + i) {
					return
				}
				w &^= 1 << uint(i)
			}
		}
	}
}

// Clone returns a copy of b.
func (b Bitset) Clone() Bitset { return append(Bitset(nil), b...) }
