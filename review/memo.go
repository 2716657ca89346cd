package review

import (
	"container/list"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/policy"
)

// A Reviewer keeps what its recent reviews of shell commands found: the normalised action,
// and the blockers of the input, the workspace, the hard blocks and the unknowns (everything
// but the argument constraints and the gate, which are judged afresh each time). Analysing a
// command and checking its paths against the rules is most of a review's cost; a command is
// often reviewed again (a retry, Execute's review at the execution boundary, an agent's loop).
//
// What is kept is used again only for the same call under the same rules, with the file
// system showing no change in what it depended on:
//
//   - the key is the tool's name, the policy's tool (a new policy revision has new tools), the
//     arguments (exactly: only strings, numbers, booleans and nulls, else nothing is kept), the
//     workspace and home, whether the session is confined, and the hard-block set (a Set is
//     compiled once and never changed; new rules are a new Set), the last two by weak pointer;
//   - the review's View recorded every directory whose names it looked up, listed or read
//     links in, and every file a link led to (action.Seen); before what was kept is used,
//     each is looked at again, one stat each, and anything changed (a link swapped, a file
//     made or removed) means the call is reviewed afresh. A review that looked at the file
//     system some other way, or at a directory changed a moment before, is not kept.
//
// The memo is bounded: memoSize entries, of commands up to memoMaxCommand bytes.
const (
	memoSize       = 256
	memoMaxCommand = 4 << 10
)

// memoKey holds the policy's tool and the hard-block set by weak pointers: the memo keeps
// neither alive (a Set of 10,000 rules is megabytes, and rules may change often), and a weak
// pointer to one that was collected never equals one to a newer object, at whatever address.
type memoKey struct {
	tool       string
	args       string
	t          weak.Pointer[policy.Tool]
	set        weak.Pointer[boundary.Set]
	root, home string
	unconfined bool
	enforced   bool
}

// memoEntry is a kept review. Nothing in it is changed once it is kept: a verdict made from it
// gets slices capped at their length, so that appending to them copies.
type memoEntry struct {
	key      memoKey
	action   action.Action // Args is nil: each verdict takes its own call's
	blockers []Blocker
	rules    []string
	argv     [][]string
	seen     action.Seen
}

type memo struct {
	mu      sync.Mutex
	order   *list.List // of *memoEntry, most recently used first
	entries map[memoKey]*list.Element

	hits, kept atomic.Int64 // for the tests
}

func newMemo() *memo {
	return &memo{order: list.New(), entries: map[memoKey]*list.Element{}}
}

// keyFor returns the key of a call, and false when such a call is not kept.
func keyFor(s *Session, tool string, t *policy.Tool, args map[string]any) (memoKey, bool) {
	if t.Kind != "shell_exec" || t.Server == nil || t.Server.Kind != policy.KindBuiltin || s.Paths == nil {
		return memoKey{}, false
	}
	a, ok := argsKey(args)
	if !ok {
		return memoKey{}, false
	}
	return memoKey{tool: tool, args: a, t: weak.Make(t), set: weak.Make(s.Boundaries), root: s.Paths.Root,
		home: s.Paths.Home, unconfined: s.Unconfined, enforced: s.Enforced}, true
}

// argsKey writes args as a string that differs for any two that differ: each name and value
// with its length or type. It reports false for values other than strings, numbers, booleans
// and null, and for calls too long to keep.
func argsKey(args map[string]any) (string, bool) {
	var names [8]string
	keys := names[:0]
	size := 0
	for k, v := range args {
		keys = append(keys, k)
		size += len(k) + 8
		if s, ok := v.(string); ok {
			size += len(s) + 8
		} else {
			size += 24
		}
	}
	if size > memoMaxCommand {
		return "", false
	}
	slices.Sort(keys)
	var b strings.Builder
	b.Grow(size)
	for _, k := range keys {
		b.WriteString(strconv.Itoa(len(k)))
		b.WriteByte(':')
		b.WriteString(k)
		switch v := args[k].(type) {
		case string:
			b.WriteByte('s')
			b.WriteString(strconv.Itoa(len(v)))
			b.WriteByte(':')
			b.WriteString(v)
		case float64:
			if math.IsNaN(v) {
				return "", false
			}
			b.WriteByte('f')
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		case int:
			b.WriteByte('i')
			b.WriteString(strconv.Itoa(v))
		case int64:
			b.WriteByte('l')
			b.WriteString(strconv.FormatInt(v, 10))
		case bool:
			b.WriteByte('b')
			b.WriteString(strconv.FormatBool(v))
		case nil:
			b.WriteByte('n')
		default:
			return "", false
		}
		b.WriteByte(';')
	}
	return b.String(), true
}

// get returns the entry kept for k, if any. The caller checks that it still holds.
func (m *memo) get(k memoKey) *memoEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[k]
	if !ok {
		return nil
	}
	m.order.MoveToFront(e)
	return e.Value.(*memoEntry)
}

// put keeps e, in place of any entry of the same key, forgetting the least recently used past
// the bound.
func (m *memo) put(e *memoEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kept.Add(1)
	if old, ok := m.entries[e.key]; ok {
		old.Value = e
		m.order.MoveToFront(old)
		return
	}
	m.entries[e.key] = m.order.PushFront(e)
	if m.order.Len() > memoSize {
		last := m.order.Back()
		m.order.Remove(last)
		delete(m.entries, last.Value.(*memoEntry).key)
	}
}

// drop forgets the entry of k if it is e (one found not to hold any more).
func (m *memo) drop(k memoKey, e *memoEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.entries[k]; ok && el.Value.(*memoEntry) == e {
		m.order.Remove(el)
		delete(m.entries, k)
	}
}

// keep makes the entry of a review whose verdict so far is v, for a call with key k.
func keep(k memoKey, v *Verdict, seen action.Seen) *memoEntry {
	e := &memoEntry{key: k, action: *v.Action, seen: seen,
		blockers: slices.Clip(slices.Clone(v.Blockers)), rules: slices.Clip(slices.Clone(v.Rules)),
		argv: slices.Clip(v.Argv)}
	e.action.Args = nil
	e.action.Effects = slices.Clip(e.action.Effects)
	e.action.Commands = slices.Clip(e.action.Commands)
	e.action.Unknowns = slices.Clip(e.action.Unknowns)
	e.action.Problems = slices.Clip(e.action.Problems)
	return e
}

// verdict is the verdict so far of a call with args that e was kept for.
func (e *memoEntry) verdict(args map[string]any) Verdict {
	a := e.action
	a.Args = args
	return Verdict{Action: &a, Effects: a.Effects, Argv: e.argv, Blockers: e.blockers, Rules: e.rules}
}
