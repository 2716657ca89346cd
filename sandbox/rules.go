package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wardenhq/warden/sandbox/internal/initproc"
)

// fsPlan is the file system the init process builds (see initproc.Plan).
type fsPlan = initproc.Plan

// fsLink is a symbolic link the init process makes in the new root.
type fsLink = initproc.Link

// ownPaths are the sandbox's own: never mounted from the host.
var ownPaths = []string{"/dev", "/proc"}

// homeSecrets are paths under a home directory that hold credentials or history. When a
// directory under a home is made readable (a toolchain on PATH, a --read-only path), those
// of them inside it are hidden, so ~/.cargo/bin on PATH does not hand out
// ~/.cargo/credentials.toml.
var homeSecrets = []string{
	".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".netrc", ".git-credentials",
	".npmrc", ".yarnrc", ".pypirc", ".gem/credentials", ".cargo/credentials", ".cargo/credentials.toml",
	".config/gcloud", ".config/gh", ".config/git/credentials", ".config/hub", ".vault-token",
	".password-store", ".local/share/keyrings", ".local/share/fish", ".terraform.d/credentials.tfrc.json",
	".bash_history", ".zsh_history", ".python_history", ".psql_history", ".mysql_history",
	".sqlite_history", ".node_repl_history", ".lesshst", ".viminfo",
}

// planFS decides what the command sees: the system paths, extraRO and the directories of
// pathVar (its PATH) read-only, the workspace read-write, minus the hidden paths. run is the
// run's own temporary directory.
func planFS(run, ws string, extraRO, hidden []string, pathVar string) (fsPlan, error) {
	p := fsPlan{Root: run, Tmp: filepath.Join(run, "tmp"), Workspace: ws}
	if ws == "/" {
		return fsPlan{}, errors.New("sandbox: the workspace cannot be /")
	}
	var hid []string
	for _, h := range slices.Concat(DefaultHidden, hidden) {
		if !filepath.IsAbs(h) {
			return fsPlan{}, fmt.Errorf("sandbox: hidden path %q is not absolute", h)
		}
		r, err := filepath.EvalSymlinks(h)
		if errors.Is(err, fs.ErrNotExist) {
			continue // nothing there to read
		}
		if err != nil {
			return fsPlan{}, fmt.Errorf("sandbox: hidden path %q: %w", h, err)
		}
		hid = append(hid, r)
	}
	if under(ws, hid) {
		return fsPlan{}, fmt.Errorf("sandbox: %s is hidden, so it cannot be the workspace", ws)
	}

	var ro []string
	var links []fsLink
	add := func(given string, explicit bool) error {
		r, err := filepath.EvalSymlinks(given)
		if err != nil {
			return nil // a path this machine does not have
		}
		if r == "/" {
			if explicit {
				return fmt.Errorf("sandbox: read-only path %q is the whole file system", given)
			}
			return nil
		}
		for _, own := range ownPaths {
			if r == own || strings.HasPrefix(r, own+"/") {
				if explicit {
					return fmt.Errorf("sandbox: read-only path %q: %s is the sandbox's own", given, own)
				}
				return nil
			}
		}
		if fi, err := os.Lstat(given); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			if t, err := os.Readlink(given); err == nil {
				links = append(links, fsLink{Path: given, Target: t})
			}
		}
		ro = append(ro, r)
		return nil
	}
	for _, s := range SystemReadOnly {
		add(s, false)
	}
	for _, e := range extraRO {
		if !filepath.IsAbs(e) {
			return fsPlan{}, fmt.Errorf("sandbox: read-only path %q is not absolute", e)
		}
		if err := add(e, true); err != nil {
			return fsPlan{}, err
		}
	}
	homes := homeDirs()
	for _, d := range pathDirs(pathVar, ws, homes) {
		add(d, false)
	}

	// Keep the outermost of nested read-only paths, none inside the workspace (it is
	// writable, and stays so) and none inside a hidden path.
	slices.Sort(ro)
	ro = slices.Compact(ro)
	for _, r := range ro {
		if under(r, p.Mounts) || under(r, []string{ws}) || under(r, hid) {
			continue
		}
		p.Mounts = append(p.Mounts, r)
	}
	// A link is made where nothing mounted holds its path already.
	for _, l := range links {
		if !under(l.Path, p.Mounts) && !under(l.Path, []string{ws}) && !under(l.Path, hid) {
			p.Links = append(p.Links, l)
		}
	}
	// Hide what lies inside something mounted; the rest is not there anyway.
	seen := map[string]bool{}
	hide := func(h string) {
		if !seen[h] && (strictlyUnder(h, p.Mounts) || strictlyUnder(h, []string{ws})) {
			seen[h] = true
			p.Hide = append(p.Hide, h)
		}
	}
	for _, h := range hid {
		hide(h)
	}
	for _, m := range p.Mounts {
		for _, home := range homes {
			if !under(m, []string{home}) {
				continue
			}
			for _, s := range homeSecrets {
				if h := filepath.Join(home, s); strictlyUnder(h, []string{m}) {
					if _, err := os.Lstat(h); err == nil {
						hide(h)
					}
				}
			}
		}
	}
	slices.Sort(p.Hide)
	return p, nil
}

