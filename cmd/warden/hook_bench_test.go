package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkHookClaudeCodeRead is one hook process answering an allowed Read, from its start to
// its exit, as Claude Code runs it before every call: the quickstart policy, the decision
// recorded in the default store.
func BenchmarkHookClaudeCodeRead(b *testing.B) {
	bin, err := buildWarden()
	if err != nil {
		b.Fatal(err)
	}
	project, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "main.go"), []byte("package main\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	ev := []byte(`{"session_id":"s","transcript_path":"/t.jsonl","cwd":"` + project + `","permission_mode":"default",` +
		`"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"` + project + `/main.go"},"tool_use_id":"toolu_b"}`)
	want := []byte(`"permissionDecision":"allow"`)
	// cpu is the CPU time the processes took (user and system), which a loaded machine
	// stretches less than the wall clock.
	var cpu time.Duration
	run := func(b *testing.B) {
		cmd := exec.Command(bin, "hook", "claude-code")
		cmd.Dir = project
		cmd.Env = append(os.Environ(), "CLAUDE_PROJECT_DIR="+project)
		cmd.Stdin = bytes.NewReader(ev)
		out, err := cmd.Output()
		if err != nil || !bytes.Contains(out, want) {
			b.Fatalf("%s: %v", out, err)
		}
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	run(b) // makes the store
	b.Run("hook", func(b *testing.B) {
		cpu = 0
		for range b.N {
			run(b)
		}
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N)/1000, "cpu-ms/op")
	})
	// The same binary doing nothing but start and exit: what the hook costs beyond it is its own.
	b.Run("version", func(b *testing.B) {
		cpu = 0
		for range b.N {
			cmd := exec.Command(bin, "version")
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
			cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N)/1000, "cpu-ms/op")
	})
}
