package shell

import (
	"path/filepath"
	"strings"
)

// kind is what a program can do to files, for xargs: xargs feeding its input to a program
// that changes files or runs code is an Unknown.
type kind uint8

const (
	kindNone    kind = iota // no file effects (echo, true, cd)
	kindReads               // reads files only (cat, grep)
	kindChanges             // writes, deletes or runs files (rm, cp, tee, ./x)
	kindCode                // runs code given to it (bash, python, eval)
)

// program is an entry of the program table: how to find a program's file effects.
type program struct {
	kind kind
	g    *grammar // nil: run parses the arguments itself
	run  func(c *call, p *parsed)
}

// invoke runs the program's entry on a call.
func (p *program) invoke(c *call) {
	if p.g == nil {
		p.run(c, nil)
		return
	}
	c.ps = p.g.parse(c.args)
	p.run(c, &c.ps)
}

// programs is the program table, by base name. Every file of this package that knows a family
// of programs adds them in an init function; the table is complete before Analyze can run.
var programs = map[string]*program{}

func register(p *program, names ...string) {
	for _, n := range names {
		programs[n] = p
	}
}

// stdio reports the operand "-": standard input or output, not a file.
func stdio(a arg) bool { return a.lit() && a.val == "-" }

func (c *call) read(a arg, why string, rec bool) {
	if !stdio(a) {
		c.eff(Read, a, why, rec)
	}
}

// list is a listing of the tree at a (find, ls -R, du, tree): the directories below it are
// read, not the files in them (Effect.Listing); a listing that does not recurse reads a.
func (c *call) list(a arg, why string, rec bool) {
	if stdio(a) {
		return
	}
	from := ""
	if rec {
		from = listingTree
	}
	c.w.targetFrom(c.idx, c.dir, Read, a, why, rec, from)
}

func (c *call) write(a arg, why string, rec bool) {
	if !stdio(a) {
		c.eff(Write, a, why, rec)
	}
}

func (c *call) del(a arg, why string, rec bool) { c.eff(Delete, a, why, rec) }

// readDir reports a recursive read of the working directory, for programs that walk it when
// given no path (grep -r, rg, du, find).
func (c *call) readDir(why string) {
	c.eff(Read, litArg(".", c.text, c.pos), why, true)
}

// reads is a program that reads each operand; recursive names the options that make it
// read whole trees.
func reads(short, long string, recursive ...string) *program {
	return &program{kind: kindReads, g: newGrammar(short, long), run: func(c *call, p *parsed) {
		rec := len(recursive) > 0 && p.has(recursive...)
		for _, a := range p.ops {
			c.read(a, c.name+" operand", rec)
		}
	}}
}

// writes is a program that writes (creates or changes) each operand.
func writes(short, long string, recursive ...string) *program {
	return &program{kind: kindChanges, g: newGrammar(short, long), run: func(c *call, p *parsed) {
		rec := len(recursive) > 0 && p.has(recursive...)
		for _, a := range p.ops {
			c.write(a, c.name+" operand", rec)
		}
	}}
}

// none is a program with no file effects.
var none = &program{kind: kindNone, run: func(*call, *parsed) {}}

