package patch

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
)

// headerPath is the path of a --- or +++ line.
type headerPath struct {
	name  string // unquoted, as written; "/dev/null" when null
	null  bool   // /dev/null: the file does not exist on this side
	stamp string // the timestamp after the path, if any
}

var (
	errEmptyPath  = errors.New("empty path")
	errNULPath    = errors.New("NUL byte in path")
	errSpacedPath = errors.New("path with spaces needs a tab after it or quotes around it")
	errAfterQuote = errors.New("text after a quoted path")
	errUnquoted   = errors.New(`unquoted path with a tab or a quote`)
)

// isoDate is a timestamp as GNU diff writes it, in the forms git apply recognises at the end
// of a --- or +++ line: "2002-02-21 23:30:39.942229878 -0800", with the time and the zone
// optional.
const isoDate = `(?:\d\d)?\d\d-\d\d-\d\d(?: \d\d:\d\d:\d\d(?:\.\d+)?)?(?: [+-]\d\d:?\d\d)?`

var (
	// spaceStamp is a path, spaces and a timestamp, as diff -u wrote before it put a tab
	// there. The path must have no spaces: GNU patch ends it at the first space.
	spaceStamp = regexp.MustCompile(`^(\S+) +` + isoDate + `$`)
	// endStamp is a timestamp at the end of a line, where git apply looks for one.
	endStamp = regexp.MustCompile(`[\t ]` + isoDate + `$`)
	// isoStamp splits a timestamp to tell whether it is the epoch.
	isoStamp = regexp.MustCompile(`^(\d{4}-\d\d-\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?: ([+-])(\d\d):?(\d\d))?$`)
)

// parseHeaderPath reads the text after "--- " or "+++ ": a path, quoted or not, then perhaps
// a timestamp after a tab (or after spaces, when that cannot be misread). GNU patch ends an
// unquoted path at the first tab, or at the first space when there is no tab; git apply ends
// it before a timestamp at the end of the line, or else at the first tab. A path the two
// would read differently is an error.
func parseHeaderPath(s string) (headerPath, error) {
	if s == "" {
		return headerPath{}, errEmptyPath
	}
	if s[0] == '"' {
		name, rest, err := unquote(s)
		if err != nil {
			return headerPath{}, err
		}
		if rest != "" && rest[0] != '\t' && rest[0] != ' ' {
			return headerPath{}, errAfterQuote
		}
		return headerPath{name: name, stamp: strings.TrimSpace(rest)}, nil
	}
	var h headerPath
	if tab := strings.IndexByte(s, '\t'); tab >= 0 {
		h.name, h.stamp = s[:tab], strings.TrimSpace(s[tab+1:])
		if m := endStampIndex(s); m != nil {
			git := strings.TrimRight(s[:m[0]], " ")
			if s[m[0]] == '\t' {
				git = s[:m[0]]
			}
			if git != h.name {
				return headerPath{}, errors.New("path can be read two ways: tabs before its timestamp")
			}
		}
	} else if strings.IndexByte(s, ' ') < 0 {
		h.name = s
	} else if m := spaceStamp.FindStringSubmatch(s); m != nil {
		h.name, h.stamp = m[1], strings.TrimSpace(s[len(m[1]):])
	} else {
		return headerPath{}, errSpacedPath
	}
	if h.name != "" && (h.name[0] == ' ' || h.name[len(h.name)-1] == ' ') {
		// GNU patch drops these spaces, git apply keeps them.
		return headerPath{}, errors.New("path starts or ends with a space")
	}
	h.null = h.name == "/dev/null"
	return h, checkPath(h.name)
}

// endStampIndex finds a timestamp at the end of s, as git apply does, or returns nil.
func endStampIndex(s string) []int {
	if s == "" || !isDigit(s[len(s)-1]) {
		return nil
	}
	return endStamp.FindStringIndex(s)
}

// stampEpoch tells whether a timestamp is the epoch, which diff -N writes for a file that does
// not exist and which GNU patch and git apply read as /dev/null. It is sure only of a timestamp
// far from the epoch or with a time zone: GNU patch reads one without a zone in its own zone.
func stampEpoch(stamp string) (epoch, sure bool) {
	m := isoStamp.FindStringSubmatch(stamp)
	if m == nil {
		return false, !strings.Contains(stamp, "1970") && !strings.Contains(stamp, "1969")
	}
	var day int
	switch m[1] {
	case "1970-01-01":
	case "1969-12-31":
		day = -1
	default:
		return false, true
	}
	if m[6] == "" {
		return false, false
	}
	secs := day*86400 + atoi(m[2])*3600 + atoi(m[3])*60 + atoi(m[4])
	zone := atoi(m[7])*3600 + atoi(m[8])*60
	if m[6] == "-" {
		zone = -zone
	}
	return secs-zone == 0 && strings.Trim(m[5], "0") == "", true
}

// atoi reads a string of digits already matched by a pattern.
func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

// parseGitPath reads a whole-line path, as in "rename from PATH": quoted, or taken as is.
func parseGitPath(s string) (string, error) {
	if s != "" && s[0] == '"' {
		name, rest, err := unquote(s)
		if err != nil {
			return "", err
		}
		if rest != "" {
			return "", errAfterQuote
		}
		return name, nil
	}
	if strings.ContainsAny(s, "\t\"") {
		// git quotes both; a patch that does not was not written by git.
		return "", errUnquoted
	}
	return s, checkPath(s)
}

// checkPath refuses a path no file system has.
func checkPath(s string) error {
	if s == "" {
		return errEmptyPath
	}
	if strings.IndexByte(s, 0) >= 0 {
		return errNULPath
	}
	return nil
}

// unquote reads the C-style quoted path at the start of s, as git and GNU diff write a path
// with special characters ("a/\303\251t\303\251.txt", "a/tab\there"), and returns the path and
// the text after the closing quote.
func unquote(s string) (name, rest string, err error) {
	var b []byte // nil until the first escape
	from := 1
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '"':
			if b == nil {
				name = s[1:i]
			} else {
				name = string(append(b, s[from:i]...))
			}
			return name, s[i+1:], checkPath(name)
		case '\\':
			b = append(b, s[from:i]...)
			if i+1 >= len(s) {
				return "", "", errors.New("unterminated quoted path")
			}
			i++
			switch c := s[i]; c {
			case 'a':
				b = append(b, '\a')
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'v':
				b = append(b, '\v')
			case '\\', '"':
				b = append(b, c)
			case '0', '1', '2', '3':
				if i+2 >= len(s) || !isOctal(s[i+1]) || !isOctal(s[i+2]) {
					return "", "", errors.New("bad octal escape in quoted path")
				}
				b = append(b, (c-'0')<<6|(s[i+1]-'0')<<3|(s[i+2]-'0'))
				i += 2
			default:
				return "", "", errors.New("bad escape " + strconv.QuoteRuneToASCII(rune(c)) + " in quoted path")
			}
			from = i + 1
		}
	}
	return "", "", errors.New("unterminated quoted path")
}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }
