package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/manage"
)

// connectWatching connects an MCP client that reports each tools/list_changed on changed.
func (s *served) connectWatching(t *testing.T, secret string, changed chan<- struct{}) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}})
	tr := &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{secret}}}
	cs, err := c.Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// waitTools waits for a list_changed after which the session lists want.
func waitTools(t *testing.T, cs *mcp.ClientSession, changed <-chan struct{}, want []string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if got := toolNames(t, cs); slices.Equal(got, want) {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the session lists %q, want %q", toolNames(t, cs), want)
		}
	}
}

// TestStoredProfileReachesLiveSession: a profile written through the management data is in
// force for a live session at once: its grant widened, it is told (list_changed) and lists
// the new tool; deleted, its session holds nothing.
func TestStoredProfileReachesLiveSession(t *testing.T) {
	s := serveForTest(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := s.st.withData(t.Context(), s.db, "quickstart.yaml", examples.Quickstart, logger); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	it, err := s.st.data.Put(ctx, manage.KindProfile, "default", "helper", []byte(`{"role":"coworker","tools":["files_read"]}`), 0, "alice")
	if err != nil {
		t.Fatal(err)
	}
	secret := createToken(t, s.db, &auth.Token{Role: auth.RoleAgent, Tenant: "default", SessionRole: "coworker", Profile: "helper"})
	changed := make(chan struct{}, 1)
	cs := s.connectWatching(t, secret, changed)
	if got := toolNames(t, cs); !slices.Equal(got, []string{"files_read"}) {
		t.Fatalf("the stored profile's session lists %q", got)
	}
	if _, err := s.st.data.Put(ctx, manage.KindProfile, "default", "helper", []byte(`{"role":"coworker","tools":["files_read","files_list"]}`), it.Revision, "alice"); err != nil {
		t.Fatal(err)
	}
	waitTools(t, cs, changed, []string{"files_list", "files_read"})
	if err := s.st.data.Delete(ctx, manage.KindProfile, "helper", manage.AnyRevision, "alice"); err != nil {
		t.Fatal(err)
	}
	waitTools(t, cs, changed, nil)
}

// TestExportImportCommands: warden import loads an export into a store, refusing a document
// with a problem whole; warden export writes it back.
func TestExportImportCommands(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "w.db")
	good := filepath.Join(dir, "data.yaml")
	writeFile(t, good, `version: 1
tenants:
  - id: globex
    name: Globex
connections:
  - tenant: globex
    id: globex-firecrawl
    connector: firecrawl
    secret: env:WARDEN_SECRET_GLOBEX__FIRECRAWL
profiles:
  - tenant: globex
    id: crawler
    role: specialist
    tools: [Read, WebFetch]
    grant:
      connectors: [firecrawl]
      allowance:
        firecrawl: {perRun: 5, perDay: 20}
egress:
  - tenant: globex
    allow: [api.globex.example]
boundaries:
  - tenant: globex
    document:
      version: 1
      hardBlocks:
        - {id: no-env, enabled: true, type: path, pattern: "**/.env", match: glob, operations: [read], reason: secrets}
`)
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, "version: 1\ntenants:\n  - id: initech\nprofiles:\n  - {tenant: initech, id: x, tools: [nope]}\n")
	_, stderr, code := run(t, "import", bad, "-c", scout, "--db", dbPath, "--create")
	if code != 1 || !strings.Contains(stderr, "profile x /tools/0") || !strings.Contains(stderr, "nothing was written") {
		t.Fatalf("import of a bad document: status %d, stderr:\n%s", code, stderr)
	}
	out, stderr, code := run(t, "import", good, "-c", scout, "--db", dbPath)
	if code != 0 || !strings.Contains(out, "created: tenant globex, connection globex-firecrawl, profile crawler, egress globex") ||
		!strings.Contains(out, "hard blocks of globex: written") {
		t.Fatalf("import: status %d\n%s\n%s", code, out, stderr)
	}
	// The stored tenant and profile are known to the commands that name them.
	out, stderr, code = run(t, "token", "create", "-c", scout, "--db", dbPath, "--tenant", "globex", "--role", "specialist", "--profile", "crawler")
	if code != 0 {
		t.Fatalf("token create for the stored profile: status %d\n%s\n%s", code, out, stderr)
	}
	exported := filepath.Join(dir, "export.yaml")
	if _, stderr, code = run(t, "export", "-c", scout, "--db", dbPath, "-o", exported); code != 0 {
		t.Fatalf("export: status %d\n%s", code, stderr)
	}
	text, err := os.ReadFile(exported)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"  - tenant: globex\n    id: crawler\n", "api.globex.example", "no-env"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the export lacks %q:\n%s", want, text)
		}
	}
	// Imported again into the same store: nothing changes.
	out, _, code = run(t, "import", exported, "-c", scout, "--db", dbPath)
	if code != 0 || !strings.Contains(out, "unchanged: tenant globex, connection globex-firecrawl, profile crawler, egress globex") {
		t.Errorf("a second import: status %d\n%s", code, out)
	}
}
