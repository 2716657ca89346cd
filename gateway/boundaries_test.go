package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/store/postgres"
	"github.com/wardenhq/warden/store/sqlite"
	"github.com/wardenhq/warden/store/storetest"
)

// boundsPolicy writes one deployment-wide hard block; the tests store more.
const boundsPolicy = `
version: 1
builtins:
  - name: files_read
  - name: files_write
boundaries:
  version: 1
  hardBlocks:
    - {id: no-env, enabled: true, type: path, pattern: "**/.env", match: glob, operations: [read, write]}
tenants:
  - id: acme
  - id: other
`

const blockPlans = `{"version":1,"hardBlocks":[{"id":"no-plans","enabled":true,"type":"path",
	"pattern":"**/plans.txt","match":"glob","operations":["read","write"],"reason":"plans stay private"}]}`

// boundsRig is a gateway whose BoundariesRead reports each read of the stored documents.
type boundsRig struct {
	*rig
	read chan struct{}
}

func newBoundsRig(t *testing.T, db storetest.Store) *boundsRig {
	t.Helper()
	read := make(chan struct{}, 64)
	r := newRigOn(t, db, []byte(boundsPolicy), nil, func(o *Options) {
		o.BoundaryStore = db
		o.BoundariesRead = func() {
			select {
			case read <- struct{}{}:
			default:
			}
		}
	})
	return &boundsRig{rig: r, read: read}
}

// waitRevision waits, read by read, until the gateway has read revision rev of the tenant's
// stored document (no sleeping: the watch says when it read).
func (r *boundsRig) waitRevision(tenant string, rev int64) {
	r.t.Helper()
	for {
		if st := r.gw.bounds.Stored(tenant); st != nil && st.Revision >= rev {
			return
		}
		select {
		case <-r.read:
		case <-r.t.Context().Done():
			r.t.Fatalf("the gateway never read revision %d of %s's hard blocks", rev, tenant)
		}
	}
}

func wantBlocked(t *testing.T, what, out string, isErr bool, code, rule string) {
	t.Helper()
	if !isErr || !strings.Contains(out, code) || !strings.Contains(out, rule) {
		t.Errorf("%s: error %v, %q; want it refused with %s (%s)", what, isErr, out, code, rule)
	}
}

func wantRan(t *testing.T, what, out string, isErr bool) {
	t.Helper()
	if isErr {
		t.Errorf("%s was refused: %s", what, out)
	}
}

