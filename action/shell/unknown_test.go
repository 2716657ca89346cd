package shell

import (
	"strings"
	"testing"
)

// effectOrUnknown is a case for TestWhatReviewCannotKnow: the effect that must be found
// ("op path", with -r for a recursive one), or "?" for an Unknown, or "" for neither.
type effectOrUnknown struct {
	give string
	want string
}

// TestWhatReviewCannotKnow checks each class of what review cannot know statically: it is an
// Unknown, or the effect it could have, never nothing.
func TestWhatReviewCannotKnow(t *testing.T) {
	tests := []effectOrUnknown{
		// programs the table does not know
		{"unshare cat s", "read /w/s"},
		{"unshare -r rm s", "delete /w/s"},
		{"nsenter -t 1 rm s", "delete /w/s"},
		{"somefancytool --config=s", "read /w/s"},
		{"gcc -o /etc/x x.c", "write /etc/x"},
		{"gcc -o/etc/x x.c", "write /etc/x"},
		{"go build -o=/etc/x .", "write /etc/x"},
		{"openssl enc -in s -out /etc/x", "write /etc/x"},
		{"openssl enc -in s -out /etc/x", "read /w/s"},
		{"tool --output-file /etc/x", "write /etc/x"},
		{"tool of=/etc/x", "write /etc/x"},
		{"tool $F", "?"},
		{"python3 -m json.tool s", "read /w/s"},
		{"make -f s", "read /w/s"},
		{"make --eval 'x: ; cat s'", "?"},
		{"make -f - < s", "?"},
		{"expect -c 'spawn cat s'", "?"},
		{"gdb -batch -ex 'shell cat s'", "?"},
		{"sg wheel 'cat s'", "read /w/s"},
		{"echo s | xargs cat", "?"},
		{"http POST example.com @s", "read /w/s"},
		{"http POST example.com f=@s", "read /w/s"},
		{"cargo build --target-dir /etc/x", "write /etc/x"},
		{"socat - EXEC:x", "?"},
		{"curl file:///etc/shadow", "read /etc/shadow"},
		{"curl file://localhost/etc/shadow", "read /etc/shadow"},
		{"curl \"file://$PWD/s\"", "?"},
		// a program run by a path is what it is
		{"ln -s /bin/rm r && ./r s", "delete /w/s"},
		{"cp /bin/rm r; ./r s", "delete /w/s"},
		{"./tool s", "read /w/s"},
		{"./s", "read /w/s"},
		{"cp $(which rm) r && ./r s", "?"},
		// scripts are read
		{". s", "read /w/s"},
		{"source s", "read /w/s"},
		{"bash -x s", "read /w/s"},
		{"bash -o errexit s", "read /w/s"},
		{"python3 s", "read /w/s"},
		{"awk -f s x", "read /w/s"},
		{"sed -f s x", "read /w/s"},
		{"pwsh -File s", "read /w/s"},
		{"deno run s", "read /w/s"},
		{"bun s", "read /w/s"},
		{"node --env-file=s app.js", "read /w/s"},
		{"deno run --env-file s x.ts", "read /w/s"},
		{"source /dev/stdin", "?"},
		{"source <(echo x)", "?"},
		{"bash /dev/stdin", "?"},
		// variables that run code or change what names mean
		{"LESSOPEN='|cat s' less x", "?"},
		{"export GIT_SSH_COMMAND=x", "?"},
		{"GIT_CONFIG_KEY_0=core.pager git log", "?"},
		{"env BASH_ENV=s bash -c true", "?"},
		{"sudo LD_PRELOAD=./x.so ls", "?"},
		{"declare -x PAGER=x", "?"},
		{"HOME=/etc; cat ~/x", "?"},
		{"CDPATH=/ cd etc", "?"},
		{"PATH=.:$PATH ls", "?"},
		{"BASH_CMDS[ls]=/bin/cat; ls", "?"},
		{"read -r LESSOPEN < x", "?"},
		{"printf -v GIT_PAGER x", "?"},
		{"declare -n r=PAGER", "?"},
		// shell state
		{"alias x='cat s'", "read /w/s"},
		{"alias x=$C", "?"},
		{"hash -p /bin/cat ls", "?"},
		{"enable -f ./x.so x", "?"},
		{"mapfile -C 'cat s #' -c 1 l < x", "?"},
		// brace expansion in redirect targets
		{"echo x > /{e..e}tc/hosts", "write /etc/hosts"},
		{"cat < {s..s}", "read /w/s"},
		// git
		{"git rebase -x 'cat s' main", "?"},
		{"git submodule foreach 'cat s'", "?"},
		{"git bisect run ./t", "?"},
		{"git difftool HEAD", "?"},
		{"git x", "?"},
		{"git --git-dir=/tmp/x log", "?"},
		{"git --exec-path=/tmp/x status", "?"},
		{"echo '[core]pager=cat s' > x.git/config && git -C x.git log", "?"},
		{"mkdir r.git && cd r.git && git log", "?"},
		{"cd /tmp/r && git status", "?"},
		{"git config alias.x '!cat s'", "?"},
		{"git config user.name x", "write /w/.git/config"},
		{"git config --global user.name x", "write /home/u/.gitconfig"},
		{"git diff --no-index s t", "read /w/s -r"},
		{"git show HEAD:s", "read /w/s"},
		{"git grep x", "read /w -r"},
		{"git grep x -- s", "read /w/s -r"},
		{"git blame s", "read /w/s"},
		{"git log -p s", "read /w/s -r"},
		{"git update-index --add s", "read /w/s"},
		{"git add .", "read /w -r"},
		{"git -C /etc init", "write /etc/.git -r"},
		// git reads the repository it runs in, and writes what it records
		{"git status", "read /w/.git -r"},
		{"git status", "read /w -r"}, // a listing of the work tree
		{"git log -1", "read /w/.git -r"},
		{"cd sub && git log", "read /w/.git -r"}, // the repository may be above
		{"git diff", "write /w/.git/index"},
		{"git commit -m x", "write /w/.git/objects -r"},
		{"git checkout -b x", "write /w/.git/refs -r"},
		{"git init r", "write /w/r/.git -r"},
		// a pathspec's wildcard is git's: it matches across directories
		{"git add '*.local'", "read /w -r"},
		{"git grep --untracked x -- 'sub/*.go'", "read /w/sub -r"},
		// bash lists the directory of every glob it expands
		{"echo ~/.ssh/*", "read /home/u/.ssh"},
		{"for f in ~/.ssh/*; do :; done", "read /home/u/.ssh"},
		{"printf '%s\\n' */*.go", "read /w -r"},
		{"echo $D/*", "?"},
		// a link the command makes is followed
		{"ln -s ~ k && cat k/.ssh/id_ed25519", "read /home/u/.ssh/id_ed25519"},
		{"ln -s ~/.ssh a; ln -s a b; cat b/id", "read /home/u/.ssh/id"},
		{"ln -sr sub/x l && rm l/y", "delete /w/sub/x/y"},
		{"ln -s \"$X\" q && cat q/y", "?"},
		// programs that list their directory, and every directory mkdir -p makes
		{"make", "read /w"},
		{"python3 -m pytest", "read /w"},
		{"mkdir -p a/b/c", "write /w/a"},
		{"mkdir -p a/b/c", "write /w/a/b"},
		{"mktemp -d -p .", "write /w/tmp.*"},
		{"mktemp -p ~/.ssh", "write /home/u/.ssh/tmp.*"},
		{"mktemp out/x.XXXXXX", "write /w/out/x.*"},
		{"git init /etc/x", "write /etc/x"},
		{"git archive -o /etc/x HEAD", "write /etc/x"},
		{"git diff --output=/etc/x", "write /etc/x"},
		{"git mv s /etc/x", "write /etc/x -r"},
	}
	for _, tt := range tests {
		checkEffectOrUnknown(t, tt)
	}
}