func init() {
	// Programs with no file effects. They need no entry (a program not in the table has
	// none), but xargs should know them as harmless.
	// (printf, read, test and [ take variable names: arith.go.)
	register(none, "echo", "true", "false", ":", "pwd", "which", "type",
		"basename", "dirname", "realpath", "readlink", "date", "sleep", "seq", "yes", "env",
		"printenv", "id", "whoami", "hostname", "uname", "tr", "expr", "let", "kill")

	// Readers: every operand is read.
	register(reads("", "show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting"), "cat")
	register(reads("s:", "separator= before regex"), "tac")
	register(reads("b:d:f:h:i:l:n:s:v:w:", "body-numbering= section-delimiter= footer-numbering= header-numbering= "+
		"line-increment= join-blank-lines= number-format= number-separator= starting-line-number= number-width= no-renumber"), "nl")
	register(reads("n:c:", "lines= bytes= quiet silent verbose zero-terminated"), "head")
	register(reads("n:c:s:", "lines= bytes= pid= sleep-interval= max-unchanged-stats= follow=? retry quiet silent verbose zero-terminated"), "tail")
	register(reads("n:", "lines="), "more")
	register(&program{kind: kindReads, g: newGrammar("b:h:j:k:o:O:p:P:t:T:x:y:z:#:",
		"log-file= LOG-FILE= pattern= prompt= tag= tag-file= tabs= max-back-scroll= window= shift= "),
		run: func(c *call, p *parsed) {
			for _, a := range p.vals("o", "O", "log-file", "LOG-FILE") {
				c.write(a, "less log file", false)
			}
			for _, a := range p.ops {
				c.read(a, "less operand", false)
			}
		}}, "less")
	register(&program{kind: kindReads, g: newGrammar("", "files0-from= bytes chars lines words max-line-length total=?"),
		run: func(c *call, p *parsed) {
			for _, a := range p.vals("files0-from") {
				c.read(a, "wc --files0-from", false)
			}
			for _, a := range p.ops {
				c.read(a, "wc operand", false)
			}
		}}, "wc")
	register(reads("w:", "wrap= decode ignore-garbage base64 base64url base32 base32hex base16 base2msbf base2lsbf z85"), "base64", "base32", "basenc")
	register(reads("A:j:N:S:t:w::", "address-radix= skip-bytes= read-bytes= strings=? format= width=? endian= output-duplicates traditional"), "od")
	register(&program{kind: kindReads, g: newGrammar("e:f:n:s:", ""), run: func(c *call, p *parsed) {
		for _, a := range p.vals("f") {
			c.read(a, "hexdump -f", false)
		}
		for _, a := range p.ops {
			c.read(a, "hexdump operand", false)
		}
	}}, "hexdump", "hd")
	register(reads("n:t:e:T:", "bytes= radix= encoding= target= all data print-file-name"), "strings")
	register(&program{kind: kindReads, g: newGrammar("C:U:F:I:L:S:x:X:",
		"context=? unified=? label= exclude= exclude-from= ignore-matching-lines= show-function-line= "+
			"starting-file= from-file= to-file= color=? palette= width= horizon-lines= tabsize= line-format= "+
			"old-line-format= new-line-format= unchanged-line-format= old-group-format= new-group-format= "+
			"unchanged-group-format= changed-group-format= recursive new-file unidirectional-new-file brief "+
			"report-identical-files side-by-side ignore-case ignore-all-space ignore-space-change text"),
		run: func(c *call, p *parsed) {
			rec := p.has("r", "recursive")
			for _, a := range p.vals("X", "exclude-from") {
				c.read(a, "diff --exclude-from", false)
			}
			for _, a := range p.vals("from-file", "to-file") {
				c.read(a, "diff operand", rec)
			}
			for _, a := range p.ops {
				c.read(a, "diff operand", rec)
			}
		}}, "diff", "colordiff")
	register(&program{kind: kindReads, g: newGrammar("i:n:", "ignore-initial= bytes= print-bytes quiet silent verbose"),
		run: func(c *call, p *parsed) {
			for i, a := range p.ops {
				if i < 2 {
					c.read(a, "cmp operand", false)
				}
			}
		}}, "cmp")
	register(reads("a:l:", "algorithm= length= binary check tag text zero ignore-missing quiet status strict warn base64 raw untagged"),
		"md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "sum", "shasum")
	register(&program{kind: kindReads, g: newGrammar("e:f:F:m:P:", "exclude= files-from= separator= magic-file= parameter= brief mime"),
		run: func(c *call, p *parsed) {
			for _, a := range p.vals("f", "files-from") {
				c.read(a, "file -f", false)
			}
			for _, a := range p.ops {
				c.read(a, "file operand", false)
			}
		}}, "file")
	register(reads("c:", "format= printf= dereference file-system terse cached="), "stat")
	register(reads("b:c:d:f:", "bytes= characters= delimiter= fields= output-delimiter= complement only-delimited zero-terminated"), "cut")
	register(reads("d:", "delimiters= serial zero-terminated"), "paste")
	register(reads("a:e:j:o:t:v:1:2:", "check-order nocheck-order header ignore-case zero-terminated"), "join")
	register(reads("", "check-order nocheck-order output-delimiter= total zero-terminated"), "comm")
	register(reads("w:", "width= bytes spaces"), "fold")
	register(reads("w:p:g:", "width= prefix= goal= crown-margin tagged-paragraph split-only uniform-spacing"), "fmt")
	register(reads("t:", "tabs= initial all first-only"), "expand", "unexpand")
	register(reads("", ""), "rev", "zcat", "gzcat", "bzcat", "xzcat", "zstdcat", "lz4cat", "zless", "zmore")
	register(reads("c:s:t:o:N:R:H:l:", "columns= separator= output-separator= table-columns= table-right= table-hide= "+
		"table-name= table-wrap= table-truncate= table-order= tree= tree-id= tree-parent="), "column")
	register(reads("l:H:r:m:", "language= highlight-line= line-range= map-syntax= theme= style= color= decorations= "+
		"paging= tabs= wrap= terminal-width= file-name= diff-context= italic-text= pager="), "bat", "batcat")
	// ls lists: ls -R reads the directories below its operands, not the files in them; with no
	// operand it lists the working directory
	register(&program{kind: kindReads, g: newGrammar("I:T:w:", "hide= ignore= format= sort= time= time-style= "+
		"color=? block-size= quoting-style= indicator-style= width= tabsize= hyperlink=? recursive"),
		run: func(c *call, p *parsed) {
			rec := p.has("R", "recursive")
			if len(p.ops) == 0 {
				c.list(litArg(".", c.text, c.pos), c.name+" (working directory)", rec)
			}
			for _, a := range p.ops {
				c.list(a, c.name+" operand", rec)
			}
		}}, "ls", "dir", "vdir")
	register(&program{kind: kindReads, g: newGrammar("B:d:t:X:", "block-size= max-depth= threshold= exclude= "+
		"exclude-from= time=? time-style= files0-from="), run: func(c *call, p *parsed) {
		for _, a := range p.vals("X", "exclude-from", "files0-from") {
			c.read(a, "du list", false)
		}
		// du, like ls -R and tree, lists: it reads directories and sizes, not the files
		if len(p.ops) == 0 {
			c.list(litArg(".", c.text, c.pos), "du (working directory)", true)
		}
		for _, a := range p.ops {
			c.list(a, "du operand", true)
		}
	}}, "du")
	register(&program{kind: kindReads, g: newGrammar("L:P:I:o:", "filelimit= timefmt= sort= charset= fromfile"),
		run: func(c *call, p *parsed) {
			for _, a := range p.vals("o") {
				c.write(a, "tree -o", false)
			}
			if len(p.ops) == 0 {
				c.list(litArg(".", c.text, c.pos), "tree (working directory)", true)
			}
			for _, a := range p.ops {
				c.list(a, "tree operand", true)
			}
		}}, "tree")
	register(&program{kind: kindReads, g: newGrammar("k:o:t:S:T:", "key= output= field-separator= buffer-size= "+
		"temporary-directory= parallel= files0-from= compress-program= random-source= batch-size= sort= "+
		"check=? merge unique reverse numeric-sort"), run: func(c *call, p *parsed) {
		for _, a := range p.vals("o", "output") {
			c.write(a, "sort -o", false)
		}
		for _, a := range p.vals("files0-from", "random-source") {
			c.read(a, "sort list", false)
		}
		if p.has("compress-program") {
			c.unknown("sort runs a compression program (--compress-program)")
		}
		for _, a := range p.ops {
			c.read(a, "sort operand", false)
		}
	}}, "sort")
	register(&program{kind: kindReads, g: newGrammar("f:s:w:", "skip-fields= skip-chars= check-chars= group=? "+
		"all-repeated=? count repeated unique ignore-case zero-terminated"), run: func(c *call, p *parsed) {
		for i, a := range p.ops {
			switch i {
			case 0:
				c.read(a, "uniq input", false)
			case 1:
				c.write(a, "uniq output", false)
			}
		}
	}}, "uniq")
	register(&program{kind: kindReads, g: newGrammar("c:g:l:o:s:n:", "cols= groupsize= len= offset= seek= name="),
		run: func(c *call, p *parsed) {
			for i, a := range p.ops {
				switch i {
				case 0:
					c.read(a, "xxd input", false)
				case 1:
					c.write(a, "xxd output", false)
				}
			}
		}}, "xxd")
	register(&program{kind: kindReads, g: newGrammar("f:t:o:", "from-code= to-code= output= list silent"),
		run: func(c *call, p *parsed) {
			for _, a := range p.vals("o", "output") {
				c.write(a, "iconv -o", false)
			}
			for _, a := range p.ops {
				c.read(a, "iconv operand", false)
			}
		}}, "iconv")
	register(&program{kind: kindReads, g: newGrammar("n:o:i:", "head-count= output= input-range= random-source= echo repeat zero-terminated"),
		run: func(c *call, p *parsed) {
			for _, a := range p.vals("o", "output") {
				c.write(a, "shuf -o", false)
			}
			for _, a := range p.vals("random-source") {
				c.read(a, "shuf --random-source", false)
			}
			if p.has("e", "echo", "i", "input-range") {
				return // operands are lines, not files
			}
			for _, a := range p.ops {
				c.read(a, "shuf operand", false)
			}
		}}, "shuf")

	// Writers.
	register(writes("", "output-error=? append ignore-interrupts"), "tee")
	register(&program{kind: kindChanges, g: newGrammar("d:r:t:", "date= reference= time= no-create no-dereference"),
		run: func(c *call, p *parsed) {
			for _, a := range p.vals("r", "reference") {
				c.read(a, "touch --reference", false)
			}
			for _, a := range p.ops {
				c.write(a, "touch operand", false)
			}
		}}, "touch")
	register(&program{kind: kindChanges, g: newGrammar("s:r:", "size= reference= io-blocks no-create"),
		run: func(c *call, p *parsed) {
			for _, a := range p.vals("r", "reference") {
				c.read(a, "truncate --reference", false)
			}
			for _, a := range p.ops {
				c.write(a, "truncate operand", false)
			}
		}}, "truncate")
	register(writes("m:", "mode= context=? verbose"), "mkfifo")
	register(&program{kind: kindChanges, g: newGrammar("p:", "tmpdir=? suffix= directory dry-run quiet"), run: mktemp}, "mktemp")
	// mkdir -p makes every missing directory on the way, each a write
	register(&program{kind: kindChanges, g: newGrammar("m:", "mode= context=? parents verbose"), run: func(c *call, p *parsed) {
		parents := p.has("p", "parents")
		for _, a := range p.ops {
			if parents && a.lit() {
				for _, up := range parentDirs(a, c.dir, c.w.a.opt.Home) {
					c.write(up, "mkdir -p parent", false)
				}
			}
			c.write(a, "mkdir operand", false)
		}
	}}, "mkdir")
	register(&program{kind: kindChanges, g: newGrammar("m:", "mode= context=?"), run: func(c *call, p *parsed) {
		if len(p.ops) > 0 {
			c.write(p.ops[0], "mknod operand", false)
		}
	}}, "mknod")
	register(&program{kind: kindChanges, g: newGrammar("l:o:", "length= offset= collapse-range dig-holes insert-range punch-hole zero-range keep-size posix"),
		run: func(c *call, p *parsed) {
			if len(p.ops) > 0 {
				c.write(p.ops[len(p.ops)-1], "fallocate operand", false)
			}
		}}, "fallocate")
	register(modeFirst("chmod"), "chmod")
	register(modeFirst("chown"), "chown")
	register(modeFirst("chgrp"), "chgrp")
	register(modeFirst("chattr"), "chattr")
	register(writes("m:M:x:X:", "modify= modify-file= remove= remove-file= set= set-file= restore= recursive "+
		"remove-all remove-default no-mask mask default logical physical test", "R", "recursive"), "setfacl")
	register(&program{kind: kindChanges, run: dd}, "dd")
	register(&program{kind: kindChanges, g: newGrammar("a:b:C:l:n:t:d::x::", "suffix-length= bytes= line-bytes= lines= "+
		"number= separator= additional-suffix= filter= numeric-suffixes=? hex-suffixes=? elide-empty-files unbuffered verbose"),
		run: func(c *call, p *parsed) {
			if p.has("filter") {
				c.unknown("split runs a command for each piece (--filter)")
			}
			prefix := "x"
			if len(p.ops) > 0 {
				c.read(p.ops[0], "split input", false)
			}
			if len(p.ops) > 1 {
				c.pieces(p.ops[1], "split output")
				return
			}
			c.pieces(litArg(prefix, c.text, c.pos), "split output")
		}}, "split")
	register(&program{kind: kindChanges, g: newGrammar("b:f:n:", "suffix-format= prefix= digits= keep-files "+
		"suppress-matched quiet silent elide-empty-files"), run: func(c *call, p *parsed) {
		if len(p.ops) > 0 {
			c.read(p.ops[0], "csplit input", false)
		}
		prefix, ok := p.val("f", "prefix")
		if !ok {
			prefix = litArg("xx", c.text, c.pos)
		}
		c.pieces(prefix, "csplit output")
	}}, "csplit")
	register(&program{kind: kindChanges, g: newGrammar("B:D:d:F:i:o:p:r:V:Y:z:g:",
		"prefix= ifdef= directory= fuzz= input= output= strip= reject-file= version-control= basename-prefix= "+
			"suffix= get= quoting-style= merge=? backup forward dry-run reverse silent quiet batch force posix "+
			"binary unified context normal ed remove-empty-files set-time set-utc verbose"),
		run: patch}, "patch")
	register(&program{kind: kindChanges, g: newGrammar("", "editor"), run: func(c *call, p *parsed) {
		for _, a := range p.ops {
			c.write(a, "sudoedit operand", false)
		}
	}}, "sudoedit")
	editor := &program{kind: kindChanges, g: newGrammar("c:S:u:U:i:T:t:q:r::w:W:s:", "cmd= clean"),
		run: func(c *call, p *parsed) {
			scripted := p.has("c", "S", "cmd", "s", "W", "w")
			for _, a := range p.ops {
				if strings.HasPrefix(a.val, "+") && a.lit() {
					scripted = true
					continue
				}
				c.write(a, c.name+" operand", false)
			}
			if scripted && c.name != "nano" && c.name != "micro" && c.name != "pico" {
				c.unknown(c.name + " runs editor commands, which can run programs")
			}
		}}
	register(editor, "vi", "vim", "nvim", "view", "nano", "pico", "micro", "emacs")
	register(&program{kind: kindCode, g: newGrammar("p:", "prompt= silent loose-exit-status restricted verbose"),
		run: func(c *call, p *parsed) {
			for _, a := range p.ops {
				c.write(a, c.name+" operand", false)
			}
			c.unknown(c.name + " runs commands read from its input, which can run programs")
		}}, "ed", "ex", "red")

	// Deleters.
	register(&program{kind: kindChanges, g: newGrammar("", "force interactive=? one-file-system no-preserve-root "+
		"preserve-root=? recursive dir verbose help version"), run: func(c *call, p *parsed) {
		rec := p.has("r", "R", "recursive")
		for _, a := range p.ops {
			c.del(a, "rm operand", rec)
		}
	}}, "rm")
	register(&program{kind: kindChanges, g: newGrammar("", "ignore-fail-on-non-empty parents verbose"),
		run: func(c *call, p *parsed) {
			parents := p.has("p", "parents")
			for _, a := range p.ops {
				c.del(a, "rmdir operand", false)
				if !parents || !a.lit() {
					continue
				}
				// rmdir -p a/b/c removes a/b/c, a/b and a
				for d := filepath.Dir(filepath.Clean(a.val)); d != "." && d != "/"; d = filepath.Dir(d) {
					c.del(litArg(d, a.src, a.pos), "rmdir -p parent", false)
				}
			}
		}}, "rmdir")
	register(&program{kind: kindChanges, g: newGrammar("", ""), run: func(c *call, p *parsed) {
		for _, a := range p.ops {
			c.del(a, "unlink operand", false)
		}
	}}, "unlink")
	register(&program{kind: kindChanges, g: newGrammar("n:s:", "iterations= size= random-source= remove=? exact force verbose zero"),
		run: func(c *call, p *parsed) {
			remove := p.has("u", "remove")
			for _, a := range p.ops {
				c.write(a, "shred operand", false)
				if remove {
					c.del(a, "shred -u operand", false)
				}
			}
		}}, "shred")
}

// modeFirst is chmod, chown, chgrp and chattr: a mode or owner first (unless --reference
// gives it), then the files changed; -R changes whole trees. chmod's and chattr's modes may
// look like options: chmod -x f, chattr +i f.
func modeFirst(name string) *program {
	modeChars := ""
	switch name {
	case "chmod":
		modeChars = "rwxXstugoa+-=,01234567"
	case "chattr":
		modeChars = "aAcCdDeFijmPsStTux"
	}
	return &program{kind: kindChanges, run: func(c *call, _ *parsed) {
		var rec, ref, haveMode, only bool
		var files []arg
		for i := 0; i < len(c.args); i++ {
			a := c.args[i]
			v := a.val
			opt := !only && a.lit() && len(v) > 1 && (v[0] == '-' || v[0] == '+' && modeChars != "")
			switch {
			case opt && v == "--":
				only = true
				continue
			case opt && strings.HasPrefix(v, "--"):
				n, _, hasEq := strings.Cut(v[2:], "=")
				switch n {
				case "reference":
					ref = true
				case "recursive":
					rec = true
				}
				if !hasEq && (n == "reference" || n == "from") {
					i++
				}
				continue
			case opt:
				if !haveMode && !ref && modeChars != "" && allIn(v[1:], modeChars) {
					haveMode = true
					continue
				}
				if v[0] == '-' {
					rec = rec || strings.Contains(v, "R")
					if name == "chattr" && strings.ContainsAny(v, "vp") {
						i++ // -v VERSION, -p PROJECT
					}
				}
				continue
			}
			if !haveMode && !ref {
				haveMode = true
				continue
			}
			files = append(files, a)
		}
		for _, f := range files {
			c.writeFrom(f, name+" operand", rec, f) // -R changes the tree in place
		}
	}}
}

func allIn(s, set string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(set, s[i]) < 0 {
			return false
		}
	}
	return true
}

