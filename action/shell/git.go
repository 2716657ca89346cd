package shell

import (
	"strings"
)

var gitGlobal = posixGrammar("C:c:", "git-dir= work-tree= namespace= exec-path=? config-env= super-prefix= "+
	"list-cmds= attr-source= paginate no-pager bare no-replace-objects literal-pathspecs glob-pathspecs "+
	"noglob-pathspecs icase-pathspecs no-optional-locks help version")

// gitCommandKeys are configuration keys whose value is a command git runs.
var gitCommandKeys = []string{"init.templatedir", "core.sshcommand", "core.pager", "core.editor", "core.fsmonitor",
	"core.hookspath", "core.askpass", "core.gitproxy", "diff.external", "sequence.editor",
	"credential.helper", "gpg.program", "gpg.ssh.program", "gpg.x509.program", "uploadpack.packobjectshook"}

// git subcommands with file effects in the working tree, each with its option grammar.
var gitSubs = map[string]*grammar{
	"clean":    newGrammar("e:", "exclude= force dry-run quiet interactive"),
	"rm":       newGrammar("", "pathspec-from-file= force dry-run cached ignore-unmatch quiet sparse pathspec-file-nul"),
	"checkout": newGrammar("b:B:", "orphan= conflict= pathspec-from-file= track=? quiet force merge detach ours theirs patch"),
	"restore":  newGrammar("s:", "source= pathspec-from-file= conflict= staged worktree ours theirs merge patch quiet"),
	"switch":   newGrammar("c:C:", "create= force-create= orphan= conflict= track=? detach discard-changes quiet merge"),
	"reset":    newGrammar("", "pathspec-from-file= hard soft mixed merge keep quiet patch"),
	"apply":    newGrammar("p:C:", "exclude= include= directory= whitespace= build-fake-ancestor= check stat numstat summary cached index reverse reject"),
}

func init() {
	register(&program{kind: kindChanges, run: git}, "git")
}

// git: clean, rm, checkout, restore, switch, reset --hard and apply change the working tree;
// other subcommands have no file effects here (their writes stay under .git, or are pulls
// and merges the sandbox confines). -C and --work-tree move where paths are.
func git(c *call, _ *parsed) {
	g := gitGlobal.parse(c.args)
	for _, it := range g.items {
		switch it.opt {
		case "C":
			s := strip{w: c.w, dir: c.dir}
			s.chdir(it.val, "git -C")
			c.dir = s.dir
		case "work-tree":
			s := strip{w: c.w, dir: c.dir}
			s.chdir(it.val, "git --work-tree")
			c.dir = s.dir
		case "c":
			k, v, _ := strings.Cut(it.val.val, "=")
			k = strings.ToLower(k)
			if contains(gitCommandKeys, k) || strings.HasPrefix(k, "alias.") && strings.HasPrefix(v, "!") ||
				strings.HasSuffix(k, ".command") || strings.HasSuffix(k, ".textconv") ||
				strings.HasSuffix(k, ".clean") || strings.HasSuffix(k, ".smudge") || strings.HasSuffix(k, ".process") ||
				strings.HasSuffix(k, ".driver") || strings.HasSuffix(k, ".cmd") || !it.val.lit() {
				c.unknown("git -c sets a command git may run (" + it.val.val + ")")
			}
		case "config-env":
			c.unknown("git --config-env sets configuration from the environment")
		case "git-dir":
			// a repository elsewhere brings its own configuration, which can run commands
			c.unknown("git --git-dir uses a repository, and its configuration, that review does not see")
		case "exec-path":
			if it.has {
				c.unknown("git --exec-path runs git's subcommands from another directory")
			}
		}
	}
	if g.first >= len(c.args) {
		return
	}
	c.gitRepository()
	if !c.args[g.first].lit() {
		c.unknown("git runs a subcommand from an expansion")
		return
	}
	sub := c.args[g.first].val
	rest := c.args[g.first+1:]
	if gitKnown[sub] {
		c.gitRepoEffects(sub, gitSubOpts.parse(rest))
	}
	if !gitMore(c, sub, rest) {
		return
	}
	gr := gitSubs[sub]
	if gr == nil {
		return
	}
	p := gr.parse(rest)
	paths := p.ops
	tree := litArg(".", c.text, c.pos)
	switch sub {
	case "clean":
		if p.has("n", "dry-run") {
			return
		}
		if len(paths) == 0 {
			c.del(tree, "git clean", true)
		}
		for _, a := range paths {
			c.del(a, "git clean", true)
		}
	case "rm":
		if p.has("cached", "n", "dry-run") {
			return
		}
		rec := p.has("r")
		for _, a := range paths {
			c.del(a, "git rm", rec)
		}
	case "checkout":
		if p.rest < len(paths) { // git checkout [tree-ish] -- paths
			for _, a := range paths[p.rest:] {
				c.write(a, "git checkout path", true)
			}
			return
		}
		_, create := p.val("b", "B", "orphan")
		if create && len(paths) == 0 {
			return // a new branch from HEAD: the working tree stays
		}
		if len(paths) > 0 || p.has("f", "force", "m", "merge") {
			c.write(tree, "git checkout (working tree)", true)
		}
	case "restore":
		if p.has("S", "staged") && !p.has("W", "worktree") {
			return
		}
		for _, a := range paths {
			c.write(a, "git restore path", true)
		}
	case "switch":
		_, create := p.val("c", "C", "create", "force-create", "orphan")
		if create && len(paths) == 0 {
			return
		}
		c.write(tree, "git switch (working tree)", true)
	case "reset":
		if p.has("hard", "merge", "keep") {
			c.write(tree, "git reset --hard (working tree)", true)
		}
	case "apply":
		if p.has("check", "stat", "numstat", "summary", "cached") {
			for _, a := range paths {
				c.read(a, "git apply patch", false)
			}
			return
		}
		for _, a := range paths {
			c.read(a, "git apply patch", false)
		}
		c.write(tree, "git apply (files named in the patch)", true)
	}
}

