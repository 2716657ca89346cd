//go:build linux

package sandbox

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cgroupRoot is where the cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// A pidsGroup is a cgroup of its own for one run, with pids.max set: however the command
// forks, the whole tree holds at most that many processes and threads, and a fork beyond it
// fails (EAGAIN) instead of filling the host's process table.
type pidsGroup struct {
	dir string
	max int
}

// newPidsGroup makes a cgroup with pids.max = max (no limit if it is 0) under this process's
// own cgroup: in the unified hierarchy (cgroup v2) when the pids controller is enabled there,
// else in the v1 pids hierarchy. An error means neither could be used (no permission, no pids controller).
func newPidsGroup(max int) (*pidsGroup, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	name := "warden-sandbox-" + hex.EncodeToString(b[:])
	var errs []error
	for _, parent := range pidsParents() {
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			errs = append(errs, err)
			continue
		}
		g := &pidsGroup{dir: dir}
		if err := g.setMax(max); err != nil {
			os.Remove(dir)
			errs = append(errs, err)
			continue
		}
		return g, nil
	}
	if len(errs) == 0 {
		return nil, errors.New("no cgroup with the pids controller is mounted")
	}
	return nil, errors.Join(errs...)
}

// pidsParents are the cgroups a run's group may be made in, best first: this process's own
// cgroup in the unified hierarchy, if the pids controller is delegated to its children, then
// its cgroup in the v1 pids hierarchy.
func pidsParents() []string {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	defer f.Close()
	var unified, v1 string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			unified = parts[2]
		case containsWord(parts[1], "pids"):
			v1 = parts[2]
		}
	}
	var out []string
	if unified != "" {
		base := cgroupRoot
		if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err != nil {
			base = filepath.Join(cgroupRoot, "unified") // a hybrid layout
		}
		parent := filepath.Join(base, unified)
		if ctl, err := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control")); err == nil && containsWord(strings.ReplaceAll(string(ctl), " ", ","), "pids") {
			out = append(out, parent)
		}
	}
	if v1 != "" {
		out = append(out, filepath.Join(cgroupRoot, "pids", v1))
	}
	return out
}

func containsWord(list, word string) bool {
	for _, w := range strings.Split(strings.TrimSpace(list), ",") {
		if w == word {
			return true
		}
	}
	return false
}

// setMax sets the group's limit (none if max is 0).
func (g *pidsGroup) setMax(max int) error {
	v := "max"
	if max > 0 {
		v = strconv.Itoa(max)
	}
	if err := os.WriteFile(filepath.Join(g.dir, "pids.max"), []byte(v), 0); err != nil {
		return err
	}
	g.max = max
	return nil
}

// add moves a process into the group; its children are born there.
func (g *pidsGroup) add(pid int) error {
	return os.WriteFile(filepath.Join(g.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
}

// hitLimit reports whether a fork was refused at pids.max.
func (g *pidsGroup) hitLimit() bool {
	b, err := os.ReadFile(filepath.Join(g.dir, "pids.events"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "max "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n > 0
		}
	}
	return false
}

// remove deletes the group once its processes are gone (the kernel may take a moment to
// reap a PID namespace that was just killed).
func (g *pidsGroup) remove() error {
	var err error
	wait := 100 * time.Microsecond
	for deadline := time.Now().Add(2 * time.Second); ; {
		if err = os.Remove(g.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(wait)
		wait = min(2*wait, 10*time.Millisecond)
	}
	return fmt.Errorf("sandbox: removing cgroup %s: %w", g.dir, err)
}
