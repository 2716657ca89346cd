package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/store/sqlite"
)

// warden audit refuses a filter it cannot apply with a usage error (status 2) naming the flag
// and, for --kind and --decision, the values it may take: an unknown kind used to print
// nothing, which read as "there are no such events".
func TestAuditRefusesBadFilters(t *testing.T) {
	db := newStoreFile(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--kind", "decisions"}, `--kind "decisions": want one of decision, outcome, approval, run, egress, boundaries`},
		{[]string{"--decision", "denied"}, `--decision "denied": want one of allow, ask, deny`},
		{[]string{"--since", "yesterday"}, `--since "yesterday": want an RFC 3339 time`},
		{[]string{"--until", "2026-11-30"}, `--until "2026-11-30": want an RFC 3339 time`},
		{[]string{"--limit", "-1"}, `--limit -1: want a number of events from 1, or 0 for all`},
		{[]string{"--limit", "ten"}, `invalid argument "ten" for "--limit"`},
		{[]string{"--after", "-5"}, `--after -5: want an event id`},
	} {
		stdout, stderr, code := run(t, append([]string{"audit", "--db", db}, tt.args...)...)
		if code != 2 || !strings.Contains(stderr, tt.want) || stdout != "" {
			t.Errorf("audit %v: status %d, stdout %q, stderr %q; want status 2 and %q", tt.args, code, stdout, stderr, tt.want)
		}
	}
	for _, args := range [][]string{{"--kind", "egress"}, {"--decision", "ask", "--kind", "approval"}} {
		if _, stderr, code := run(t, append([]string{"audit", "--db", db}, args...)...); code != 0 {
			t.Errorf("audit %v: status %d: %s", args, code, stderr)
		}
	}
}

// TestAuditVerify: warden audit verify on a clean trail (with an event from before the chain,
// and signed checkpoints), on its export, then on the store and the export changed by hand.
func TestAuditVerify(t *testing.T) {
	path := newStoreFile(t)
	ctx := t.Context()
	rawDB, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer rawDB.Close()
	// An event written before the chain existed: no hashes.
	if _, err := rawDB.ExecContext(ctx, `INSERT INTO audit_events (time, kind, call_id, tenant, session, principal, role,
		profile, run, tool, digest, decision, approver, outcome, error, policy_revision)
		VALUES ('2026-01-01T00:00:00.000000000Z', 'run', '', 't1', '', '', '', '', '', '', '', '', '', '', '', '')`); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := audit.NewSigner(ctx, db, "instance-a", 3)
	if err != nil {
		t.Fatal(err)
	}
	db.SetSigner(signer)
	var ids []int64
	for i := range 8 {
		e := &audit.Event{Kind: audit.KindDecision, Tenant: []string{"t1", "t2"}[i%2], Tool: "fs_write", Decision: "allow"}
		if err := db.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	if err := signer.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	out, stderr, code := run(t, "audit", "verify", "--db", path)
	if want := "ok: 8 events in 2 tenant chains, 4 signed checkpoints checked; 1 earlier events were recorded before the chain existed"; code != 0 || !strings.Contains(out, want) {
		t.Fatalf("verify a clean trail: status %d, %q %q; want %q", code, out, stderr, want)
	}
	export, _, code := run(t, "audit", "--db", path)
	if code != 0 {
		t.Fatalf("export: status %d", code)
	}
	file := filepath.Join(t.TempDir(), "export.jsonl")
	if err := os.WriteFile(file, []byte(export), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, code := run(t, "audit", "verify", "--file", file); code != 0 || !strings.HasPrefix(out, "ok: 8 events in 2 tenant chains") {
		t.Fatalf("verify the export: status %d, %q", code, out)
	}
	changed := strings.Replace(export, `"tool":"fs_write"`, `"tool":"fs_read"`, 1)
	if err := os.WriteFile(file, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`TAMPERED: event %d (tenant "t1"): content changed`, ids[0])
	if out, _, code := run(t, "audit", "verify", "--file", file); code != 1 || !strings.Contains(out, want) {
		t.Fatalf("verify a changed export: status %d, %q; want status 1 and %q", code, out, want)
	}

	for _, stmt := range []string{`DROP TRIGGER audit_events_no_delete`, fmt.Sprintf(`DELETE FROM audit_events WHERE id = %d`, ids[2])} {
		if _, err := rawDB.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	want = fmt.Sprintf(`TAMPERED: event %d (tenant "t1"): an event before it is missing`, ids[4])
	if out, _, code := run(t, "audit", "verify", "--db", path); code != 1 || !strings.Contains(out, want) {
		t.Fatalf("verify with an event removed: status %d, %q; want status 1 and %q", code, out, want)
	}
	if _, stderr, code := run(t, "audit", "verify", "--db", path, "--file", file); code != 2 || !strings.Contains(stderr, "not both") {
		t.Errorf("--db and --file: status %d, %q", code, stderr)
	}
}
