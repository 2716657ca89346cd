package shell

import "strings"

// find's predicates that take arguments, and how many.
var findArgs = map[string]int{
	"-name": 1, "-iname": 1, "-path": 1, "-ipath": 1, "-wholename": 1, "-iwholename": 1,
	"-regex": 1, "-iregex": 1, "-regextype": 1, "-type": 1, "-xtype": 1, "-user": 1, "-group": 1,
	"-uid": 1, "-gid": 1, "-perm": 1, "-size": 1, "-mtime": 1, "-atime": 1, "-ctime": 1,
	"-mmin": 1, "-amin": 1, "-cmin": 1, "-used": 1, "-inum": 1, "-links": 1, "-maxdepth": 1,
	"-mindepth": 1, "-fstype": 1, "-lname": 1, "-ilname": 1, "-context": 1, "-printf": 1,
	"-newer": 1, "-anewer": 1, "-cnewer": 1, "-samefile": 1, "-files0-from": 1,
	"-fprint": 1, "-fprint0": 1, "-fls": 1, "-fprintf": 2,
}

func init() {
	register(&program{kind: kindChanges, run: find}, "find")
}

// find reads the trees under its roots; -delete deletes them, -fprint writes a file and
// -exec, -execdir, -ok and -okdir run a command on each path found, analysed with {} standing
// for every path under each root.
func find(c *call, _ *parsed) {
	args := c.args
	i := 0
	// global options: -H -L -P -D debugopts -Olevel
	for i < len(args) && args[i].lit() {
		v := args[i].val
		if v == "-H" || v == "-L" || v == "-P" || len(v) > 2 && v[:2] == "-O" {
			i++
			continue
		}
		if v == "-D" {
			i += 2
			continue
		}
		break
	}
	var roots []arg
	for i < len(args) {
		a := args[i]
		if a.lit() && a.val != "" && (a.val[0] == '-' || a.val == "(" || a.val == "!" || a.val == ")") && a.val != "-" {
			break
		}
		roots = append(roots, a)
		i++
	}
	if len(roots) == 0 {
		roots = []arg{litArg(".", c.text, c.pos)}
	}
	rootRefs := make([]root, 0, len(roots))
	for _, r := range roots {
		rootRefs = append(rootRefs, root{arg: r, rootDir: c.dir})
	}
	// a listing reads no file: find reads the directories under its roots, not the files
	for _, r := range roots {
		c.list(r, "find root", true)
	}
	for ; i < len(args); i++ {
		a := args[i]
		if !a.lit() {
			continue
		}
		switch v := a.val; v {
		case "-delete":
			for _, r := range roots {
				c.del(r, "find -delete", true)
			}
		case "-fprint", "-fprint0", "-fls", "-fprintf":
			if i+1 < len(args) {
				c.write(args[i+1], "find "+v, false)
			}
			i += findArgs[v]
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && !(args[j].lit() && (args[j].val == ";" ||
				args[j].val == "+" && j > i+1 && args[j-1].val == "{}")) {
				j++
			}
			c.findExec(v, args[i+1:j], rootRefs)
			i = j
		case "-files0-from":
			if i+1 < len(args) {
				c.read(args[i+1], "find -files0-from", false)
			}
			i++
		default:
			i += findArgs[v]
		}
	}
}

// findExec analyses the command of -exec and its kin. {} (alone or inside a word) is every
// path under each root. -execdir runs in each found file's directory, which is not known.
func (c *call) findExec(how string, cmd []arg, roots []root) {
	if len(cmd) == 0 {
		return
	}
	words := make([]arg, len(cmd))
	for k, a := range cmd {
		if containsBraces(a) {
			a = arg{val: a.val, segs: a.segs, roots: roots, src: a.src, pos: a.pos}
		}
		words[k] = a
	}
	dir := c.dir
	if how == "-execdir" || how == "-okdir" {
		dir = ""
	}
	if words[0].roots != nil {
		c.unknown("find " + how + " runs the found files as programs")
		return
	}
	st := *c.st
	c.w.run(&st, invocation{args: words, dir: dir, pos: c.pos, text: c.text, via: "find " + how})
}

func containsBraces(a arg) bool {
	return !a.dyn && strings.Contains(a.val, "{}")
}
