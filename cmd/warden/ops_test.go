package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// A flag's WARDEN_* variable sets it; the command line wins; a bad value names the variable.
func TestFlagsFromTheEnvironment(t *testing.T) {
	var got string
	var n int
	newCmd := func() *cobra.Command {
		root := &cobra.Command{Use: "w", SilenceErrors: true, SilenceUsage: true,
			PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return applyEnv(cmd, envOf(t)) }}
		root.PersistentFlags().String("config", "", "c")
		sub := &cobra.Command{Use: "serve", RunE: func(*cobra.Command, []string) error { return nil }}
		sub.Flags().StringVar(&got, "postgres-schema", "public", "schema")
		sub.Flags().IntVar(&n, "max-things", 1, "n")
		root.AddCommand(sub)
		documentEnv(root)
		return root
	}
	exec := func(env map[string]string, args ...string) error {
		t.Helper()
		testEnv = env
		cmd := newCmd()
		cmd.SetArgs(args)
		cmd.SetOut(&bytes.Buffer{})
		return cmd.Execute()
	}
	if err := exec(map[string]string{"WARDEN_POSTGRES_SCHEMA": "tenant_a", "WARDEN_MAX_THINGS": "7"}, "serve"); err != nil {
		t.Fatal(err)
	}
	if got != "tenant_a" || n != 7 {
		t.Errorf("from the environment: schema %q, n %d; want tenant_a, 7", got, n)
	}
	if err := exec(map[string]string{"WARDEN_POSTGRES_SCHEMA": "tenant_a"}, "serve", "--postgres-schema", "mine"); err != nil {
		t.Fatal(err)
	}
	if got != "mine" {
		t.Errorf("the flag and the variable: %q, want the flag's", got)
	}
	err := exec(map[string]string{"WARDEN_MAX_THINGS": "many"}, "serve")
	if err == nil || !strings.Contains(err.Error(), "WARDEN_MAX_THINGS") {
		t.Errorf("a bad value: %v, want an error naming WARDEN_MAX_THINGS", err)
	}
	if code := exitCode(err, &bytes.Buffer{}); code != 2 {
		t.Errorf("a bad value: exit status %d, want 2 (usage)", code)
	}
	help := newCmd()
	help.SetArgs([]string{"serve", "--help"})
	var out bytes.Buffer
	help.SetOut(&out)
	testEnv = nil
	if err := help.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"$WARDEN_POSTGRES_SCHEMA", "$WARDEN_MAX_THINGS", "$WARDEN_CONFIG"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("serve --help does not name %s:\n%s", want, out.String())
		}
	}
}

// testEnv stands in for the environment in TestFlagsFromTheEnvironment.
var testEnv map[string]string

func envOf(*testing.T) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := testEnv[k]; return v, ok }
}

// warden serve's real flags are read from the environment too, and a bad log level or format
// is a usage error naming where it came from.
func TestServeLogFlags(t *testing.T) {
	t.Setenv("WARDEN_LOG_LEVEL", "loud")
	_, errOut, code := run(t, "serve", "--db", t.TempDir()+"/w.db")
	if code != 2 || !strings.Contains(errOut, "WARDEN_LOG_LEVEL") {
		t.Errorf("WARDEN_LOG_LEVEL=loud: status %d, %q; want 2 and the variable named", code, errOut)
	}
	_, errOut, code = run(t, "serve", "--log-level", "debug", "--log-format", "xml", "--db", t.TempDir()+"/w.db")
	if code != 2 || !strings.Contains(errOut, "--log-format") {
		t.Errorf("--log-format xml: status %d, %q; want 2 and the flag named", code, errOut)
	}
	_, errOut, code = run(t, "mcp", "--log-format", "json", "--log-level", "silly")
	if code != 2 || !strings.Contains(errOut, "--log-level") {
		t.Errorf("mcp --log-level silly: status %d, %q; want 2 and the flag named", code, errOut)
	}
}

// JSON logs are one JSON object a line, at the level asked for.
func TestLogFormatJSON(t *testing.T) {
	var buf bytes.Buffer
	o := &logOptions{format: "json", level: "warn"}
	cmd := &cobra.Command{}
	o.register(cmd, "info")
	o.format, o.level = "json", "warn"
	l, err := o.logger(&buf)
	if err != nil {
		t.Fatal(err)
	}
	l.Info("not written")
	l.Warn("written", "k", 1)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1 (info is below warn): %q", len(lines), buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil || rec["msg"] != "written" || rec["level"] != "WARN" {
		t.Errorf("a record %q: %v", lines[0], err)
	}
}

// warden version prints gateway.Version and the build's module and VCS fields, as text and JSON.
func TestVersion(t *testing.T) {
	want := readBuildInfo()
	out, _, code := run(t, "version", "--json")
	if code != 0 {
		t.Fatalf("version --json: status %d", code)
	}
	var got buildInfo
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("version --json: %v in %q", err, out)
	}
	if got != want || got.Version == "" || got.Module == "" || got.Go == "" {
		t.Errorf("version --json = %+v, want %+v", got, want)
	}
	out, _, code = run(t, "version")
	if code != 0 || !strings.Contains(out, "warden "+want.Version) || !strings.Contains(out, want.Module) {
		t.Errorf("version: status %d, %q", code, out)
	}
}