// gitKnown are the git subcommands review knows; any other may be an alias set in a
// configuration file (alias.x = !cmd), which runs a command.
var gitKnown = map[string]bool{}

func init() {
	for _, sub := range strings.Fields(`add am annotate apply archive bisect blame branch bundle
		cat-file check-attr check-ignore checkout cherry cherry-pick clean clone commit commit-graph
		config count-objects describe diff diff-files diff-index diff-tree difftool fetch for-each-ref
		format-patch fsck gc grep hash-object help init log ls-files ls-remote ls-tree maintenance merge
		merge-base mergetool mv name-rev notes prune pull push range-diff rebase reflog remote
		repack replace reset restore rev-list rev-parse revert rm shortlog show show-branch show-ref
		sparse-checkout stash status submodule switch symbolic-ref tag update-index verify-commit
		verify-tag version whatchanged worktree write-tree filter-branch send-email daemon instaweb
		fast-import fast-export credential var`) {
		gitKnown[sub] = true
	}
}

// gitSubOpts are options of git subcommands that take a separate value, for finding
// operands: enough of them that a value is not taken for a path.
var gitSubOpts = newGrammar("C:F:m:n:o:t:x:X:U:S:G:L:O:e:",
	"message= file= template= exec= output= output-directory= format= pretty= author= date= since= "+
		"until= after= before= grep= max-count= skip= prefix= remote= add-file= depth= branch= origin= "+
		"reference= separate-git-dir= template= extcmd= tool= strategy= strategy-option= onto= "+
		"word-diff=? color=? abbrev=? diff-filter= src-prefix= dst-prefix= line-prefix= cleanup= "+
		"reuse-message= reedit-message= fixup= squash= trailer= pathspec-from-file= encoding= "+
		"subject-prefix= to= cc= bcc= in-reply-to= smtp-server= shared=? object-format= initial-branch= "+
		"upload-pack= config= jobs= filter= recurse-submodules=? add cacheinfo index-info all")

