package shell

import "strings"

// What git does to the repository it runs in. Every git command reads its repository (HEAD,
// config, refs, objects); many refresh the index; those that record history write objects,
// refs and logs; status, diff, add, commit and stash list the work tree. None of them writes
// .git/hooks or .git/config, where the example hard blocks guard a repository: those are
// written by git init (judged on the repository already there, see gitInit) and git config.

// gitIndexSubs refresh or change the index.
var gitIndexSubs = map[string]bool{}

// gitHistorySubs write objects, refs, logs and the files at the top of .git that name commits.
var gitHistorySubs = map[string]bool{}

// gitTreeSubs compare the work tree with the index: they list it, reading each directory's
// .gitignore.
var gitTreeSubs = map[string]bool{}

// gitNoRepository are the subcommands that need no repository.
var gitNoRepository = map[string]bool{"init": true, "clone": true, "help": true, "version": true}

// gitHistoryFiles are what history commands write in .git; a name ending in / is a tree.
var gitHistoryFiles = []string{"objects/", "refs/", "logs/", "HEAD", "ORIG_HEAD", "FETCH_HEAD",
	"packed-refs", "COMMIT_EDITMSG"}

// gitMergeFiles are what the subcommands that merge (gitMergeSubs) write in .git besides: the
// state of a merge, rebase or pick that stopped.
var gitMergeFiles = []string{"MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "AUTO_MERGE", "REBASE_HEAD",
	"CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge/", "rebase-apply/", "sequencer/"}

// gitMergeSubs merge, rebase or pick commits.
var gitMergeSubs = map[string]bool{"merge": true, "pull": true, "rebase": true, "cherry-pick": true, "revert": true, "am": true}

func init() {
	for _, s := range strings.Fields(`status diff add commit stash checkout switch reset restore rm mv
		merge pull rebase cherry-pick revert am apply update-index read-tree checkout-index
		sparse-checkout`) {
		gitIndexSubs[s] = true
	}
	for _, s := range strings.Fields(`add commit stash branch checkout switch tag merge pull fetch
		rebase reset cherry-pick revert am notes gc repack prune update-ref symbolic-ref replace
		hash-object write-tree commit-tree bisect reflog remote submodule worktree maintenance
		commit-graph pack-refs`) {
		gitHistorySubs[s] = true
	}
	for _, s := range strings.Fields(`status diff add commit stash`) {
		gitTreeSubs[s] = true
	}
}

// gitRepoEffects reports what git sub does to the repository it finds from c.dir. Where that
// repository is is not known statically: git looks in c.dir and each directory above it, so
// each of those up to the directory the command started in is reported (a .git that is not
// there is read and written by no one).
func (c *call) gitRepoEffects(sub string, p parsed) {
	if gitNoRepository[sub] || c.dir == "" {
		return
	}
	dirs := c.gitRepoDirs()
	for _, d := range dirs {
		c.gitEff(Read, d+"/.git/", "git (its repository)")
		if gitReadOnly(sub, p) {
			continue
		}
		if gitIndexSubs[sub] {
			c.gitEff(Write, d+"/.git/index", "git "+sub+" (the index)")
		}
		if gitHistorySubs[sub] {
			for _, f := range gitHistoryFiles {
				c.gitEff(Write, d+"/.git/"+f, "git "+sub+" (history)")
			}
		}
		if gitMergeSubs[sub] {
			for _, f := range gitMergeFiles {
				c.gitEff(Write, d+"/.git/"+f, "git "+sub+" (merge state)")
			}
		}
	}
	if gitTreeSubs[sub] && !p.has("cached", "staged") && !gitReadOnly(sub, p) {
		// the work tree's top is the outermost directory the repository can be in
		top := dirs[len(dirs)-1]
		c.w.targetFrom(c.idx, "", Read, litArg(top, c.text, c.pos), "git "+sub+" (work tree)", true, listingTree)
		for _, d := range dirs {
			c.gitEff(Read, d+"/.gitignore", "git "+sub+" (ignore rules)")
		}
	}
}

// gitEff reports op on the absolute path p; a p ending in / is the tree below it. A write of
// a tree is a change in place (Effect.From is the tree itself): git adds objects named by
// their hashes and refs named by branches and tags to its own stores, which are judged on the
// names already there.
func (c *call) gitEff(op Op, p, why string) {
	rec := strings.HasSuffix(p, "/")
	p = strings.TrimSuffix(p, "/")
	from := ""
	if rec && op == Write {
		if real, err := c.w.a.resolve("", p); err == nil {
			from = real
		}
	}
	c.w.targetFrom(c.idx, "", op, litArg(p, c.text, c.pos), why, rec, from)
}

// gitRepoDirs are the directories git may find its repository in: c.dir and the directories
// above it up to the one the command started in, innermost first; only c.dir where c.dir is
// not below that one.
func (c *call) gitRepoDirs() []string {
	start := c.w.a.opt.Dir
	dirs := []string{c.dir}
	if start == "" || !strings.HasPrefix(c.dir, start+"/") {
		return dirs
	}
	for d := c.dir; d != start; {
		d = d[:strings.LastIndexByte(d, '/')]
		dirs = append(dirs, d)
	}
	return dirs
}

// gitReadOnly reports the forms of history subcommands that only list (git branch, git tag,
// git stash list, git remote -v): they read the repository and write nothing.
func gitReadOnly(sub string, p parsed) bool {
	first := ""
	if len(p.ops) > 0 && p.ops[0].lit() {
		first = p.ops[0].val
	}
	switch sub {
	case "branch":
		changes := p.has("d", "D", "m", "M", "c", "C", "delete", "move", "copy", "u", "set-upstream-to",
			"unset-upstream", "edit-description", "f", "force", "t", "track")
		return !changes && (len(p.ops) == 0 || p.has("l", "list", "contains", "merged", "no-merged", "points-at"))
	case "tag":
		return !p.has("d", "delete", "a", "s", "u", "f", "m", "F") && (len(p.ops) == 0 || p.has("l", "list", "n", "contains", "merged", "no-merged", "points-at"))
	case "stash":
		return first == "list" || first == "show"
	case "remote":
		return first == "" || first == "show" || first == "get-url"
	case "reflog":
		return first == "" || first == "show"
	case "worktree", "notes":
		return first == "list" || first == "show"
	case "bisect":
		return first == "log" || first == "visualize" || first == "view"
	}
	return false
}

// gitPathspec is a read of what a pathspec names. A pathspec with a wildcard is git's, not
// the shell's, even quoted: its * matches across directories ('*.local' is
// config/.env.local), so it reads the tree below the directory before its first wildcard.
func (c *call) gitPathspec(a arg, why string) {
	if !a.lit() || !strings.ContainsAny(a.val, "*?[") {
		c.read(a, why, true)
		return
	}
	at := strings.IndexAny(a.val, "*?[")
	switch cut := strings.LastIndexByte(a.val[:at], '/'); cut {
	case -1:
		c.read(litArg(".", c.text, c.pos), why+" (a pathspec's wildcard)", true)
	default:
		c.read(argPrefix(a, max(cut, 1)), why+" (a pathspec's wildcard)", true)
	}
}
