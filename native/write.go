package native

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/wardenhq/warden/action"
)

// maxEdit is the largest file files_edit reads whole.
const maxEdit = 64 << 20

func (e *Executor) write(a *action.Action) (Result, error) {
	abs, rel, err := e.path(a, "path")
	if err != nil {
		return Result{}, err
	}
	if rel == "." {
		return Result{}, failf("the workspace is a directory: name a file to write")
	}
	content := a.Inputs["content"]
	root, err := e.openRoot()
	if err != nil {
		return Result{}, err
	}
	defer root.Close()
	if parent := filepath.Dir(rel); parent != "." {
		// Through the root, so no directory is made outside the workspace.
		if err := root.MkdirAll(parent, 0o755); err != nil {
			return Result{}, fsFailure("create the directories of", rel, err)
		}
	}
	dir, name, err := e.parent(root, abs, rel)
	if err != nil {
		return Result{}, err
	}
	defer dir.Close()
	created, err := writeAtomic(dir, name, rel, []byte(content), nil)
	if err != nil {
		return Result{}, err
	}
	verb := "wrote"
	if created {
		verb = "created"
	}
	return Result{Text: fmt.Sprintf("%s %s (%d bytes)", verb, rel, len(content)), Structured: map[string]any{
		"path": rel, "bytes": len(content), "created": created,
	}}, nil
}

func (e *Executor) edit(a *action.Action) (Result, error) {
	abs, rel, err := e.path(a, "path")
	if err != nil {
		return Result{}, err
	}
	old, repl := a.Inputs["old"], a.Inputs["new"]
	if old == "" {
		return Result{}, failf("the old text is empty: give the exact text to replace")
	}
	if old == repl {
		return Result{}, failf("the old and the new text are the same: there is nothing to change")
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
	if st.Size() > maxEdit {
		f.Close()
		return Result{}, failf("%s is too large to edit (%d bytes; the limit is %d)", rel, st.Size(), maxEdit)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxEdit+1))
	f.Close()
	if err != nil {
		return Result{}, fsFailure("read", rel, err)
	}
	content := string(b)
	at, n := occurrences(content, old)
	switch {
	case n == 0:
		return Result{}, failf("the old text was not found in %s (it must match exactly, whitespace and line ends included)", rel)
	case n > 1:
		return Result{}, failf("the old text occurs %d times in %s; it must occur exactly once: include more of the text around it", n, rel)
	}
	updated := content[:at] + repl + content[at+len(old):]
	if _, err := writeAtomic(dir, name, rel, []byte(updated), st); err != nil {
		return Result{}, err
	}
	line := strings.Count(content[:at], "\n") + 1
	return Result{Text: fmt.Sprintf("edited %s: replaced 1 occurrence at line %d", rel, line), Structured: map[string]any{
		"path": rel, "line": line,
	}}, nil
}

// occurrences returns where sub first occurs in s and how many times it occurs, overlapping
// occurrences included: "aa" occurs twice in "aaa", and an edit of it would be ambiguous.
func occurrences(s, sub string) (first, n int) {
	first = -1
	for i := 0; i <= len(s); {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			break
		}
		if first < 0 {
			first = i + j
		}
		n++
		i += j + 1
	}
	return first, n
}

// writeAtomic replaces the file name in dir with data: a temporary file in the same directory,
// synced, then renamed over it, so a reader sees the old content or the new, never a part. An
// existing file keeps its permission bits (setuid, setgid and sticky bits are dropped, and the
// owner is the writer's); a hard link to it keeps the old content. A rename replaces a link
// at name rather than following it. When was is set (an edit), the file must still be the one
// read: changed since, the write is refused rather than losing the other change. It reports
// whether the file was created.
func writeAtomic(dir *os.Root, name, rel string, data []byte, was fs.FileInfo) (created bool, err error) {
	mode := fs.FileMode(0o644)
	st, err := dir.Lstat(name)
	switch {
	case err == nil:
		if err := wantRegular(st, rel); err != nil {
			return false, err
		}
		if was != nil && (!os.SameFile(st, was) || st.Size() != was.Size() || !st.ModTime().Equal(was.ModTime())) {
			return false, failf("%s changed while it was being edited; call again", rel)
		}
		mode = st.Mode().Perm()
	case errors.Is(err, fs.ErrNotExist) && was == nil:
		created = true
	default:
		return false, fsFailure("write", rel, err)
	}
	tmp, err := tempName(name)
	if err != nil {
		return false, err
	}
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return false, fsFailure("write", rel, err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			dir.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return false, fsFailure("write", rel, err)
	}
	if !created {
		// The umask narrowed the mode the file was created with.
		if err := f.Chmod(mode); err != nil {
			return false, fsFailure("write", rel, err)
		}
	}
	if err := f.Sync(); err != nil {
		return false, fsFailure("write", rel, err)
	}
	if err := f.Close(); err != nil {
		return false, fsFailure("write", rel, err)
	}
	if err := dir.Rename(tmp, name); err != nil {
		return false, fsFailure("write", rel, err)
	}
	ok = true
	if d, err := dir.Open("."); err == nil {
		d.Sync() // the rename itself; a failure here loses nothing already visible
		d.Close()
	}
	return created, nil
}

// tempName is a fresh hidden name next to name, short enough for any name.
func tempName(name string) (string, error) {
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("native: random name: %w", err)
	}
	if len(name) > 200 {
		name = name[:200]
	}
	return "." + name + ".warden-" + hex.EncodeToString(r[:]) + ".tmp", nil
}

func (e *Executor) remove(a *action.Action) (Result, error) {
	abs, rel, err := e.path(a, "path")
	if err != nil {
		return Result{}, err
	}
	if rel == "." {
		return Result{}, failf("files_delete cannot delete the workspace itself")
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
		return Result{}, fsFailure("delete", rel, err)
	}
	kind := typeName(st.Mode())
	if err := dir.Remove(name); err != nil {
		if st.IsDir() && (errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST)) {
			return Result{}, failf("%s is a directory that is not empty: files_delete removes files and empty directories only, never a tree", rel)
		}
		return Result{}, fsFailure("delete", rel, err)
	}
	what := "deleted " + rel
	if st.IsDir() {
		what = "deleted the empty directory " + rel
	}
	return Result{Text: what, Structured: map[string]any{"path": rel, "type": kind}}, nil
}