// gitMore adds what git subcommands other than those of gitSubs do: those that run commands
// ask; those that read files, or write outside the work tree, report it. It reports whether
// gitSubs should be consulted too.
func gitMore(c *call, sub string, args []arg) bool {
	if !gitKnown[sub] {
		if !strings.HasPrefix(sub, "-") {
			c.unknown("git " + sub + " is not a git command review knows: it may be an alias, which can run a command")
		}
		return false
	}
	p := gitSubOpts.parse(args)
	paths := p.ops
	if p.rest < len(p.ops) {
		paths = p.ops[p.rest:] // after --: pathspecs
	}
	tree := litArg(".", c.text, c.pos)
	for _, a := range p.vals("output", "o") {
		switch sub {
		case "format-patch":
			c.write(a, "git format-patch -o", true)
		case "archive", "diff", "log", "show", "whatchanged", "range-diff", "diff-tree", "diff-index", "diff-files", "shortlog":
			c.write(a, "git "+sub+" --output", false)
		}
	}
	if a, ok := p.val("output-directory"); ok {
		c.write(a, "git "+sub+" --output-directory", true)
	}
	switch sub {
	case "rebase":
		if p.has("x", "exec", "i", "interactive") {
			c.unknown("git rebase runs commands (--exec) or an editor (-i)")
		}
	case "submodule":
		if len(p.ops) > 0 && p.ops[0].val == "foreach" {
			c.unknown("git submodule foreach runs a command in each submodule")
		}
	case "bisect":
		if len(p.ops) > 0 && p.ops[0].val == "run" {
			c.unknown("git bisect run runs a command at each step")
		}
	case "filter-branch", "difftool", "mergetool", "send-email", "daemon", "instaweb", "credential":
		c.unknown("git " + sub + " runs commands or tools review cannot see")
	case "diff":
		if p.has("no-index") {
			for _, a := range p.ops {
				c.read(a, "git diff --no-index", true)
			}
			return false
		}
		for _, a := range p.ops {
			c.read(a, "git diff path", true)
		}
	case "log", "whatchanged", "shortlog":
		// a path may be given without -- when it exists: every operand may be one (a
		// revision is read as a path that is not there)
		for _, a := range p.ops {
			c.read(a, "git "+sub+" path", true)
		}
	case "show", "cat-file":
		for _, a := range p.ops[p.rest:] {
			c.read(a, "git "+sub+" path", true)
		}
		for _, a := range p.ops[:p.rest] {
			// REV:path is the file path as it is in REV
			if i := strings.IndexByte(a.val, ':'); i >= 0 && a.litPrefix() > i {
				if sp := a.suffix(i + 1); sp.val != "" {
					c.read(sp, "git "+sub+" REV:path", false)
				}
			} else if !a.lit() {
				c.w.unknown("git "+sub+"'s object comes from an expansion", a.src, a.pos)
			}
		}
	case "grep":
		if p.rest < len(p.ops) {
			for _, a := range p.ops[p.rest:] {
				if p.has("untracked", "no-index") {
					// files git does not track, matched anywhere below
					c.gitPathspec(a, "git grep path")
				} else {
					c.read(a, "git grep path", true)
				}
			}
		} else {
			c.read(tree, "git grep (working tree)", true)
		}
	case "blame", "annotate", "hash-object", "check-attr":
		for _, a := range paths {
			if sub == "blame" && len(paths) > 1 && p.rest == len(p.ops) && a.val == paths[0].val {
				continue // blame REV FILE
			}
			c.read(a, "git "+sub+" operand", false)
		}
	case "add", "stash", "commit":
		for _, a := range p.vals("F", "file", "t", "template", "pathspec-from-file") {
			c.read(a, "git "+sub+" file", false)
		}
		ops := paths
		if sub == "stash" {
			if len(p.ops) == 0 || p.ops[0].val != "push" || p.rest == len(p.ops) {
				return false
			}
		}
		if sub == "commit" && p.rest == len(p.ops) {
			return false // git commit -a takes tracked files: what changed in them is the repository's
		}
		for _, a := range ops {
			c.gitPathspec(a, "git "+sub+" path")
		}
		if sub == "add" && len(ops) == 0 && p.has("A", "all") {
			c.read(tree, "git add -A (working tree)", true)
		}
	case "archive":
		for _, a := range p.vals("add-file") {
			c.read(a, "git archive --add-file", false)
		}
	case "config":
		gitConfig(c, p)
	case "init":
		dir := tree
		if len(p.ops) > 0 {
			dir = p.ops[0]
		}
		// git init fills the repository with git's template and default configuration: a
		// change in place of the repository there (Effect.From), judged on what is there. A
		// new repository's hooks are inert samples and its configuration is git's own, while
		// initialising an existing one rewrites its configuration.
		if !p.has("bare") {
			c.write(dir, "git init", false)
			d := dir
			d.segs = append(append([]seg(nil), dir.segs...), seg{text: "/.git", quoted: true})
			d.finish()
			c.writeFrom(d, "git init (the repository)", true, d)
		} else {
			c.writeFrom(dir, "git init --bare (the repository)", true, dir)
		}
		if p.has("separate-git-dir", "template") {
			c.unknown("git init takes a template or a directory review does not follow")
		}
	case "clone":
		switch {
		case len(p.ops) >= 2:
			c.write(p.ops[1], "git clone", true)
		case len(p.ops) == 1 && p.ops[0].lit():
			name := strings.TrimSuffix(baseName(strings.TrimRight(p.ops[0].val, "/")), ".git")
			c.write(litArg(name, c.text, c.pos), "git clone", true)
		default:
			c.unknown("git clone writes a directory that is not known")
		}
	case "mv":
		if len(p.ops) >= 2 {
			dst := p.ops[len(p.ops)-1]
			for _, a := range p.ops[:len(p.ops)-1] {
				c.del(a, "git mv source", true)
				c.writeFrom(dst, "git mv target", true, a)
			}
		}
	case "bundle":
		if len(p.ops) >= 2 && p.ops[0].val == "create" {
			c.write(p.ops[1], "git bundle create", false)
		}
	case "worktree":
		if len(p.ops) >= 2 && p.ops[0].val == "add" {
			c.write(p.ops[1], "git worktree add", true)
		}
	case "update-index":
		if p.has("cacheinfo", "index-info") {
			c.unknown("git update-index puts names in the index that a later checkout writes")
		}
		for _, a := range p.ops {
			c.read(a, "git update-index path", false)
		}
	}
	return true
}

