package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pgSchemaURL makes a schema of its own on the test PostgreSQL server and returns a URL whose
// search_path is it (dropped at the end); it skips when no server is given.
func pgSchemaURL(t *testing.T, prefix string) string {
	t.Helper()
	u := os.Getenv("WARDEN_TEST_POSTGRES_URL")
	if u == "" {
		t.Skip("WARDEN_TEST_POSTGRES_URL is not set: skipping the PostgreSQL variant " +
			"(set it to e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	schema := fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "search_path=" + schema
}

// lastLine is the last line of a command's output (where a token's secret is printed).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// apiPut PUTs body to the API with a token and an If-Match, and returns the status and body.
func apiPut(t *testing.T, base, token, path, ifMatch, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("If-Match", ifMatch)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestChangeOnOneInstanceReachesAnother: two warden serve processes on one PostgreSQL store; a
// profile written through one's API is in force for a live session on the other, which is
// told (list_changed) and lists the tool the change gave.
func TestChangeOnOneInstanceReachesAnother(t *testing.T) {
	su := pgSchemaURL(t, "warden_test_data")
	out, stderr, code := run(t, "token", "create", "--access", "admin", "--postgres", su)
	if code != 0 {
		t.Fatalf("token create: %s", stderr)
	}
	admin := lastLine(out)
	args := []string{"--postgres", su, "--heartbeat", "100ms"}
	a := startServe(t, append(args, "--workspaces", filepath.Join(t.TempDir(), "ws"))...)
	b := startServe(t, append(args, "--workspaces", filepath.Join(t.TempDir(), "ws"))...)

	if code, body := apiPut(t, a.base, admin, "/api/v1/tenants/default/profiles/helper", `"0"`, `{"role":"coworker","tools":["files_read"]}`); code/100 != 2 {
		t.Fatalf("create the profile on the first instance: HTTP %d %s", code, body)
	}
	out, stderr, code = run(t, "token", "create", "--postgres", su, "--tenant", "default", "--role", "coworker", "--profile", "helper")
	if code != 0 {
		t.Fatalf("token create for the stored profile: %s", stderr)
	}
	agent := lastLine(out)

	changed := make(chan struct{}, 1)
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.base + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{agent}}}, nil)
	if err != nil {
		t.Fatalf("connect to the second instance: %v\n%s", err, b.out.String())
	}
	defer cs.Close()
	list := func() []string {
		res, err := cs.ListTools(ctx, nil)
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
	if got := list(); !slices.Equal(got, []string{"files_read"}) {
		t.Fatalf("the second instance's session lists %q, want the stored profile's files_read", got)
	}
	if code, body := apiPut(t, a.base, admin, "/api/v1/tenants/default/profiles/helper", `"1"`, `{"role":"coworker","tools":["files_read","files_list"]}`); code != http.StatusOK {
		t.Fatalf("change the profile on the first instance: HTTP %d %s", code, body)
	}
	want := []string{"files_list", "files_read"}
	for got := list(); !slices.Equal(got, want); got = list() {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("the second instance's session still lists %q, want %q\n%s", got, want, b.out.String())
		}
	}
}
