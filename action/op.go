package action

import "slices"

// Op is what an action does to a path: the operations of hard-block rules (A2).
type Op string

// The operations.
const (
	OpRead     Op = "read"
	OpWrite    Op = "write"
	OpDelete   Op = "delete"
	OpExecute  Op = "execute"
	OpDelegate Op = "delegate"
)

// Ops lists every operation.
var Ops = []Op{OpRead, OpWrite, OpDelete, OpExecute, OpDelegate}

// ParseOp reads an operation name.
func ParseOp(s string) (Op, bool) {
	op := Op(s)
	return op, slices.Contains(Ops, op)
}

// Effect is one path an action touches, with the operation. Path is absolute and resolved
// through symbolic links. A recursive effect touches the whole tree under Path (rm -r, a
// recursive copy, find -delete).
type Effect struct {
	Op        Op     `json:"op"`
	Path      string `json:"path"`
	Recursive bool   `json:"recursive,omitempty"`
	// Listing is set on a recursive read that lists the tree (find, ls -R, du, tree): the
	// directories below Path are read, not the files in them.
	Listing bool `json:"listing,omitempty"`
	// From is set on a recursive write whose tree is a copy of the tree at From (cp -r, mv),
	// or the tree already at Path changed in place (From == Path, chmod -R): the names written
	// below Path are those below From. Empty when they are not known.
	From string `json:"from,omitempty"`
}
