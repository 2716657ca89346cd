package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// rules are the paths the command may use, as the init process applies them with Landlock.
// Every path is absolute, symlink-free and exists.
type rules struct {
	RODirs  []string `json:"ro_dirs,omitempty"`
	RWDirs  []string `json:"rw_dirs,omitempty"`
	ROFiles []string `json:"ro_files,omitempty"`
	RWFiles []string `json:"rw_files,omitempty"`
}

// Device files every command gets: the sinks read-write, the random sources read-only.
var (
	rwDevices = []string{"/dev/null", "/dev/zero", "/dev/full"}
	roDevices = []string{"/dev/random", "/dev/urandom"}
)

// buildRules computes the rules for a run: the system paths (and extra) read-only, the
// writable directories read-write, minus the hidden paths.
func buildRules(writable, extraRO, hidden []string) (rules, error) {
	var hid []string
	for _, h := range slices.Concat(DefaultHidden, hidden) {
		if !filepath.IsAbs(h) {
			return rules{}, fmt.Errorf("sandbox: hidden path %q is not absolute", h)
		}
		r, err := filepath.EvalSymlinks(h)
		if errors.Is(err, fs.ErrNotExist) {
			continue // nothing there to read
		}
		if err != nil {
			return rules{}, fmt.Errorf("sandbox: hidden path %q: %w", h, err)
		}
		hid = append(hid, r)
	}
	var out rules
	for _, w := range writable {
		if isHidden(w, hid) {
			return rules{}, fmt.Errorf("sandbox: %s is hidden, so it cannot be the workspace", w)
		}
		out.RWDirs, out.RWFiles = expand(w, hid, out.RWDirs, out.RWFiles)
	}
	for _, p := range slices.Concat(SystemReadOnly, extraRO) {
		if !filepath.IsAbs(p) {
			return rules{}, fmt.Errorf("sandbox: read-only path %q is not absolute", p)
		}
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue // a system path this machine does not have
		}
		out.RODirs, out.ROFiles = expand(r, hid, out.RODirs, out.ROFiles)
	}
	for _, d := range rwDevices {
		if _, err := os.Stat(d); err == nil && !isHidden(d, hid) {
			out.RWFiles = append(out.RWFiles, d)
		}
	}
	for _, d := range roDevices {
		if _, err := os.Stat(d); err == nil && !isHidden(d, hid) {
			out.ROFiles = append(out.ROFiles, d)
		}
	}
	return out, nil
}

// isHidden reports whether p is a hidden path or below one.
func isHidden(p string, hidden []string) bool {
	for _, h := range hidden {
		if p == h || strings.HasPrefix(p, h+"/") || h == "/" {
			return true
		}
	}
	return false
}

// expand adds root to dirs (or files, for a file), unless it is hidden; when a hidden path
// lies below root, it adds root's entries one by one instead, recursively, so that the hidden
// path gets no rule. Symbolic links among the entries are skipped: a link is followed to its
// target, whose own rules apply.
func expand(root string, hidden []string, dirs, files []string) ([]string, []string) {
	if isHidden(root, hidden) {
		return dirs, files
	}
	fi, err := os.Stat(root)
	if err != nil {
		return dirs, files
	}
	if !fi.IsDir() {
		return dirs, append(files, root)
	}
	below := false
	for _, h := range hidden {
		if strings.HasPrefix(h, root+"/") || root == "/" {
			below = true
			break
		}
	}
	if !below {
		return append(dirs, root), files
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return dirs, files
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		dirs, files = expand(filepath.Join(root, e.Name()), hidden, dirs, files)
	}
	return dirs, files
}
