package shell

import (
	"strings"
)

var tarGrammar = newGrammar("f:C:T:X:b:g:K:L:N:V:H:I:F:",
	"file= directory= files-from= exclude-from= blocking-factor= listed-incremental= starting-file= "+
		"tape-length= newer= after-date= label= format= use-compress-program= info-script= new-volume-script= "+
		"exclude= newer-mtime= owner= group= mode= mtime= transform= xform= strip-components= checkpoint=? "+
		"checkpoint-action= suffix= backup=? index-file= volno-file= rsh-command= rmt-command= occurrence=? "+
		"sort= xattrs-include= xattrs-exclude= one-top-level=? warning= record-size= to-command= exclude-tag= "+
		"exclude-tag-under= exclude-tag-all= owner-map= group-map= "+
		"create extract get list append update catenate concatenate diff compare delete to-stdout "+
		"absolute-names remove-files keep-old-files skip-old-files overwrite verbose gzip bzip2 xz zstd "+
		"auto-compress preserve-permissions same-permissions")

// tarModes are tar's one-letter modes; the old style packs them first without a dash: tar xzf a.tgz.
const tarModes = "cxtruAd"

func init() {
	register(&program{kind: kindChanges, run: tar}, "tar", "bsdtar", "gtar")
	register(&program{kind: kindChanges, run: unzip}, "unzip")
	register(&program{kind: kindChanges, run: zip}, "zip")
	for name, spec := range map[string]struct {
		suffix   string
		keep     bool // keeps the input unless told otherwise (zstd)
		decomp   bool // decompresses by default (gunzip)
		toStdout bool // writes to standard output (zcat is a reader)
	}{
		"gzip": {suffix: ".gz"}, "gunzip": {suffix: ".gz", decomp: true},
		"bzip2": {suffix: ".bz2"}, "bunzip2": {suffix: ".bz2", decomp: true},
		"xz": {suffix: ".xz"}, "unxz": {suffix: ".xz", decomp: true},
		"lzma": {suffix: ".lzma"}, "unlzma": {suffix: ".lzma", decomp: true},
		"zstd": {suffix: ".zst", keep: true}, "unzstd": {suffix: ".zst", keep: true, decomp: true},
		"pigz": {suffix: ".gz"}, "unpigz": {suffix: ".gz", decomp: true},
		"brotli": {suffix: ".br", keep: true},
	} {
		register(&program{kind: kindChanges, g: newGrammar("S:T:o:b:q:",
			"suffix= threads= output= stdout to-stdout decompress uncompress keep rm force recursive test list"),
			run: func(c *call, p *parsed) {
				if p.has("t", "test", "l", "list") {
					for _, a := range p.ops {
						c.read(a, c.name+" operand", false)
					}
					return
				}
				decomp := spec.decomp || p.has("d", "decompress", "uncompress")
				stdout := p.has("c", "stdout", "to-stdout")
				keep := (spec.keep || p.has("k", "keep")) && !p.has("rm")
				rec := p.has("r", "recursive")
				suffix := spec.suffix
				if s, ok := p.val("S", "suffix"); ok && s.lit() {
					suffix = s.val
				}
				out, hasOut := p.val("o", "output")
				if hasOut && c.name[0] != 'z' && !strings.HasPrefix(c.name, "unz") {
					hasOut = false // -o is zstd's
				}
				for _, a := range p.ops {
					c.read(a, c.name+" operand", rec)
					if stdout {
						continue
					}
					if !keep {
						c.del(a, c.name+" operand", rec)
					}
					switch {
					case hasOut:
						c.write(out, c.name+" -o", false)
					case rec || !a.lit():
						c.write(a, c.name+" output", rec)
					case decomp:
						c.write(withSuffix(a, "", suffix), c.name+" output", false)
					default:
						c.write(withSuffix(a, suffix, ""), c.name+" output", false)
					}
				}
			}}, name)
	}
}

// withSuffix is a's name with trim removed from its end and add added.
func withSuffix(a arg, add, trim string) arg {
	v := a.val
	if trim != "" {
		if t, ok := strings.CutSuffix(v, trim); ok && t != "" {
			v = t
		} else if i := strings.LastIndexByte(v, '.'); i > 0 && !strings.Contains(v[i:], "/") {
			v = v[:i]
		} else {
			v += ".out"
		}
	}
	out := a
	out.segs = []seg{{text: v + add, quoted: !a.glob() && !a.tilde()}}
	out.finish()
	return out
}