// testStoredBoundaries runs the scenario on two gateways sharing a store (a and b are two
// instances of it, as two processes would open it).
func testStoredBoundaries(t *testing.T, a, b storetest.Store) {
	ctx := context.Background()
	ra, rb := newBoundsRig(t, a), newBoundsRig(t, b)
	sa := ra.connect(ra.token("acme", "person", ""), nil)
	sb := rb.connect(rb.token("acme", "person", ""), nil)
	so := ra.connect(ra.token("other", "person", ""), nil)
	write := map[string]any{"path": "plans.txt", "content": "x"}

	// The policy's rule is in force from the start, on both.
	out, isErr := call(t, sa, "files_write", map[string]any{"path": ".env", "content": "K=v"})
	wantBlocked(t, "writing .env (the policy's rule)", out, isErr, "hard_policy_block", "no-env")
	out, isErr = call(t, sa, "files_write", write)
	wantRan(t, "a write before the tenant stored rules", out, isErr)
	out, isErr = call(t, sb, "files_write", write)
	wantRan(t, "a write on the second instance before the tenant stored rules", out, isErr)

	// A PUT through the first instance's REST API reaches its live session's next call at
	// once.
	api := httptest.NewServer(server.New(server.Options{Store: a, Broker: ra.broker, Boundaries: ra.gw}))
	t.Cleanup(api.Close)
	admin, hash, err := auth.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.CreateToken(ctx, &auth.Token{ID: "tok_admin_" + newID(), Hash: hash, Role: auth.RoleAdmin, Name: "alice", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPut, api.URL+"/api/v1/tenants/acme/boundaries", strings.NewReader(blockPlans))
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("If-Match", `"0"`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("ETag") != `"1"` {
		t.Fatalf("PUT of acme's hard blocks: %d, ETag %q; want 200 and \"1\"", resp.StatusCode, resp.Header.Get("ETag"))
	}
	out, isErr = call(t, sa, "files_write", write)
	wantBlocked(t, "the same session's next write", out, isErr, "hard_policy_block", "no-plans")
	out, isErr = call(t, sa, "files_read", map[string]any{"path": ".env"})
	wantBlocked(t, "the policy's rule after the stored one was added", out, isErr, "hard_policy_block", "no-env")
	// Another tenant's sessions are untouched.
	out, isErr = call(t, so, "files_write", write)
	wantRan(t, "another tenant's write", out, isErr)

	// The second instance's live session meets it at its next call once its watch has read it.
	rb.waitRevision("acme", 1)
	out, isErr = call(t, sb, "files_write", write)
	wantBlocked(t, "the second instance's session", out, isErr, "hard_policy_block", "no-plans")

	// An editor that read nothing, or an older revision, is stale.
	if _, err := rb.gw.PutBoundaries(ctx, "acme", []byte(`{"version":1,"hardBlocks":[]}`), 0, "bob"); !errors.Is(err, boundary.ErrStale) {
		t.Errorf("a stale write: %v, want ErrStale", err)
	}
	// A document with errors is refused whole, with every field error.
	_, err = ra.gw.PutBoundaries(ctx, "acme", []byte(`{"version":1,"hardBlocks":[{"id":"x","type":"path","pattern":"/a","match":"fuzzy","operations":["read"]}]}`), 1, "bob")
	var ve boundary.ValidationError
	if !errors.As(err, &ve) || len(ve) != 2 {
		t.Errorf("an invalid document: %v; want a ValidationError with 2 field errors", err)
	}

	// The change is in the audit trail, naming who made it.
	evs, err := a.Query(ctx, audit.Filter{Kind: audit.KindBoundaries})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Tenant != "acme" || evs[0].Principal != "alice" || len(evs[0].Rules) != 1 || evs[0].Rules[0] != "no-plans" {
		t.Errorf("audit events of the change: %+v; want one by alice for acme naming no-plans", evs)
	}

	// Stored data that does not validate (written past the API) blocks every call of the
	// tenant, on every instance, with boundary_config_invalid.
	if _, err := b.PutBoundaries(ctx, &boundary.Stored{Tenant: "acme", Data: []byte(`{"version":1,"hardBlocks":[{"id":"x"}]}`)}, boundary.AnyRevision); err != nil {
		t.Fatal(err)
	}
	ra.waitRevision("acme", 2)
	rb.waitRevision("acme", 2)
	out, isErr = call(t, sa, "files_read", map[string]any{"path": "anything.txt"})
	wantBlocked(t, "a read under invalid stored rules (first instance)", out, isErr, "boundary_config_invalid", "")
	out, isErr = call(t, sb, "files_read", map[string]any{"path": "anything.txt"})
	wantBlocked(t, "a read under invalid stored rules (second instance)", out, isErr, "boundary_config_invalid", "")
	out, isErr = call(t, so, "files_read", map[string]any{"path": "anything.txt"})
	if isErr && strings.Contains(out, "boundary_config_invalid") {
		t.Errorf("another tenant is blocked by acme's invalid rules: %s", out)
	}
}

func TestStoredBoundariesSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "warden.db")
	open := func() *sqlite.DB {
		db, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	testStoredBoundaries(t, open(), open())
}

// postgresSchema returns a URL selecting a schema of the test's own on
// WARDEN_TEST_POSTGRES_URL, dropped when the test ends; unset, the test skips.
func postgresSchema(t *testing.T) string {
	t.Helper()
	base := os.Getenv("WARDEN_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("WARDEN_TEST_POSTGRES_URL is not set")
	}
	schema := "warden_test_gw_" + newID()
	exec := func(sql string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec("CREATE SCHEMA " + pgx.Identifier{schema}.Sanitize())
	t.Cleanup(func() { exec("DROP SCHEMA " + pgx.Identifier{schema}.Sanitize() + " CASCADE") })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func TestStoredBoundariesPostgres(t *testing.T) {
	u := postgresSchema(t)
	open := func() *postgres.DB {
		db, err := postgres.Open(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	testStoredBoundaries(t, open(), open())
}

// A subagent reviews with its parent's hard blocks (S9): the policy's, and a stored document
// written after it started, at its next call.
func TestSubagentMeetsItsParentsHardBlocks(t *testing.T) {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "warden.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	r := newRigOn(t, db, examples.Quickstart, nil, func(o *Options) { o.BoundaryStore = db })
	cs := r.connect(r.token("default", "person", ""), nil)
	if out, isErr := call(t, cs, "files_write", map[string]any{"path": "plans.txt", "content": "x"}); isErr {
		t.Fatalf("the parent's write: %s", out)
	}
	out, isErr := call(t, cs, "spawn_subagent", map[string]any{"root": ".", "task": "read the plans"})
	if isErr {
		t.Fatalf("spawn: %s", out)
	}
	var res struct{ Token string }
	if err := json.Unmarshal([]byte(out[strings.IndexByte(out, '{'):]), &res); err != nil {
		t.Fatalf("spawn: %s", out)
	}
	var parent *session
	r.gw.mu.Lock()
	for _, s := range r.gw.sessions {
		parent = s
	}
	r.gw.mu.Unlock()
	values, err := parent.secrets.Resolve(map[string]string{"WARDEN_TOKEN": res.Token})
	if err != nil {
		t.Fatal(err)
	}
	kid := r.connect(values["WARDEN_TOKEN"].Reveal(), nil)

	out, isErr = call(t, kid, "files_read", map[string]any{"path": ".env"})
	wantBlocked(t, "the subagent reading .env (the quickstart's rule)", out, isErr, "hard_policy_block", "dotenv")
	out, isErr = call(t, kid, "files_read", map[string]any{"path": "plans.txt"})
	wantRan(t, "the subagent's read before the tenant stored rules", out, isErr)
	if _, err := r.gw.PutBoundaries(context.Background(), "default", []byte(blockPlans), 0, "alice"); err != nil {
		t.Fatal(err)
	}
	out, isErr = call(t, kid, "files_read", map[string]any{"path": "plans.txt"})
	wantBlocked(t, "the subagent's next read", out, isErr, "hard_policy_block", "no-plans")
}

// A reload whose hard blocks do not validate (a caller that did not check them) blocks every
// call rather than serve without them; a good reload lifts that.
func TestReloadWithInvalidRulesBlocksEverything(t *testing.T) {
	r := newRig(t, []byte(boundsPolicy), nil)
	cs := r.connect(r.token("acme", "person", ""), nil)
	reload := func(text string) {
		p, err := policy.Parse("p.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		r.gw.Reload(p, p.Env(policy.MapLookup(nil)))
	}
	reload(strings.Replace(boundsPolicy, "match: glob", "match: globby", 1))
	out, isErr := call(t, cs, "files_read", map[string]any{"path": "notes.txt"})
	wantBlocked(t, "a call after a reload with invalid rules", out, isErr, "boundary_config_invalid", "policy's hard-block document")
	reload(boundsPolicy)
	out, isErr = call(t, cs, "files_write", map[string]any{"path": "notes.txt", "content": "x"})
	wantRan(t, "a call after a good reload", out, isErr)
}