// pieces is a write of every file named prefix followed by a suffix (split, csplit).
func (c *call) pieces(prefix arg, why string) {
	if !prefix.lit() {
		c.write(prefix, why, false)
		return
	}
	a := prefix
	a.segs = append(append([]seg(nil), prefix.segs...), seg{text: "*"})
	a.finish()
	c.write(a, why, false)
}

// dd reads if= and writes of=.
func dd(c *call, _ *parsed) {
	for _, a := range c.args {
		if a.input {
			continue
		}
		switch {
		case strings.HasPrefix(a.val, "if=") && a.litPrefix() >= 3:
			c.read(a.assignSuffix(3), "dd if=", false)
		case strings.HasPrefix(a.val, "of=") && a.litPrefix() >= 3:
			c.write(a.assignSuffix(3), "dd of=", false)
		}
	}
}

// patch writes the files named in the patch, inside its directory: GNU patch refuses names
// with ".." or an absolute path, so the directory bounds them.
func patch(c *call, p *parsed) {
	if d, ok := p.val("d", "directory"); ok {
		s := strip{w: c.w, dir: c.dir}
		s.chdir(d, "patch -d")
		c.dir = s.dir
	}
	for _, a := range p.vals("i", "input") {
		c.read(a, "patch input", false)
	}
	dry := p.has("dry-run")
	if dry {
		return
	}
	for _, a := range p.vals("o", "output") {
		c.write(a, "patch -o", false)
	}
	for _, a := range p.vals("r", "reject-file") {
		c.write(a, "patch reject file", false)
	}
	if len(p.ops) > 1 {
		c.read(p.ops[1], "patch input", false)
	}
	switch {
	case len(p.ops) > 0 && p.has("o", "output"):
		c.read(p.ops[0], "patch operand", false)
	case len(p.ops) > 0:
		c.write(p.ops[0], "patch operand", false)
	default:
		c.write(litArg(".", c.text, c.pos), "patch (files named in the patch)", true)
	}
}

