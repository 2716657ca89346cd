package native

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wardenhq/warden/action"
)

const (
	// maxEntries caps files_list and files_find.
	maxEntries = 1000
	// maxMatches caps files_search, and maxMatchText the text shown of one matching line.
	maxMatches   = 1000
	maxMatchText = 300
	// sniffSize is how much of a file is looked at to tell binary from text (as git does: a
	// NUL byte in the first 8000 bytes).
	sniffSize = 8000
	// maxLine is how much of one line files_search matches against; the rest is skipped.
	maxLine = 64 << 10
)

// openRegular opens the regular file name in dir for reading. It is lstat'ed first and
// fstat'ed once open, and must be the same file both times: a link or a FIFO swapped in after
// the review is refused, never followed or blocked on.
func openRegular(dir *os.Root, name, rel string) (*os.File, fs.FileInfo, error) {
	st, err := dir.Lstat(name)
	if err != nil {
		return nil, nil, fsFailure("read", rel, err)
	}
	if err := wantRegular(st, rel); err != nil {
		return nil, nil, err
	}
	f, err := dir.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fsFailure("read", rel, err)
	}
	fst, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fsFailure("read", rel, err)
	}
	if !os.SameFile(st, fst) {
		f.Close()
		return nil, nil, failf("%s changed while it was being opened; call again", rel)
	}
	return f, fst, nil
}

// wantRegular fails for anything but a regular file, saying what it is instead.
func wantRegular(st fs.FileInfo, rel string) error {
	switch m := st.Mode(); {
	case m.IsRegular():
		return nil
	case m.IsDir():
		return failf("%s is a directory, not a file: use files_list to see what it holds", show(rel))
	case m&fs.ModeSymlink != 0:
		// The review resolved every link on the path, so a link here was made after it.
		return failf("%s is now a symbolic link: it changed after it was reviewed; call again", rel)
	default:
		return failf("%s is not a regular file (it is a %s)", rel, typeName(m))
	}
}

// wantDir fails unless rel is a directory, with a hint for the model when it is a file.
func wantDir(root *os.Root, rel, verb, hint string) error {
	st, err := root.Lstat(rel)
	switch {
	case err != nil:
		return fsFailure(verb, rel, err)
	case st.IsDir():
		return nil
	case st.Mode()&fs.ModeSymlink != 0:
		return failf("%s is now a symbolic link: it changed after it was reviewed; call again", rel)
	}
	return failf("%s is not a directory (it is a %s): %s", rel, typeName(st.Mode()), hint)
}

// typeName names the type of a file for the model.
func typeName(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "char-device"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "other"
}

func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), sniffSize)], 0) >= 0
}

// cutUTF8 cuts b to at most n bytes without splitting a UTF-8 sequence.
func cutUTF8(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	i := n
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(b[i]) {
		i--
	}
	if i == 0 || i == n-utf8.UTFMax {
		i = n // not UTF-8 there anyway
	}
	return b[:i]
}

func text(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }

func (e *Executor) read(a *action.Action) (Result, error) {
	abs, rel, err := e.path(a, "path")
	if err != nil {
		return Result{}, err
	}
	root, err := e.openRoot()
	if err != nil {
		return Result{}, err
	}
	defer root.Close()
	dir, name, err := e.parent(root, abs, rel)
	if err != nil {
		return Result{}, err
	}
	defer dir.Close()
	f, st, err := openRegular(dir, name, rel)
	if err != nil {
		return Result{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, e.maxRead+1))
	if err != nil {
		return Result{}, fsFailure("read", rel, err)
	}
	size := max(st.Size(), int64(len(b)))
	data := map[string]any{"path": rel, "size": size}
	if isBinary(b) {
		data["binary"] = true
		return Result{Text: fmt.Sprintf("%s is a binary file of %d bytes; its content is not shown", rel, size), Structured: data}, nil
	}
	truncated := int64(len(b)) > e.maxRead
	data["truncated"] = truncated
	if len(b) == 0 {
		return Result{Text: fmt.Sprintf("(%s is empty)", rel), Structured: data}, nil
	}
	if !truncated {
		return Result{Text: text(b), Structured: data}, nil
	}
	b = cutUTF8(b, int(e.maxRead))
	return Result{Text: fmt.Sprintf("%s\n\n[truncated: %s holds %d bytes; the first %d are shown]", text(b), rel, size, len(b)),
		Structured: data}, nil
}

