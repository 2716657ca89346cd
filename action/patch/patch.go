// Package patch lists the paths a unified or git diff touches, so that a patch can be reviewed
// before anything applies it (requirement A5).
//
// Changes reads plain unified diffs (diff -u, diff -ruN, svn and hg output) and git diffs
// (git diff, -M and -C, --binary, --no-prefix, git format-patch mail) and returns one Change
// per file section, in order. It reads a patch the way GNU patch and git apply read it: hunk
// line counts decide where a hunk ends, /dev/null and the epoch timestamps of diff -N mark new
// and deleted files, and in a git diff the rename, copy and file-mode headers say what happens.
// Text around the sections (mail headers, commit messages, diffstats, Index: and diff command
// lines, signatures) is skipped.
//
// A patch that cannot be read, or that GNU patch and git apply could read two ways, is a
// *ParseError, and the reviewer refuses it: a patch is never half-read. Refused as well, since
// some program would apply them and this package does not list their paths: context diffs,
// normal and ed-script diffs, combined diffs (diff --cc), headers indented or quoted RFC 934
// style, hunks outside a file section, git extended headers outside a diff --git section, and
// a bare diff --git line, whose paths git apply carries over to the next section.
//
// # Paths
//
// Paths are returned as the patch writes them, after git's C-style quoting is undone and the
// a/ and b/ prefixes are stripped (like patch -p1 or git apply): always in a git diff whose
// diff --git line has them, and in a plain unified diff only when the old path starts with a/
// and the new path with b/ (or one side is /dev/null). Other paths are kept whole, as patch -p0
// reads them; a git --no-prefix diff is read that way. A program that applies a patch with
// another strip level writes other files, so the executor must apply it the same way (-p1 when
// the prefixes are there, -p0 otherwise). It must also not use git apply --recount, which
// ignores hunk counts, and must run GNU patch with --forward, which otherwise may apply a patch
// in reverse and turn a new file into a deleted one. Custom prefixes (--src-prefix,
// --dst-prefix, diff.mnemonicPrefix) are out of scope: a section whose two prefixes differ is
// refused, and a prefix used on both sides is kept as part of the path. Paths are not cleaned or
// resolved: "..", absolute paths and symbolic links are for the caller's path resolution.
//
// In a plain unified diff the old and new paths of a Modify may differ (--- x.orig, +++ x); GNU
// patch then chooses one of them, so a caller must treat both as written. A patch that leaves a
// file empty is a Modify unless its header marks the file deleted (/dev/null, deleted file
// mode, or the epoch timestamp of diff -N). Binary changes are listed, from GIT binary patch
// data (decoded and checked, so that a block cut short is refused) and from "Binary files ...
// differ" lines, which no program applies.
package patch

import (
	"slices"
	"strconv"
	"strings"
)

// Op is what a patch does to one file.
type Op string

// The operations of a Change.
const (
	// Modify changes a file in place: Old and New are both set, and differ only in a plain
	// unified diff that names two files (--- x.orig, +++ x).
	Modify Op = "modify"
	// Create makes a new file: only New is set.
	Create Op = "create"
	// Delete removes a file: only Old is set.
	Delete Op = "delete"
	// Rename moves Old to New, possibly changing it as well.
	Rename Op = "rename"
	// Copy copies Old to New, possibly changing the copy; Old is read, not changed.
	Copy Op = "copy"
)

// Change is one file the patch touches.
type Change struct {
	// Op is what happens to the file.
	Op Op
	// Old is the path before the change, "" for Create.
	Old string
	// New is the path after the change, "" for Delete.
	New string
	// Line is the line of the patch where this file's section starts (1-based): the diff --git
	// line, the --- line, or a Binary files line.
	Line int
	// Binary is a binary change: GIT binary patch data, or a "Binary files ... differ" line.
	Binary bool
	// ModeOnly is a Modify that only changes the file mode (old mode and new mode, no hunks).
	ModeOnly bool
	// Mode is the file's mode after the change when a git header sets it (new file mode, new
	// mode), else "". Mode 120000 is a symbolic link whose target is the file's content, and
	// 160000 a submodule: a caller may want to ask before letting a patch make either.
	Mode string
}

// ParseError is a patch that cannot be parsed, at a line. Line is 0 for a patch that is empty
// or holds no file section at all.
type ParseError struct {
	Line int
	Msg  string
}

// Error returns "line N: msg", or just msg when there is no line.
func (e *ParseError) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return "line " + strconv.Itoa(e.Line) + ": " + e.Msg
}

