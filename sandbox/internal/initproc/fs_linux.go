//go:build linux

package initproc

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// rules are the paths the command may use, as the init process applies them with Landlock
// inside the root it built. Every path is absolute and symlink-free.
type rules struct {
	RODirs  []string
	RWDirs  []string
	RWFiles []string
}

// The device files of the sandbox's /dev, bound from the host's: the sinks read-write, the
// random sources read-only.
var (
	rwDevices = []string{"null", "zero", "full"}
	roDevices = []string{"random", "urandom"}
)

// Sizes of the sandbox's own file systems. The root only holds mount points and links; /run
// and /dev/shm are for the small files programs keep there.
const (
	rootTmpfs = "mode=0755,size=1m"
	runTmpfs  = "mode=0755,size=16m"
	shmTmpfs  = "mode=1777,size=64m"
	devTmpfs  = "mode=0755,size=64k"
)

// buildRoot makes the plan's file system the root of this process (and so of the command it
// starts): a tmpfs with the workspace, the read-only paths, a private /tmp, /run and /dev/shm,
// a minimal /dev and a /proc of the sandbox's PID namespace, then pivot_root into it and the
// host's root detached. It must run in a mount namespace of its own. It returns the Landlock
// rules for what it built.
//
// Paths the command can write (the workspace) may change while this runs, from another
// sandbox of the same workspace: mounts inside them are placed through descriptors opened
// without following symbolic links, so a link swapped in cannot send a mount elsewhere.
func buildRoot(p Plan) (rules, error) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return rules{}, fmt.Errorf("making the mounts private: %w", err)
	}
	// The root's tmpfs covers the run's directory, which holds the host directory of the
	// sandbox's /tmp: a copy of that directory's mount is taken first, and attached inside.
	tmp, err := unix.OpenTree(unix.AT_FDCWD, p.Tmp, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return rules{}, fmt.Errorf("copying the mount of /tmp: %w", err)
	}
	defer unix.Close(tmp)
	if err := unix.Mount("tmpfs", p.Root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, rootTmpfs); err != nil {
		return rules{}, fmt.Errorf("mounting the root: %w", err)
	}
	root, err := unix.Open(p.Root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return rules{}, fmt.Errorf("opening the root: %w", err)
	}
	defer unix.Close(root)
	b := builder{root: root, rootPath: p.Root}
	r := rules{RODirs: []string{"/"}, RWDirs: []string{p.Workspace, "/tmp", "/run", "/dev/shm"}}

	// The sandbox's own: /tmp, /run (and /var/run, /var/tmp), /dev, /proc.
	if err := b.attach(tmp, "/tmp", true, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV); err != nil {
		return rules{}, err
	}
	if err := b.mountPath("tmpfs", "/run", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, runTmpfs); err != nil {
		return rules{}, err
	}
	for _, l := range []Link{{"/var/run", "/run"}, {"/var/tmp", "/tmp"}} {
		if err := b.link(l); err != nil {
			return rules{}, err
		}
	}
	pts, err := b.dev()
	if err != nil {
		return rules{}, err
	}
	if pts {
		r.RWDirs = append(r.RWDirs, "/dev/pts")
	}
	for _, d := range rwDevices {
		r.RWFiles = append(r.RWFiles, "/dev/"+d)
	}
	if err := b.mkdirAll("/proc"); err != nil {
		return rules{}, err
	}
	// Where procfs cannot be mounted (some container runtimes refuse it in a user namespace),
	// /proc stays an empty directory and the sandbox runs without it.
	unix.Mount("proc", p.Root+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")

	// The host's paths: read-only ones, then the workspace, outermost first.
	for _, m := range p.Mounts {
		if err := b.bind(m, false); err != nil {
			return rules{}, err
		}
	}
	if err := b.bind(p.Workspace, true); err != nil {
		return rules{}, err
	}
	for _, l := range p.Links {
		if err := b.link(l); err != nil {
			return rules{}, err
		}
	}
	if err := b.hide(p.Hide); err != nil {
		return rules{}, err
	}
	if err := setAttr(root, false, unix.MOUNT_ATTR_RDONLY); err != nil {
		return rules{}, fmt.Errorf("making the root read-only: %w", err)
	}

	// The trick of runc and LXC: with the new root as the working directory, pivot_root(".",
	// ".") stacks the old root on top of it, and detaching "." leaves the new root alone.
	if err := unix.Fchdir(root); err != nil {
		return rules{}, fmt.Errorf("entering the root: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return rules{}, fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return rules{}, fmt.Errorf("detaching the host's root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return rules{}, err
	}
	return r, nil
}

// builder places mounts inside the new root (a descriptor and its host path) before it
// becomes the root.
type builder struct {
	root     int
	rootPath string
}

// open opens path (absolute, as inside the new root) beneath the root as an O_PATH
// descriptor, following no symbolic link.
func (b builder) open(path string, flags uint64) (int, error) {
	rel := strings.TrimPrefix(path, "/")
	if rel == "" {
		rel = "."
	}
	return unix.Openat2(b.root, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC | flags,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// mkdirAll makes the directory path inside the new root, and any parent it lacks, following
// no symbolic link; existing directories (the host's, inside a mount) are used as they are.
func (b builder) mkdirAll(path string) error {
	dir, err := unix.Dup(b.root)
	if err != nil {
		return err
	}
	for _, name := range strings.Split(strings.Trim(path, "/"), "/") {
		if name == "" {
			continue
		}
		how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
		next, err := unix.Openat2(dir, name, how)
		if errors.Is(err, unix.ENOENT) {
			if err = unix.Mkdirat(dir, name, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat2(dir, name, how)
			}
		}
		unix.Close(dir)
		if err != nil {
			return fmt.Errorf("making %s: %s: %w", path, name, err)
		}
		dir = next
	}
	unix.Close(dir)
	return nil
}

// mountPath mounts source on path inside the new root, classically: only for mount points the
// sandbox made itself in its own tmpfs.
func (b builder) mountPath(source, path, fstype string, flags uintptr, data string) error {
	if err := b.mkdirAll(path); err != nil {
		return err
	}
	if err := unix.Mount(source, b.rootPath+path, fstype, flags, data); err != nil {
		return fmt.Errorf("mounting %s: %w", path, err)
	}
	return nil
}

// bind mounts the host's path (and every mount below it) at the same path inside the new
// root, read-only unless rw, never setuid or device files. The source is opened without
// following links, the copy is made read-only before it is attached, and it is attached
// through a descriptor of its mount point.
func (b builder) bind(path string, rw bool) error {
	src, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	defer unix.Close(src)
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tree, err := unix.OpenTree(src, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("copying the mount of %s: %w", path, err)
	}
	defer unix.Close(tree)
	attr := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
	if !rw {
		attr |= unix.MOUNT_ATTR_RDONLY
	}
	return b.attach(tree, path, st.Mode&unix.S_IFMT == unix.S_IFDIR, attr)
}

// attach restricts the detached copy of a mount tree (and every mount below it) with attr
// and attaches it at path inside the new root, through a descriptor of its mount point.
func (b builder) attach(tree int, path string, dir bool, attr uint64) error {
	if err := setAttr(tree, true, attr); err != nil {
		return fmt.Errorf("restricting the mount of %s: %w", path, err)
	}
	dst, err := b.mountPoint(path, dir)
	if err != nil {
		return err
	}
	defer unix.Close(dst)
	if err := unix.MoveMount(tree, "", dst, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("mounting %s: %w", path, err)
	}
	return nil
}

// mountPoint opens (making it where it is missing) the directory or file path inside the
// new root for a mount to be attached to.
func (b builder) mountPoint(path string, dir bool) (int, error) {
	if dir {
		if err := b.mkdirAll(path); err != nil {
			return -1, err
		}
		fd, err := b.open(path, unix.O_DIRECTORY)
		if err != nil {
			return -1, fmt.Errorf("opening the mount point %s: %w", path, err)
		}
		return fd, nil
	}
	parentPath, name := splitPath(path)
	if err := b.mkdirAll(parentPath); err != nil {
		return -1, err
	}
	parent, err := b.open(parentPath, unix.O_DIRECTORY)
	if err != nil {
		return -1, fmt.Errorf("opening the mount point %s: %w", path, err)
	}
	defer unix.Close(parent)
	// An O_PATH descriptor cannot create, so the parent is reopened to make the file.
	pdir, err := unix.Openat(parent, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("opening the mount point %s: %w", path, err)
	}
	defer unix.Close(pdir)
	if f, err := unix.Openat(pdir, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644); err == nil {
		unix.Close(f)
	} else if !errors.Is(err, unix.EEXIST) {
		return -1, fmt.Errorf("making the mount point %s: %w", path, err)
	}
	fd, err := b.open(path, 0)
	if err != nil {
		return -1, fmt.Errorf("opening the mount point %s: %w", path, err)
	}
	return fd, nil
}

// link makes a symbolic link inside the new root, unless something is there already.
func (b builder) link(l Link) error {
	dir, _ := splitPath(l.Path)
	if err := b.mkdirAll(dir); err != nil {
		return err
	}
	err := unix.Symlink(l.Target, b.rootPath+l.Path)
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("linking %s: %w", l.Path, err)
	}
	return nil
}

// dev builds the sandbox's /dev: the device files above, a devpts of its own (where it can
// be mounted: it says whether it was), /dev/shm, and the usual links. Nothing else of the
// host's /dev is there.
func (b builder) dev() (pts bool, err error) {
	if err := b.mountPath("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, devTmpfs); err != nil {
		return false, err
	}
	for _, d := range append(append([]string(nil), rwDevices...), roDevices...) {
		host := "/dev/" + d
		if _, err := os.Stat(host); err != nil {
			continue
		}
		f, err := os.OpenFile(b.rootPath+host, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return false, fmt.Errorf("making %s: %w", host, err)
		}
		f.Close()
		if err := unix.Mount(host, b.rootPath+host, "", unix.MS_BIND, ""); err != nil {
			return false, fmt.Errorf("mounting %s: %w", host, err)
		}
	}
	if err := b.mkdirAll("/dev/pts"); err != nil {
		return false, err
	}
	if unix.Mount("devpts", b.rootPath+"/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") == nil {
		pts = true
		if err := b.link(Link{"/dev/ptmx", "pts/ptmx"}); err != nil {
			return false, err
		}
	}
	if err := b.mountPath("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, shmTmpfs); err != nil {
		return false, err
	}
	for _, l := range []Link{{"/dev/fd", "/proc/self/fd"}, {"/dev/stdin", "/proc/self/fd/0"}, {"/dev/stdout", "/proc/self/fd/1"}, {"/dev/stderr", "/proc/self/fd/2"}} {
		if err := b.link(l); err != nil {
			return false, err
		}
	}
	dev, err := b.open("/dev", unix.O_DIRECTORY)
	if err != nil {
		return false, err
	}
	defer unix.Close(dev)
	if err := setAttr(dev, false, unix.MOUNT_ATTR_RDONLY); err != nil {
		return false, fmt.Errorf("making /dev read-only: %w", err)
	}
	return pts, nil
}

// hide covers each path (inside a mount) with an empty, read-only entry of its kind that
// nobody may read, list or change: mode 000, and the command holds no capability that would
// override it. A path that is not there (any more) is left alone.
func (b builder) hide(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	const file, dir = ".hidden-file", ".hidden-dir"
	f, err := unix.Openat(b.root, file, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		// The root descriptor is O_PATH; create through its path instead.
		f, err = unix.Open(b.rootPath+"/"+file, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return fmt.Errorf("making the cover of hidden files: %w", err)
	}
	unix.Close(f)
	if err := unix.Mkdir(b.rootPath+"/"+dir, 0); err != nil {
		return fmt.Errorf("making the cover of hidden directories: %w", err)
	}
	defer unix.Unlink(b.rootPath + "/" + file)
	defer unix.Rmdir(b.rootPath + "/" + dir)
	for _, h := range paths {
		dst, err := b.open(h, 0)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return fmt.Errorf("hiding %s: %w", h, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(dst, &st); err != nil {
			unix.Close(dst)
			return fmt.Errorf("hiding %s: %w", h, err)
		}
		cover := file
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			cover = dir
		}
		err = func() error {
			defer unix.Close(dst)
			tree, err := unix.OpenTree(b.root, cover, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
			if err != nil {
				return err
			}
			defer unix.Close(tree)
			if err := setAttr(tree, false, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC); err != nil {
				return err
			}
			return unix.MoveMount(tree, "", dst, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
		}()
		if err != nil {
			return fmt.Errorf("hiding %s: %w", h, err)
		}
	}
	return nil
}

// setAttr sets mount attributes on the mount fd refers to (and every mount below it when
// recursive); attributes can only be added this way.
func setAttr(fd int, recursive bool, attr uint64) error {
	flags := uint(unix.AT_EMPTY_PATH)
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	return unix.MountSetattr(fd, "", flags, &unix.MountAttr{Attr_set: attr})
}

// splitPath splits an absolute, clean path into its directory and its last name, as
// filepath.Dir and filepath.Base would (this package does without path/filepath: see the
// package comment).
func splitPath(path string) (dir, name string) {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/", path[i+1:]
	}
	return path[:i], path[i+1:]
}