func (e *Executor) list(a *action.Action) (Result, error) {
	abs, rel, err := e.path(a, "path")
	if err != nil {
		return Result{}, err
	}
	root, err := e.openRoot()
	if err != nil {
		return Result{}, err
	}
	defer root.Close()
	if err := wantDir(root, rel, "list", "use files_read or files_inspect"); err != nil {
		return Result{}, err
	}
	d, err := e.dir(root, abs, rel)
	if err != nil {
		return Result{}, err
	}
	defer d.Close()
	f, err := d.Open(".")
	if err != nil {
		return Result{}, fsFailure("list", rel, err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return Result{}, fsFailure("list", rel, err)
	}
	slices.Sort(names)
	total := len(names)
	names = names[:min(total, maxEntries)]
	var b strings.Builder
	entries := make([]map[string]any, 0, len(names))
	for _, n := range names {
		st, err := d.Lstat(n)
		if err != nil {
			continue // gone since it was listed
		}
		kind := typeName(st.Mode())
		entry := map[string]any{"name": n, "type": kind}
		switch kind {
		case "file":
			entry["size"] = st.Size()
			fmt.Fprintf(&b, "%s (file, %d bytes)\n", n, st.Size())
		case "directory":
			fmt.Fprintf(&b, "%s/ (directory)\n", n)
		case "symlink":
			target, _ := d.Readlink(n)
			entry["target"] = target
			fmt.Fprintf(&b, "%s -> %s (symlink)\n", n, target)
		default:
			fmt.Fprintf(&b, "%s (%s)\n", n, kind)
		}
		entries = append(entries, entry)
	}
	truncated := total > len(names)
	switch {
	case total == 0:
		b.WriteString("(empty directory)\n")
	case truncated:
		fmt.Fprintf(&b, "[showing the first %d of %d entries, by name]\n", len(names), total)
	}
	return Result{Text: b.String(), Structured: map[string]any{
		"path": rel, "entries": entries, "total": total, "truncated": truncated,
	}}, nil
}

func (e *Executor) inspect(a *action.Action) (Result, error) {
	abs, rel, err := e.path(a, "path")
	if err != nil {
		return Result{}, err
	}
	root, err := e.openRoot()
	if err != nil {
		return Result{}, err
	}
	defer root.Close()
	dir, name, err := e.parent(root, abs, rel)
	if err != nil {
		return Result{}, err
	}
	defer dir.Close()
	st, err := dir.Lstat(name)
	if err != nil {
		return Result{}, fsFailure("inspect", rel, err)
	}
	data := map[string]any{
		"path":    rel,
		"type":    typeName(st.Mode()),
		"size":    st.Size(),
		"mode":    fmt.Sprintf("%04o", st.Mode().Perm()),
		"modTime": st.ModTime().UTC().Format(time.RFC3339),
	}
	var b strings.Builder
	// The review resolved every link, so Paths names the link's target: the link itself is at
	// the path as given, which is looked at (metadata only) when it lies in the workspace.
	if link, target, ok := e.linkAt(root, a.Inputs["path"], abs); ok {
		data["link"], data["target"] = link, target
		fmt.Fprintf(&b, "%s is a symbolic link to %s, which resolves to %s\n", link, target, show(rel))
	}
	fmt.Fprintf(&b, "path: %s\ntype: %s\n", show(rel), data["type"])
	if st.Mode().IsRegular() {
		fmt.Fprintf(&b, "size: %d bytes\n", st.Size())
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		target, _ := dir.Readlink(name)
		data["target"] = target
		fmt.Fprintf(&b, "target: %s\n", target)
	}
	fmt.Fprintf(&b, "mode: %s (%s)\nmodified: %s\n", st.Mode(), data["mode"], data["modTime"])
	return Result{Text: b.String(), Structured: data}, nil
}

// linkAt reports whether the path the model gave (before resolution) is a symbolic link
// inside the workspace, with the link's workspace-relative path and its target.
func (e *Executor) linkAt(root *os.Root, given, resolved string) (link, target string, ok bool) {
	if given == "" || strings.HasPrefix(given, "~") {
		return "", "", false
	}
	if !filepath.IsAbs(given) {
		given = filepath.Join(e.ws, given)
	}
	given = filepath.Clean(given)
	rel, inside := e.rel(given)
	if given == resolved || !inside || rel == "." {
		return "", "", false
	}
	st, err := root.Lstat(rel)
	if err != nil || st.Mode()&fs.ModeSymlink == 0 {
		return "", "", false
	}
	target, err = root.Readlink(rel)
	return rel, target, err == nil
}

// globRest is what a files_find pattern matches below its literal directory: the review
// resolved that directory (Paths["scope"]) as action.Normalize splits it.
func globRest(pattern string) string {
	i := strings.IndexAny(pattern, "*?[{")
	if i < 0 {
		i = len(pattern)
	}
	return pattern[strings.LastIndexByte(pattern[:i], '/')+1:]
}

// errEnough stops a walk that has found as much as it returns.
var errEnough = errors.New("enough")

func (e *Executor) find(ctx context.Context, a *action.Action) (Result, error) {
	abs, rel, err := e.path(a, "scope")
	if err != nil {
		return Result{}, err
	}
	pattern := a.Inputs["pattern"]
	rest := globRest(pattern)
	if slices.Contains(strings.Split(rest, "/"), "..") {
		return Result{}, failf("the pattern %q has .. after its first wildcard: name the directory before the wildcards instead", pattern)
	}
	if rest != "" && !doublestar.ValidatePattern(rest) {
		return Result{}, failf("the pattern %q is not a valid glob", pattern)
	}
	root, err := e.openRoot()
	if err != nil {
		return Result{}, err
	}
	defer root.Close()
	if err := wantDir(root, rel, "search", "name a directory before the wildcards"); err != nil {
		return Result{}, err
	}
	d, err := e.dir(root, abs, rel)
	if err != nil {
		return Result{}, err
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	var matches []string
	if rest == "" {
		matches = []string{rel + "/"}
	} else {
		err = doublestar.GlobWalk(d.FS(), rest, func(p string, de fs.DirEntry) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if len(matches) == maxEntries {
				return errEnough
			}
			m := path.Join(rel, p)
			if de.IsDir() {
				m += "/"
			}
			matches = append(matches, m)
			return nil
		}, doublestar.WithNoFollow())
	}
	var note string
	switch {
	case errors.Is(err, errEnough):
		note = fmt.Sprintf("[more than %d matches; the first %d found are shown: narrow the pattern]\n", maxEntries, maxEntries)
	case ctx.Err() != nil:
		note = "[the search stopped before it was complete: it took too long]\n"
	case err != nil:
		return Result{}, failf("cannot find %q: %v", pattern, err)
	}
	slices.Sort(matches)
	var b strings.Builder
	for _, m := range matches {
		b.WriteString(m)
		b.WriteByte('\n')
	}
	if len(matches) == 0 {
		fmt.Fprintf(&b, "no files match %q\n", pattern)
	}
	b.WriteString(note)
	return Result{Text: b.String(), Structured: map[string]any{
		"matches": matches, "truncated": note != "",
	}}, nil
}

// match is one line files_search found.
type match struct {
	file string
	line int
	text string
}

func (e *Executor) search(ctx context.Context, a *action.Action) (Result, error) {
	abs, rel, err := e.path(a, "path")
	if err != nil {
		return Result{}, err
	}
	query := a.Inputs["query"]
	if query == "" {
		return Result{}, failf("the query is empty: say what to search for")
	}
	re, err := regexp.Compile(query)
	literal := err != nil
	if literal {
		// Not a regular expression: searched for as written.
		re = regexp.MustCompile(regexp.QuoteMeta(query))
	}
	root, err := e.openRoot()
	if err != nil {
		return Result{}, err
	}
	defer root.Close()
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()

	var found []match
	full := false
	emit := func(file string) func(int, []byte) bool {
		return func(n int, line []byte) bool {
			if len(found) == maxMatches {
				full = true
				return false
			}
			t := cutUTF8(line, maxMatchText)
			s := text(t)
			if len(t) < len(line) {
				s += "…"
			}
			found = append(found, match{file: file, line: n, text: s})
			return true
		}
	}
	st, err := root.Lstat(rel)
	if err != nil {
		return Result{}, fsFailure("search", rel, err)
	}
	if !st.IsDir() {
		dir, name, err := e.parent(root, abs, rel)
		if err != nil {
			return Result{}, err
		}
		defer dir.Close()
		f, _, err := openRegular(dir, name, rel)
		if err != nil {
			return Result{}, err
		}
		binary, err := searchFile(ctx, f, re, emit(rel))
		f.Close()
		if err != nil {
			return Result{}, fsFailure("search", rel, err)
		}
		if binary {
			return Result{}, failf("%s is a binary file: files_search looks in text files only", rel)
		}
	} else {
		d, err := e.dir(root, abs, rel)
		if err != nil {
			return Result{}, err
		}
		defer d.Close()
		fsys := d.FS()
		// The walk's function skips what it cannot read, so it fails only when the context
		// ends, which the note below reports.
		_ = fs.WalkDir(fsys, ".", func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return nil // unreadable: skipped
			}
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			if de.IsDir() {
				if de.Name() == ".git" {
					return fs.SkipDir
				}
				return nil
			}
			if !de.Type().IsRegular() {
				return nil // links are not followed, devices and FIFOs not opened
			}
			f, err := fsys.Open(p)
			if err != nil {
				return nil
			}
			_, err = searchFile(ctx, f, re, emit(path.Join(rel, p)))
			f.Close()
			if full {
				return fs.SkipAll
			}
			if err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
			return nil
		})
	}
	var b strings.Builder
	results := make([]map[string]any, len(found))
	for i, m := range found {
		fmt.Fprintf(&b, "%s:%d: %s\n", strings.TrimPrefix(m.file, "./"), m.line, m.text)
		results[i] = map[string]any{"file": strings.TrimPrefix(m.file, "./"), "line": m.line, "text": m.text}
	}
	if len(found) == 0 {
		fmt.Fprintf(&b, "no matches for %q in %s\n", query, show(rel))
	}
	truncated := full || ctx.Err() != nil
	switch {
	case full:
		fmt.Fprintf(&b, "[more than %d matching lines; the first %d found are shown: narrow the query or the path]\n", maxMatches, maxMatches)
	case ctx.Err() != nil:
		b.WriteString("[the search stopped before it was complete: it took too long]\n")
	}
	if literal {
		b.WriteString("[the query is not a valid regular expression, so it was searched for as plain text]\n")
	}
	return Result{Text: b.String(), Structured: map[string]any{
		"matches": results, "truncated": truncated, "literal": literal,
	}}, nil
}

// searchFile calls emit with each line of r that re matches (numbered from 1, without its line
// end), until emit returns false. A file with a NUL byte near its start is binary and is not
// searched.
func searchFile(ctx context.Context, r io.Reader, re *regexp.Regexp, emit func(int, []byte) bool) (binary bool, err error) {
	br := bufio.NewReaderSize(r, maxLine)
	head, err := br.Peek(sniffSize)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return false, err
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return true, nil
	}
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if len(line) == 0 && err == io.EOF {
			return false, nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			// A very long line: matched on its first maxLine bytes, the rest skipped.
			line = bytes.Clone(line)
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if re.Match(line) && !emit(n, line) {
			return false, nil
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if n%4096 == 0 && ctx.Err() != nil {
			return false, ctx.Err()
		}
	}
}
