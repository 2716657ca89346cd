package shell

import (
	"sort"
	"strings"
)

// grammar is a program's option syntax, as far as finding its operands needs it: which short
// and long options take a value. Options not listed are flags. Grammars are built once, when
// the package is initialised.
type grammar struct {
	short [128]uint8       // argNone, argRequired or argOptional per letter
	long  map[string]uint8 // long name: argNone, argRequired or argOptional
	names []string         // sorted long names, for GNU's unambiguous prefixes (--recur)
	posix bool             // options end at the first operand (wrappers, interpreters, find)
}

const (
	argNone uint8 = iota
	argRequired
	argOptional // only attached: -i.bak, --in-place=.bak
)

// newGrammar reads a getopt-like description. short is letters, each followed by ":" when it
// takes a value or "::" when the value is optional and attached. long is space-separated
// names, each followed by "=" when it takes a value or "=?" when the value is optional.
func newGrammar(short, long string) *grammar {
	g := &grammar{long: map[string]uint8{}}
	for i := 0; i < len(short); i++ {
		c := short[i]
		if c >= 128 {
			continue
		}
		switch {
		case strings.HasPrefix(short[i+1:], "::"):
			g.short[c] = argOptional
			i += 2
		case strings.HasPrefix(short[i+1:], ":"):
			g.short[c] = argRequired
			i++
		}
	}
	for _, f := range strings.Fields(long) {
		switch {
		case strings.HasSuffix(f, "=?"):
			g.long[strings.TrimSuffix(f, "=?")] = argOptional
		case strings.HasSuffix(f, "="):
			g.long[strings.TrimSuffix(f, "=")] = argRequired
		default:
			g.long[f] = argNone
		}
	}
	for n := range g.long {
		g.names = append(g.names, n)
	}
	sort.Strings(g.names)
	return g
}

// posixGrammar is newGrammar whose options end at the first operand.
func posixGrammar(short, long string) *grammar {
	g := newGrammar(short, long)
	g.posix = true
	return g
}

// item is one option or operand, in command-line order.
type item struct {
	opt string // the option's name without dashes ("r", "recursive"); "" for an operand
	val arg    // the option's value, or the operand
	has bool   // the option has a value
}

// parsed is a command line split into options and operands.
type parsed struct {
	items []item
	ops   []arg
	rest  int // index in ops of the first operand after "--" (len(ops) when none)
	first int // index in args of the first operand (len(args) when none)
}

func (p *parsed) has(names ...string) bool {
	for _, it := range p.items {
		if it.opt != "" && contains(names, it.opt) {
			return true
		}
	}
	return false
}

// val is the value of the last of the named options given.
func (p *parsed) val(names ...string) (arg, bool) {
	var v arg
	found := false
	for _, it := range p.items {
		if it.opt != "" && it.has && contains(names, it.opt) {
			v, found = it.val, true
		}
	}
	return v, found
}

// vals are the values of every one of the named options given.
func (p *parsed) vals(names ...string) []arg {
	var out []arg
	for _, it := range p.items {
		if it.opt != "" && it.has && contains(names, it.opt) {
			out = append(out, it.val)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// parse splits args by the grammar. A word with an expansion in an option's name is an
// operand: its value, and so whether it is an option at all, is not known, and an operand
// with an expansion is reported where it matters.
func (g *grammar) parse(args []arg) parsed {
	p := parsed{rest: -1, first: -1}
	p.items, p.ops = parsedSpace(len(args))
	only := false // after "--", or after the first operand of a POSIX grammar
	for i := 0; i < len(args); i++ {
		a := &args[i]
		if only || !a.lit() && !a.dyn || len(a.val) < 2 || a.val[0] != '-' {
			p.operand(i, a)
			if g.posix {
				only = true
			}
			continue
		}
		lp := a.litPrefix()
		if a.val == "--" && !a.dyn {
			only = true
			p.rest = len(p.ops)
			if p.first < 0 {
				p.first = i + 1
			}
			continue
		}
		if strings.HasPrefix(a.val, "--") {
			name, hasEq := a.val[2:], false
			if j := strings.IndexByte(name, '='); j >= 0 {
				name, hasEq = name[:j], true
			}
			if len(name)+2 > lp { // an expansion in the name
				p.operand(i, a)
				if g.posix {
					only = true
				}
				continue
			}
			name = g.longName(name)
			it := item{opt: name}
			switch {
			case hasEq:
				it.val, it.has = a.suffix(strings.IndexByte(a.val, '=')+1), true
			case g.long[name] == argRequired && i+1 < len(args):
				i++
				it.val, it.has = args[i], true
			}
			p.items = append(p.items, it)
			continue
		}
		// a cluster of short options: -rf, -n5, -o file
		j := 1
		for ; j < len(a.val); j++ {
			if j >= lp { // an expansion in the cluster: not known which options
				break
			}
			c := a.val[j]
			kind := argNone
			if c < 128 {
				kind = g.short[c]
			}
			if kind == argNone {
				p.items = append(p.items, item{opt: letters[c : c+1]})
				continue
			}
			it := item{opt: letters[c : c+1]}
			switch {
			case j+1 < len(a.val):
				it.val, it.has = a.suffix(j+1), true
			case kind == argRequired && i+1 < len(args):
				i++
				it.val, it.has = args[i], true
			}
			p.items = append(p.items, it)
			j = len(a.val)
			break
		}
		if j < len(a.val) {
			p.operand(i, a)
			if g.posix {
				only = true
			}
		}
	}
	if p.rest < 0 {
		p.rest = len(p.ops)
	}
	if p.first < 0 || p.first > len(args) {
		p.first = len(args)
	}
	return p
}

// parsedSpace returns empty items and operands with room for a command line of n words (and
// a cluster of options more), in one allocation for the short lines most commands have: a
// command's options are parsed once or twice per review, and each parse took two.
func parsedSpace(n int) ([]item, []arg) {
	switch n {
	case 0:
		return nil, nil
	case 1:
		b := new(struct {
			items [2]item
			ops   [1]arg
		})
		return b.items[:0], b.ops[:0]
	case 2:
		b := new(struct {
			items [3]item
			ops   [2]arg
		})
		return b.items[:0], b.ops[:0]
	case 3:
		b := new(struct {
			items [4]item
			ops   [3]arg
		})
		return b.items[:0], b.ops[:0]
	case 4:
		b := new(struct {
			items [5]item
			ops   [4]arg
		})
		return b.items[:0], b.ops[:0]
	case 5:
		b := new(struct {
			items [6]item
			ops   [5]arg
		})
		return b.items[:0], b.ops[:0]
	case 6:
		b := new(struct {
			items [7]item
			ops   [6]arg
		})
		return b.items[:0], b.ops[:0]
	}
	return make([]item, 0, n), make([]arg, 0, n)
}

func (p *parsed) operand(i int, a *arg) {
	if p.first < 0 {
		p.first = i
	}
	p.items = append(p.items, item{val: *a})
	p.ops = append(p.ops, *a)
}

// letters holds every byte, so that a one-letter option name needs no allocation.
var letters = func() string {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return string(b)
}()

// longName completes an abbreviated long option when the abbreviation is unambiguous.
func (g *grammar) longName(name string) string {
	if _, ok := g.long[name]; ok || name == "" {
		return name
	}
	i := sort.SearchStrings(g.names, name)
	if i < len(g.names) && strings.HasPrefix(g.names[i], name) &&
		(i+1 == len(g.names) || !strings.HasPrefix(g.names[i+1], name)) {
		return g.names[i]
	}
	return name
}