// parentDirs are the directories above a that a names itself (a/b/c: a and a/b), outermost
// first, with a's quoting and ~ kept; none for a name without a slash. A component that is
// . or .. names no new directory, and neither does the working directory dir or a directory
// above it (home is ~): they exist.
func parentDirs(a arg, dir, home string) []arg {
	var out []arg
	for i := 1; i < len(a.val)-1; i++ {
		if a.val[i] != '/' || a.val[i-1] == '/' {
			continue
		}
		if last := a.val[strings.LastIndexByte(a.val[:i], '/')+1 : i]; last == "." || last == ".." || last == "~" {
			continue
		}
		p := a.val[:i]
		if rest, ok := strings.CutPrefix(p, "~/"); ok && a.tilde() && home != "" {
			p = home + "/" + rest
		}
		if !filepath.IsAbs(p) {
			p = dir + "/" + p
		}
		if p = filepath.Clean(p); dir != "" && (p == dir || strings.HasPrefix(dir, p+"/")) {
			continue
		}
		out = append(out, argPrefix(a, i))
	}
	return out
}

// argPrefix is the first n bytes of a, with their quoting and expansions kept.
func argPrefix(a arg, n int) arg {
	out := arg{src: a.src, pos: a.pos, noTilde: a.noTilde}
	for _, s := range a.segs {
		if n <= 0 {
			break
		}
		if len(s.text) > n {
			s.text = s.text[:n]
		}
		n -= len(s.text)
		out.segs = append(out.segs, s)
	}
	out.finish()
	return out
}

