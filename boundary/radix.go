package boundary

import (
	"slices"
	"strings"
)

// radix is a compressed trie of literal keys, each carrying a bucket. A check walks it once
// along the path (or backwards from the path's end, for suffixes) and meets exactly the
// buckets whose key the path starts (or ends) with, however many keys there are.
type radix struct {
	root *rnode
	rev  bool // keys are stored reversed and walked from the end of the text
}

type rnode struct {
	label string // the edge into this node (reversed for a reversed tree)
	first []byte // the first byte of each child's label, ascending
	kids  []*rnode
	b     *bucket
}

// bucket is what sits at one key. Which lists are used depends on the tree.
type bucket struct {
	prefixRules []*Rule      // prefix rules: the key is their pattern
	exactRules  []*Rule      // exact rules, for recursive checks
	globs       []*globEntry // globs keyed by this literal
	regexes     []*regexEntry
	contains    []*Rule // contains rules (automaton payloads)
}

// newRadix builds a tree from key → bucket. For a reversed tree the keys must already be
// reversed.
func newRadix(m map[string]*bucket, rev bool) *radix {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	root := &rnode{}
	if keys[0] == "" {
		root.b = m[""]
		keys = keys[1:]
	}
	buildKids(root, keys, 0, m)
	return &radix{root: root, rev: rev}
}

// buildKids attaches to n the subtrees of sorted, distinct keys that all share their first
// depth bytes and are longer than depth.
func buildKids(n *rnode, keys []string, depth int, m map[string]*bucket) {
	for len(keys) > 0 {
		c := keys[0][depth]
		end := 1
		for end < len(keys) && keys[end][depth] == c {
			end++
		}
		group := keys[:end]
		keys = keys[end:]
		// Sorted keys: the common prefix of the group is that of its first and last.
		lcp := commonPrefix(group[0], group[len(group)-1])
		kid := &rnode{label: group[0][depth:lcp]}
		if len(group[0]) == lcp {
			kid.b = m[group[0]]
			group = group[1:]
		}
		buildKids(kid, group, lcp, m)
		n.first = append(n.first, c)
		n.kids = append(n.kids, kid)
	}
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// child is n's child whose label starts with c, or nil.
func (n *rnode) child(c byte) *rnode {
	f := n.first
	if len(f) <= 8 {
		for i, b := range f {
			if b == c {
				return n.kids[i]
			}
		}
		return nil
	}
	lo, hi := 0, len(f)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if f[mid] < c {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(f) && f[lo] == c {
		return n.kids[lo]
	}
	return nil
}

// step moves from n, having read i bytes of s, to the next node whose whole label s
// continues with. It returns nil when there is none.
func (t *radix) step(n *rnode, s string, i int) (*rnode, int) {
	if i >= len(s) {
		return nil, i
	}
	if !t.rev {
		k := n.child(s[i])
		if k == nil || !strings.HasPrefix(s[i:], k.label) {
			return nil, i
		}
		return k, i + len(k.label)
	}
	k := n.child(s[len(s)-1-i])
	if k == nil || len(k.label) > len(s)-i {
		return nil, i
	}
	for j := 1; j < len(k.label); j++ {
		if k.label[j] != s[len(s)-1-i-j] {
			return nil, i
		}
	}
	return k, i + len(k.label)
}

// below returns the node whose subtree holds exactly the keys that start with s (forward
// trees only), or nil. The node's own label may run past s.
func (t *radix) below(s string) *rnode {
	n, i := t.root, 0
	for i < len(s) {
		k := n.child(s[i])
		if k == nil {
			return nil
		}
		rest := s[i:]
		if len(k.label) >= len(rest) {
			if strings.HasPrefix(k.label, rest) {
				return k
			}
			return nil
		}
		if !strings.HasPrefix(rest, k.label) {
			return nil
		}
		n, i = k, i+len(k.label)
	}
	return n
}