// tar: -c writes the archive and reads the operands (from -C's directory); -x writes the
// tree under -C's directory; -t reads the archive. Commands tar can run are Unknowns.
func tar(c *call, _ *parsed) {
	args := c.args
	if len(args) > 0 && args[0].lit() && args[0].val != "" && args[0].val[0] != '-' &&
		strings.ContainsAny(args[0].val, tarModes) && allIn(args[0].val, "cxtruAdzjJavfkmopwlhiSO0123456789BCGKLMNPRTUVWX") {
		// old style: "xzf a.tgz" is "-x -z -f a.tgz"
		args = append([]arg{}, args...)
		cluster := args[0]
		cluster.val, cluster.segs = "-"+cluster.val, []seg{{text: "-" + cluster.val}}
		args[0] = cluster
	}
	p := tarGrammar.parse(args)
	mode := ""
	for _, it := range p.items {
		switch it.opt {
		case "c", "create":
			mode = "c"
		case "x", "extract", "get":
			mode = "x"
		case "t", "list":
			mode = "t"
		case "r", "append", "u", "update", "A", "catenate", "concatenate":
			mode = "r"
		case "d", "diff", "compare":
			mode = "d"
		case "delete":
			mode = "delete"
		}
	}
	for _, o := range []string{"I", "use-compress-program", "to-command", "F", "info-script",
		"new-volume-script", "rsh-command", "rmt-command"} {
		if p.has(o) {
			c.unknown("tar runs a command (" + dashes(o) + ")")
		}
	}
	for _, v := range p.vals("checkpoint-action") {
		if strings.HasPrefix(v.val, "exec") || !v.lit() {
			c.unknown("tar runs a command (--checkpoint-action)")
		}
	}
	for _, a := range p.vals("T", "files-from", "X", "exclude-from") {
		c.read(a, "tar list", false)
	}
	for _, a := range p.vals("index-file") {
		c.write(a, "tar --index-file", false)
	}
	archives := p.vals("f", "file")
	// -C applies to what follows it: walk the items in order
	dir := c.dir
	for _, it := range p.items {
		switch {
		case it.opt == "C" || it.opt == "directory":
			s := strip{w: c.w, dir: dir}
			s.chdir(it.val, "tar -C")
			dir = s.dir
			if mode == "x" && !p.has("O", "to-stdout") && dir != "" {
				c.w.target(c.idx, dir, Write, litArg(".", it.val.src, it.val.pos), "tar -x directory", true)
			}
		case it.opt == "" && (mode == "c" || mode == "r"):
			c.w.target(c.idx, dir, Read, it.val, "tar operand", true)
			if p.has("remove-files") {
				c.w.target(c.idx, dir, Delete, it.val, "tar --remove-files", true)
			}
		}
	}
	for _, f := range archives {
		switch mode {
		case "c", "r", "delete":
			c.write(f, "tar archive", false)
		default:
			c.read(f, "tar archive", false)
		}
	}
	if mode == "x" && !p.has("O", "to-stdout") {
		if !p.has("C", "directory") {
			c.write(litArg(".", c.text, c.pos), "tar -x", true)
		}
		if p.has("P", "absolute-names") {
			c.unknown("tar -P extracts to the absolute paths named in the archive")
		}
	}
}

// unzip reads the archive and writes the tree under -d's directory.
func unzip(c *call, _ *parsed) {
	args := c.args
	var archive, exdir *arg
	listOnly := false
	excluding := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.lit() && strings.HasPrefix(a.val, "-") && len(a.val) > 1 {
			excluding = false
			switch {
			case a.val == "-d" && i+1 < len(args):
				i++
				exdir = &args[i]
			case strings.HasPrefix(a.val, "-d") && len(a.val) > 2 && !strings.ContainsAny(a.val[2:], "-"):
				d := a.suffix(2)
				exdir = &d
			case a.val == "-x":
				excluding = true
			case a.val == "-P" || a.val == "-O" || a.val == "-I":
				i++
			case strings.ContainsAny(a.val[1:2], "lvtzZpc"):
				listOnly = true
			}
			continue
		}
		if excluding {
			continue
		}
		if archive == nil {
			archive = &args[i]
		}
	}
	if archive == nil {
		return
	}
	c.read(*archive, "unzip archive", false)
	if listOnly {
		return
	}
	if exdir != nil {
		c.write(*exdir, "unzip -d", true)
		return
	}
	c.write(litArg(".", c.text, c.pos), "unzip (working directory)", true)
}

// zip writes the archive and reads the files added; -m deletes them.
func zip(c *call, _ *parsed) {
	args := c.args
	var archive *arg
	var files []arg
	rec, move := false, false
	patterns := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.lit() && strings.HasPrefix(a.val, "-") && len(a.val) > 1 {
			patterns = false
			if a.val == "-TT" || strings.HasPrefix(a.val, "--unzip-command") {
				c.unknown("zip runs a command to test the archive (-TT)")
				if !strings.Contains(a.val, "=") {
					i++
				}
				continue
			}
			switch a.val {
			case "-x", "-i", "--exclude", "--include":
				patterns = true
				continue
			case "-b", "-n", "-t", "-tt", "-P", "-Z", "-s", "-sp":
				i++
				continue
			case "-O", "--out":
				if i+1 < len(args) {
					i++
					c.write(args[i], "zip --out", false)
				}
				continue
			}
			if !strings.HasPrefix(a.val, "--") {
				rec = rec || strings.ContainsAny(a.val, "rR")
				move = move || strings.Contains(a.val, "m")
			}
			continue
		}
		if patterns {
			continue
		}
		if archive == nil {
			archive = &args[i]
			continue
		}
		files = append(files, a)
	}
	if archive == nil {
		return
	}
	c.write(*archive, "zip archive", false)
	for _, f := range files {
		c.read(f, "zip operand", rec)
		if move {
			c.del(f, "zip -m operand", rec)
		}
	}
}