// mktemp makes a file or directory named by its template, whose trailing Xs are random: in
// the directory -p or --tmpdir names, or where a template with a slash says. One made in the
// temporary directory ($TMPDIR, -t) is the system's scratch space, not a file effect here.
func mktemp(c *call, p *parsed) {
	if p.has("u", "dry-run", "t") {
		return
	}
	tmpl := litArg("tmp.XXXXXXXXXX", c.text, c.pos)
	if len(p.ops) > 0 {
		tmpl = p.ops[0]
	}
	dir, inDir := p.val("p", "tmpdir")
	if inDir && dir.val == "" {
		return // --tmpdir with no value: $TMPDIR
	}
	if !tmpl.lit() {
		c.write(tmpl, "mktemp template", false)
		return
	}
	name := strings.TrimRight(tmpl.val, "X")
	if len(tmpl.val)-len(name) >= 3 {
		name += "*"
	} else {
		name = tmpl.val
	}
	switch {
	case inDir:
		t := dir
		t.segs = append(append([]seg(nil), dir.segs...), seg{text: "/" + name})
		t.finish()
		c.write(t, "mktemp -p", false)
	case strings.Contains(tmpl.val, "/"):
		t := arg{segs: []seg{{text: name}}, src: tmpl.src, pos: tmpl.pos, noTilde: !tmpl.tilde()}
		t.finish()
		c.write(t, "mktemp template", false)
	}
}
