package patch

import (
	"strconv"
	"strings"
)

// totals counts the old and new lines of a section's hunks.
type totals struct {
	hunks    int
	old, new int
}

// hunks reads the hunks that start at line i and returns the index of the line after them.
func (p *parser) hunks(i int) (int, totals, error) {
	var t totals
	for i < len(p.lines) && strings.HasPrefix(p.header(i), "@@") {
		var err error
		if i, err = p.hunk(i, &t); err != nil {
			return i, t, err
		}
	}
	return i, t, nil
}

// hunk reads one hunk at line i. The counts in its header decide where it ends, as they do
// for GNU patch and git apply; a body that does not match them is an error.
func (p *parser) hunk(i int, t *totals) (int, error) {
	oldN, newN, ok := hunkHeader(p.header(i))
	if !ok {
		return i, fail(i, "malformed hunk header")
	}
	if oldN == 0 && newN == 0 {
		return i, fail(i, "empty hunk")
	}
	t.hunks++
	t.old += oldN
	t.new += newN
	start := i
	oldLeft, newLeft := oldN, newN
	content := false // the previous line was a hunk line, which a "\ No newline" line may follow
	for i++; oldLeft > 0 || newLeft > 0; i++ {
		if i >= len(p.lines) {
			return i, fail(start, "hunk ends early: "+strconv.Itoa(oldLeft)+" old and "+
				strconv.Itoa(newLeft)+" new lines missing")
		}
		l := p.lines[i]
		c := byte(' ') // an empty line is a context line that lost its space
		if l != "" && l != "\r" {
			c = l[0]
		}
		switch c {
		case ' ':
			if oldLeft == 0 || newLeft == 0 {
				return i, fail(i, "more lines in hunk than its header says")
			}
			oldLeft--
			newLeft--
		case '-':
			if oldLeft == 0 {
				return i, fail(i, "more removed lines in hunk than its header says")
			}
			oldLeft--
		case '+':
			if newLeft == 0 {
				return i, fail(i, "more added lines in hunk than its header says")
			}
			newLeft--
		case '\\':
			if !content || !strings.HasPrefix(l, `\ `) {
				return i, fail(i, `misplaced "\" line in hunk`)
			}
			content = false
			continue
		default:
			return i, fail(i, "hunk ends early: line is not part of a hunk")
		}
		content = true
	}
	if i < len(p.lines) && strings.HasPrefix(p.lines[i], `\`) {
		if !content || !strings.HasPrefix(p.lines[i], `\ `) {
			return i, fail(i, `misplaced "\" line in hunk`)
		}
		i++
	}
	if i < len(p.lines) && moreHunk(p.header(i)) {
		return i, fail(i, "more lines in hunk than its header says")
	}
	return i, nil
}

// moreHunk reports a line right after a hunk that looks like one more line of it. A --- line
// starts the next file and "-- " a mail signature.
func moreHunk(l string) bool {
	switch {
	case l == "":
		return false
	case l[0] == '+' || l[0] == ' ':
		return !strings.HasPrefix(l, "+++ ")
	case l[0] == '-':
		return l != "-- " && !strings.HasPrefix(l, "--- ")
	}
	return false
}

// hunkHeader reads "@@ -a,b +c,d @@ text", where a missing count is 1, and returns the counts.
func hunkHeader(s string) (oldN, newN int, ok bool) {
	if s, ok = strings.CutPrefix(s, "@@ -"); !ok {
		return 0, 0, false
	}
	if oldN, s, ok = hunkRange(s); !ok {
		return 0, 0, false
	}
	if s, ok = strings.CutPrefix(s, " +"); !ok {
		return 0, 0, false
	}
	if newN, s, ok = hunkRange(s); !ok {
		return 0, 0, false
	}
	return oldN, newN, strings.HasPrefix(s, " @@")
}

// hunkRange reads "start[,count]" and returns the count.
func hunkRange(s string) (count int, rest string, ok bool) {
	if _, s, ok = number(s); !ok {
		return 0, "", false
	}
	if s, ok = strings.CutPrefix(s, ","); !ok {
		return 1, s, true
	}
	return number(s)
}

// number reads up to nine digits: line numbers and counts beyond that are not real patches.
func number(s string) (n int, rest string, ok bool) {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		if i == 9 {
			return 0, "", false
		}
		n = n*10 + int(s[i]-'0')
		i++
	}
	return n, s[i:], i > 0
}
