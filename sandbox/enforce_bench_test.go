package sandbox_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/sandboxtest"
	"github.com/wardenhq/warden/sandbox"
)

// benchTree makes a tree of n small files under dir/src (100 to a directory), with a .env
// at its top.
func benchTree(b *testing.B, dir string, n int) {
	b.Helper()
	for i := range n {
		p := filepath.Join(dir, "src", fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%05d.txt", i))
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(secret+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
}

// benchEnforce runs script in ws without and with the hard blocks enforced at the system
// call, one of each per iteration, in turns (which goes first alternates): the load of a shared
// machine drifts over seconds, so runs side by side compare better than one series after the
// other. It reports the mean time of each (off-ns/op, on-ns/op) and the median of the
// iterations' ratios (on/off), the cost of enforcement.
func benchEnforce(b *testing.B, ws string, env []string, script string, rules sandbox.HardBlocks) {
	off := sandbox.Spec{Workspace: ws, Shell: script, Env: env, Stdout: io.Discard, Stderr: io.Discard}
	on := off
	on.Boundaries = rules
	run := func(spec sandbox.Spec) time.Duration {
		start := time.Now()
		res, err := sandbox.Run(context.Background(), spec)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%+v, %v", res, err)
		}
		return time.Since(start)
	}
	var offT, onT time.Duration
	var ratios []float64
	for b.Loop() {
		var a, e time.Duration
		if len(ratios)%2 == 0 {
			a = run(off)
			e = run(on)
		} else {
			e = run(on)
			a = run(off)
		}
		offT, onT = offT+a, onT+e
		ratios = append(ratios, float64(e)/float64(a))
	}
	n := float64(len(ratios))
	slices.Sort(ratios)
	b.ReportMetric(float64(offT.Nanoseconds())/n, "off-ns/op")
	b.ReportMetric(float64(onT.Nanoseconds())/n, "on-ns/op")
	b.ReportMetric(ratios[len(ratios)/2], "on/off")
}

// BenchmarkEnforceTar: tar of a tree of 2,000 files (the .env left out, as a command that
// knows the rules would).
func BenchmarkEnforceTar(b *testing.B) {
	sandboxtest.Need(b)
	ws := b.TempDir()
	benchTree(b, ws, 2000)
	benchEnforce(b, ws, nil, "tar cf /tmp/t.tar src", enforcedRules(b))
}

// BenchmarkEnforceTarReadsFree: the same tar under rules that refuse no read (.env not written
// or removed, rm not run), so the filter lets its read-only opens through.
func BenchmarkEnforceTarReadsFree(b *testing.B) {
	sandboxtest.Need(b)
	ws := b.TempDir()
	benchTree(b, ws, 2000)
	benchEnforce(b, ws, nil, "tar cf /tmp/t.tar src", rulesFrom(b,
		`{"id":"no-env","enabled":true,"type":"path","pattern":"**/.env","match":"glob","operations":["write","delete"]},
		 {"id":"no-rm","enabled":true,"type":"command","pattern":"rm *","match":"glob","operations":["execute"]}`))
}

// BenchmarkEnforceGitStatus: git status in a repository of 10,000 committed files.
func BenchmarkEnforceGitStatus(b *testing.B) {
	sandboxtest.Need(b)
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("needs git")
	}
	ws := b.TempDir()
	benchTree(b, ws, 10000)
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=b", "-c", "user.email=b@b", "-C", ws}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	os.WriteFile(filepath.Join(ws, ".gitignore"), []byte(".env\n"), 0o644)
	git("add", "src", ".gitignore")
	git("commit", "-qm", "tree")
	git("status", "--porcelain") // the index's stat data fresh, as in a working repository
	benchEnforce(b, ws, []string{"HOME=" + ws, "GIT_CONFIG_NOSYSTEM=1"}, "git status --porcelain", enforcedRules(b))
}

// BenchmarkEnforceGoBuild: go build of a small module (its build cache warm, in the
// workspace).
func BenchmarkEnforceGoBuild(b *testing.B) {
	sandboxtest.Need(b)
	goBin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("needs the go toolchain")
	}
	if real, err := filepath.EvalSymlinks(goBin); err == nil {
		goBin = real
	}
	goroot := filepath.Dir(filepath.Dir(goBin))
	// The warm-up builds the standard library into a new cache, minutes on a loaded machine.
	// WARDEN_BENCH_GOBUILD_DIR names a directory to use as the workspace instead, its cache
	// kept from one run to the next (test binaries of two versions, run in turns).
	ws := os.Getenv("WARDEN_BENCH_GOBUILD_DIR")
	if ws == "" {
		ws = b.TempDir()
	} else if err := os.MkdirAll(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n\nimport (\n\t\"fmt\"\n\t\"net/http\"\n)\n\nfunc main() { fmt.Println(http.StatusOK) }\n"), 0o644)
	env := []string{"HOME=" + ws, "GOCACHE=" + ws + "/.cache", "GOPATH=" + ws + "/.gopath", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local",
		"PATH=" + filepath.Join(goroot, "bin") + ":" + sandbox.DefaultPath}
	// Warm the cache once in the sandbox, so each iteration links and checks, as a rebuild does.
	if res, err := sandbox.Run(context.Background(), sandbox.Spec{Workspace: ws, Shell: "go build -o /tmp/m .", Env: env, Timeout: 0}); err != nil || res.ExitCode != 0 {
		b.Fatalf("%+v, %v", res, err)
	}
	benchEnforce(b, ws, env, "go build -o /tmp/m .", enforcedRules(b))
}
