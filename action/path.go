package action

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinks bounds the symbolic links followed while resolving one path, as the kernel does
// (40 on Linux); more is a loop, or near enough.
const maxLinks = 40

// ErrUnresolvable is matched by errors from paths that cannot be resolved (a symbolic link
// loop, an empty path).
var ErrUnresolvable = errors.New("path cannot be resolved")

// Resolver resolves the paths an action names the way the operating system will see them when
// it runs (A3): relative paths against a base directory, ~ as the session's home, and every
// symbolic link along the way followed, so that .., links and doubled slashes cannot dodge a
// rule. BURROW resolves lexically only; a link inside the workspace pointing at /etc would be
// judged as the workspace path.
//
// A Resolver reads the file system (lstat and readlink) and is safe for concurrent use; one
// returned by In is not, as its View is not.
type Resolver struct {
	// Root is the base of relative paths (the session's workspace). It must be absolute and
	// its own real path (see NewResolver): resolving starts there rather than at /.
	Root string
	// Home is what ~ and ~/ stand for.
	Home string

	view *View
}

// In returns a copy of r that looks at the file system through v, for one review.
func (r *Resolver) In(v *View) *Resolver {
	c := *r
	c.view = v
	return &c
}

// Resolve returns the real absolute path of p, relative to base (or to Root when base is
// empty): the real path of the longest existing prefix, then the rest lexically, with links
// met anywhere along the way followed.
func (r *Resolver) Resolve(base, p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("%w: the path is empty", ErrUnresolvable)
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		if r.Home == "" {
			return "", fmt.Errorf("%w: %s names the home directory, and the session has none", ErrUnresolvable, p)
		}
		p = r.Home + p[1:]
	}
	if !filepath.IsAbs(p) {
		if base == "" {
			base = r.Root
		}
		if !filepath.IsAbs(base) {
			return "", fmt.Errorf("%w: %s is relative and there is no absolute base to resolve it against", ErrUnresolvable, p)
		}
		p = base + "/" + p
	}
	if r.Root != "" && r.Root != "/" && strings.HasPrefix(p, r.Root) && (len(p) == len(r.Root) || p[len(r.Root)] == '/') {
		// The root is real already: walk only what lies below it.
		return r.view.realFrom(r.Root, p[len(r.Root):], p)
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%w: %s is not absolute", ErrUnresolvable, p)
	}
	return r.view.realFrom("/", p, p)
}

// NewResolver returns a Resolver for a workspace, which must exist.
func NewResolver(root, home string) (*Resolver, error) {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	abs, err := filepath.Abs(real)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return &Resolver{Root: abs, Home: home}, nil
}

// Real resolves an absolute path through the file system: each component in turn, following
// symbolic links wherever they are (so /work/link/../x goes to the parent of the link's
// target, as the kernel does), and past the first component that does not exist lexically.
func Real(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%w: %s is not absolute", ErrUnresolvable, p)
	}
	return (*View)(nil).realFrom("/", p, p)
}

// realFrom resolves rest below start, an existing real directory, looking through v; p is
// the whole path, for messages.
func (v *View) realFrom(start, rest, p string) (string, error) {
	cur := start
	links := 0
	exists := true // whether cur exists: below a missing directory nothing can be a link
	for rest != "" {
		var comp string
		comp, rest = nextComponent(rest)
		switch comp {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			if !exists {
				// The parent of a missing path may exist again; look at it afresh.
				_, err := v.lstat(cur)
				exists = err == nil
			}
			continue
		}
		next := joinWithin(p, cur, comp)
		if !exists {
			cur = next
			continue
		}
		mode, err := v.lstat(next)
		if err != nil {
			// Missing (or unreadable): the rest is lexical, except that a later ".." can come
			// back to a directory that exists.
			exists = false
			cur = next
			continue
		}
		if mode != syscall.S_IFLNK {
			cur = next
			continue
		}
		links++
		if links > maxLinks {
			return "", fmt.Errorf("%w: %s: more than %d symbolic links (a loop?)", ErrUnresolvable, p, maxLinks)
		}
		target, err := v.readlink(next)
		if err != nil {
			return "", fmt.Errorf("%w: %s: %v", ErrUnresolvable, next, err)
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		// The link's target is resolved in turn, then what followed the link.
		if rest == "" {
			rest = target
		} else {
			rest = target + "/" + rest
		}
	}
	return cur, nil
}

func nextComponent(s string) (comp, rest string) {
	s = strings.TrimLeft(s, "/")
	if i := strings.IndexByte(s, '/'); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

func join(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// joinWithin is join(dir, name), taken from whole without a new string where whole already
// holds dir, a slash and name at its start: while a path is walked component by component,
// and no link or ".." has led elsewhere, each prefix is a slice of the path.
func joinWithin(whole, dir, name string) string {
	k := len(dir)
	if k > len(whole) || whole[:k] != dir {
		return join(dir, name)
	}
	if dir != "/" {
		if k == len(whole) || whole[k] != '/' {
			return join(dir, name)
		}
		k++
	}
	if end := k + len(name); end <= len(whole) && whole[k:end] == name {
		return whole[:end]
	}
	return join(dir, name)
}