// pathDirs returns the directories of a PATH that the command may need to read to run what
// is on it: each absolute directory holding an executable, outside the system paths and the
// workspace and not a home directory itself, and, where it is a bin, sbin or shims directory, the installation it belongs to
// (~/.pyenv for ~/.pyenv/shims, ~/go for ~/go/bin), unless that is a home directory itself.
func pathDirs(pathVar, ws string, homes []string) []string {
	var out []string
	for _, d := range filepath.SplitList(pathVar) {
		if !filepath.IsAbs(d) || under(d, systemDirs) {
			continue // a system path, readable anyway
		}
		r, err := filepath.EvalSymlinks(d)
		if err != nil || r == "/" || r == "/home" || slices.Contains(homes, r) || under(r, systemDirs) || under(r, []string{ws}) || !holdsExecutable(r) {
			continue // a home itself holds far more than programs
		}
		out = append(out, r)
		switch filepath.Base(r) {
		case "bin", "sbin", "shims":
		default:
			continue
		}
		parent := filepath.Dir(r)
		if parent == "/" || parent == "/home" || slices.Contains(homes, parent) || under(ws, []string{parent}) {
			continue
		}
		out = append(out, parent)
	}
	return out
}

// systemDirs are SystemReadOnly's directories that hold programs: a PATH entry under one
// needs nothing more.
var systemDirs = []string{"/usr", "/bin", "/sbin"}

// holdsExecutable reports whether dir holds at least one executable file. It reads the
// directory a few entries at a time, since the first is usually one.
func holdsExecutable(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	for {
		entries, err := f.ReadDir(16)
		for _, e := range entries {
			fi, err := os.Stat(filepath.Join(dir, e.Name()))
			if err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return true
			}
		}
		if err != nil {
			return false
		}
	}
}

// homeDirs are the directories that are somebody's home: /root, those under /home, and
// $HOME.
func homeDirs() []string {
	homes := []string{"/root"}
	if es, err := os.ReadDir("/home"); err == nil {
		for _, e := range es {
			homes = append(homes, filepath.Join("/home", e.Name()))
		}
	}
	if h := os.Getenv("HOME"); filepath.IsAbs(h) && h != "/" {
		if r, err := filepath.EvalSymlinks(h); err == nil {
			homes = append(homes, r)
		}
	}
	return homes
}

// under reports whether p is one of dirs or lies below one.
func under(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || d == "/" || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// strictlyUnder reports whether p lies below one of dirs (not equal to it).
func strictlyUnder(p string, dirs []string) bool {
	for _, d := range dirs {
		if p != d && (d == "/" || strings.HasPrefix(p, d+"/")) {
			return true
		}
	}
	return false
}