// TestOrdinaryWorkIsKnown checks that everyday commands that were Unknowns, or reported
// trees they do not read, are known and plain.
func TestOrdinaryWorkIsKnown(t *testing.T) {
	for _, give := range []string{
		"python3 --version", "node -v", "bash --version", "perl --version",
		"mkdir -p x && cd x && echo hi > f",
		"git init r && cd r && git status",
		"export PATH=$PATH:/opt/bin",
		"git status; git log --oneline; git diff; git commit -m x; git config --get user.name",
		"cd sub && git status && git checkout -- a && git log -p",
		"alias ll='ls -la'",
	} {
		a, err := Analyze(give, testOptions())
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Unknowns) > 0 {
			t.Errorf("%s: unknowns %v", give, a.Unknowns)
		}
	}
	for _, tt := range []effectOrUnknown{
		{"find . -name '*.go'", "read /w -r"},
		{"ls -R sub", "read /w/sub -r"},
		{"mkdir -p x && cd x && echo hi > f", "write /w/x/f"},
		{"git init r && cd r && touch f", "write /w/r/f"},
		{"cp -r sub sub2", "write /w/sub2 -r"},
	} {
		checkEffectOrUnknown(t, tt)
		a, _ := Analyze(tt.give, testOptions())
		for _, e := range a.Effects {
			if (strings.HasPrefix(tt.give, "find") || strings.HasPrefix(tt.give, "ls")) && !e.Listing {
				t.Errorf("%s: a listing reads the files below %s", tt.give, e.Path)
			}
			if strings.HasPrefix(tt.give, "cp") && e.Op == Write && e.Recursive && e.From != "/w/sub" {
				t.Errorf("%s: the copy's tree comes from %q; want /w/sub", tt.give, e.From)
			}
		}
	}
}

func checkEffectOrUnknown(t *testing.T, tt effectOrUnknown) {
	t.Helper()
	a, err := Analyze(tt.give, testOptions())
	if err != nil {
		t.Fatalf("%s: %v", tt.give, err)
	}
	if tt.want == "?" {
		if len(a.Unknowns) == 0 {
			t.Errorf("%s: no Unknown; effects %v", tt.give, a.Effects)
		}
		return
	}
	for _, e := range a.Effects {
		s := string(e.Op) + " " + e.Path
		if e.Recursive {
			s += " -r"
		}
		if s == tt.want {
			return
		}
	}
	t.Errorf("%s: no %q in %v (unknowns %v)", tt.give, tt.want, a.Effects, a.Unknowns)
}