// gitConfig: setting a value writes a configuration file, and a key whose value is a command
// asks, wherever it is written.
func gitConfig(c *call, p parsed) {
	if p.has("get", "get-all", "get-regexp", "get-urlmatch", "get-color", "get-colorbool", "list", "l", "show-origin", "show-scope", "name-only") {
		return
	}
	var ops []arg
	if p.has("f") && len(p.ops) > 0 { // -f FILE
		c.write(p.ops[0], "git config -f", false)
		p.ops = p.ops[1:]
	}
	for _, a := range p.ops {
		if a.lit() && (a.val == "set" || a.val == "get" || a.val == "list" || a.val == "unset" || a.val == "edit") && len(ops) == 0 {
			if a.val == "get" || a.val == "list" {
				return
			}
			continue
		}
		ops = append(ops, a)
	}
	if len(ops) == 0 && !p.has("e", "edit", "unset", "unset-all", "remove-section", "rename-section") {
		return
	}
	if len(ops) > 0 {
		k := strings.ToLower(ops[0].val)
		v := ""
		if len(ops) > 1 {
			v = ops[1].val
		}
		if !ops[0].lit() || contains(gitCommandKeys, k) || strings.HasPrefix(k, "alias.") ||
			strings.HasSuffix(k, ".command") || strings.HasSuffix(k, ".textconv") || strings.HasSuffix(k, ".cmd") ||
			strings.HasSuffix(k, ".clean") || strings.HasSuffix(k, ".smudge") || strings.HasSuffix(k, ".process") ||
			strings.HasSuffix(k, ".driver") || strings.HasPrefix(k, "include") || k == "core.worktree" ||
			strings.HasPrefix(v, "!") {
			c.unknown("git config sets a command or path git may run or read (" + ops[0].val + ")")
		}
	}
	switch {
	case p.has("e", "edit"):
		c.unknown("git config --edit runs an editor")
	case p.has("f"):
	case p.has("file"):
		for _, a := range p.vals("file") {
			c.write(a, "git config --file", false)
		}
	case p.has("global"):
		home := arg{segs: []seg{{text: "~/.gitconfig"}}, val: "~/.gitconfig", src: c.text, pos: c.pos}
		c.write(home, "git config --global", false)
	case p.has("system"):
		c.write(litArg("/etc/gitconfig", c.text, c.pos), "git config --system", false)
	default:
		c.write(litArg(".git/config", c.text, c.pos), "git config", false)
	}
}

// gitRepository asks when git runs where the repository it finds, and so the configuration it
// obeys (core.pager, aliases, core.fsmonitor run commands), is not the one the command
// started in: a directory outside the starting directory, or one this command writes into
// (echo ... > x.git/config && git -C x.git log: a bare repository's configuration is not
// at .git/config, where rules guard it).
func (c *call) gitRepository() {
	start := c.w.a.opt.Dir
	if c.dir == "" || start == "" {
		return // a directory that is not known is an Unknown already
	}
	if c.dir != start && !strings.HasPrefix(c.dir, start+"/") && !strings.HasPrefix(start, c.dir+"/") {
		c.unknown("git runs in " + c.dir + ", outside the directory the command started in: its repository's configuration can run commands")
		return
	}
	for _, e := range c.w.a.res.Effects {
		if e.Op == Write && (e.Path == c.dir || strings.HasPrefix(e.Path, c.dir+"/")) &&
			!strings.HasPrefix(e.Path, c.dir+"/.git/") && e.Path != c.dir+"/.git" {
			base := baseName(e.Path)
			if base == "config" || base == "HEAD" || strings.HasSuffix(e.Path, ".git") {
				c.unknown("git runs in a directory this command writes a repository file into (" + e.Path + "), whose configuration can run commands")
				return
			}
		}
	}
}
