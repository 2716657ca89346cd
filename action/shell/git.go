package shell

import (
	"strings"
)

var gitGlobal = posixGrammar("C:c:", "git-dir= work-tree= namespace= exec-path=? config-env= super-prefix= "+
	"list-cmds= attr-source= paginate no-pager bare no-replace-objects literal-pathspecs glob-pathspecs "+
	"noglob-pathspecs icase-pathspecs no-optional-locks help version")

// gitCommandKeys are configuration keys whose value is a command git runs.
var gitCommandKeys = []string{"core.sshcommand", "core.pager", "core.editor", "core.fsmonitor",
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
		}
	}
	if g.first >= len(c.args) || !c.args[g.first].lit() {
		return
	}
	sub := c.args[g.first].val
	gr := gitSubs[sub]
	if gr == nil {
		return
	}
	p := gr.parse(c.args[g.first+1:])
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