// Changes parses a patch and returns every file it touches, in order. An empty patch, or one
// with no file section at all, is a ParseError; so is any part of it that cannot be parsed.
// It is safe to call concurrently.
func Changes(patch string) ([]Change, error) {
	if strings.TrimSpace(patch) == "" {
		return nil, &ParseError{Msg: "empty patch"}
	}
	lines := strings.Split(patch, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	p := parser{lines: lines, changes: make([]Change, 0, 4)}
	for i := 0; i < len(lines); {
		next, err := p.text(i)
		if err != nil {
			return nil, err
		}
		i = next
	}
	if len(p.changes) == 0 {
		return nil, &ParseError{Msg: "no file section in patch"}
	}
	return p.changes, nil
}

// parser holds one call's state.
type parser struct {
	lines   []string
	changes []Change
	// index is the last Index: line of the text before the next section, whose file that
	// section must name: GNU patch can take the file from an Index: line.
	index *indexLine
	// armed is set once the text before the next section has a line that GNU patch takes
	// for a header (Index:, ***): after it GNU patch would run ed and normal diff commands.
	armed bool
}

type indexLine struct {
	line int
	name string
}

// fail returns a ParseError at the 0-based line i.
func fail(i int, msg string) *ParseError { return &ParseError{Line: i + 1, Msg: msg} }

// header returns line i without a trailing CR, for lines read as text rather than hunk data:
// a patch saved with CRLF line ends names the same files.
func (p *parser) header(i int) string {
	return strings.TrimSuffix(p.lines[i], "\r")
}

// text reads line i, outside any file section, and returns the index of the next line to read.
func (p *parser) text(i int) (int, error) {
	line := p.header(i)
	switch {
	case strings.HasPrefix(line, "diff --git "):
		return p.gitSection(i)
	case strings.HasPrefix(line, "--- ") && i+1 < len(p.lines) && strings.HasPrefix(p.header(i+1), "+++ "):
		return p.unifiedSection(i)
	case strings.HasPrefix(line, "Binary files ") && strings.HasSuffix(line, " differ"):
		return i + 1, p.binaryFilesLine(i, line)
	}
	return i + 1, p.checkText(i, line)
}

// checkText refuses a line of text between sections that some patch program would read as
// part of a patch this package does not parse, and remembers Index: lines.
func (p *parser) checkText(i int, line string) error {
	// GNU patch finds headers indented by spaces, tabs and X characters.
	s := strings.TrimLeft(line, " \tX")
	indented := len(s) != len(line)
	next := ""
	if i+1 < len(p.lines) {
		next = strings.TrimLeft(p.header(i+1), " \tX")
	}
	switch {
	case strings.HasPrefix(s, "Index:"):
		p.index = nil
		if name := strings.TrimSpace(s[len("Index:"):]); name != "" {
			p.index = &indexLine{line: i, name: name}
		}
		p.armed = true
	case strings.HasPrefix(s, "diff --git "):
		return fail(i, "indented diff --git header")
	case strings.HasPrefix(s, "diff --cc ") || strings.HasPrefix(s, "diff --combined ") || strings.HasPrefix(s, "@@@ "):
		return fail(i, "combined diffs are not supported")
	case strings.HasPrefix(s, "--- "):
		if indented {
			return fail(i, "indented --- header")
		}
		if strings.HasPrefix(next, "*** ") {
			return fail(i, "context diffs are not supported")
		}
		return fail(i, "--- header without a +++ header after it")
	case strings.HasPrefix(s, "+++ "):
		return fail(i, "+++ header without a --- header before it")
	case strings.HasPrefix(s, "*** "):
		if strings.HasPrefix(next, "--- ") {
			return fail(i, "context diffs are not supported")
		}
		p.armed = true
	case strings.HasPrefix(s, "********"):
		if strings.HasPrefix(next, "*** ") {
			return fail(i, "context diffs are not supported")
		}
	case strings.HasPrefix(s, "@@ "):
		return fail(i, "hunk outside a file section")
	case strings.HasPrefix(s, "GIT binary patch"):
		return fail(i, "binary patch outside a diff --git section")
	case rfc934Header(s):
		return fail(i, "RFC 934 quoted --- header")
	case diffCommand(s, p.armed):
		return fail(i, "normal and ed-script diffs are not supported")
	case !indented && gitExtendedHeader(s):
		return fail(i, "git header line outside a diff --git section")
	}
	return nil
}

// rfc934Header reports a --- header behind RFC 934 "- " quoting, which GNU patch unquotes.
func rfc934Header(s string) bool {
	if !strings.HasPrefix(s, "- ") {
		return false
	}
	for strings.HasPrefix(s, "- ") {
		s = s[2:]
	}
	return strings.HasPrefix(s, "--- ")
}

// diffCommand reports a line GNU patch may take for a normal diff or ed script command:
// "12,14c12", "3a", "7d". Commands without a line number ("a", "d", "s/.//") count only after
// a header-like line, since GNU patch looks for them only then.
func diffCommand(s string, armed bool) bool {
	s = strings.TrimRight(s, " \t")
	i := 0
	for i < len(s) && (isDigit(s[i]) || i > 0 && s[i] == ',') {
		i++
	}
	if i == 0 {
		if !armed {
			return false
		}
		return s == "a" || s == "i" || s == "c" || s == "d" || s == "s/.//"
	}
	if i == len(s) {
		return false
	}
	switch s[i] {
	case 'a', 'c', 'd', 'i':
	case 's':
		return s[i:] == "s/.//"
	default:
		return false
	}
	for i++; i < len(s); i++ {
		if !isDigit(s[i]) && s[i] != ',' {
			return false
		}
	}
	return true
}

// gitExtendedHeader reports one of git's extended header lines. Outside a diff --git section
// they mean nothing to git apply, but a patch that has them there was not written by git.
func gitExtendedHeader(s string) bool {
	for _, h := range [...]string{
		"old mode ", "new mode ", "deleted file mode ", "new file mode ",
		"rename from ", "rename to ", "rename old ", "rename new ", "copy from ", "copy to ",
		"similarity index ", "dissimilarity index ",
	} {
		if strings.HasPrefix(s, h) {
			return true
		}
	}
	return false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// add appends a change after checking it against the Index: line before its section; raw
// holds the section's paths as written, before prefixes were stripped.
func (p *parser) add(c Change, raw ...string) error {
	if ix := p.index; ix != nil && ix.name != c.Old && ix.name != c.New && !slices.Contains(raw, ix.name) {
		return fail(ix.line, "Index: line names "+strconv.Quote(ix.name)+", not the file of the section after it")
	}
	p.index = nil
	p.armed = false
	p.changes = append(p.changes, c)
	return nil
}
