package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
)

// TestUpgradeFromVersion1 opens a file written by a Warden whose schema stopped at version 1
// (before cards and audit events recorded their channel): the file is migrated in place, its
// rows read back with no channel, and new answers and events record theirs.
func TestUpgradeFromVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	v1, err := os.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	old := raw(t, path)
	for _, q := range []string{
		string(v1),
		`CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied TEXT NOT NULL)`,
		`INSERT INTO schema_version VALUES (1, '0001_init.sql', '2026-01-01T00:00:00.000000000Z')`,
		`INSERT INTO cards (id, tenant, session, principal, tool, digest, policy_revision, args, reason, state,
			answer, approver, created, deadline, answered) VALUES
			('old-answered', 't1', 's', 'alice', 'tool', 'd1', 'rev', '{}', 'why', 'allowed', 'allow_once', 'alice (elicitation)',
				'2026-01-01T00:00:00.000000000Z', '2026-01-01T00:05:00.000000000Z', '2026-01-01T00:01:00.000000000Z'),
			('old-pending', 't1', 's', 'alice', 'tool', 'd2', 'rev', '{}', 'why', 'pending', '', '',
				'2026-01-01T00:00:01.000000000Z', '2026-01-01T00:05:01.000000000Z', NULL)`,
		`INSERT INTO audit_events (time, kind, call_id, tenant, session, principal, role, profile, run, tool, digest,
			decision, blockers, rules, approver, spend, outcome, error, policy_revision) VALUES
			('2026-01-01T00:01:00.000000000Z', 'approval', 'c1', 't1', 's', 'alice', 'person', '', '', 'tool', 'd1',
				'allow', NULL, NULL, 'alice (elicitation)', NULL, '', '', 'rev')`,
	} {
		if _, err := old.Exec(q); err != nil {
			t.Fatalf("write the version 1 file: %v\n%s", err, q)
		}
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	db := open(t, path)
	defer db.Close()
	ctx := t.Context()
	var version int
	if err := raw(t, path).QueryRow("SELECT MAX(version) FROM schema_version").Scan(&version); err != nil || version < 2 {
		t.Fatalf("schema version %d (%v) after opening a version 1 file; want it migrated", version, err)
	}
	c, err := db.Card(ctx, "t1", "old-answered")
	if err != nil {
		t.Fatal(err)
	}
	if c.State != approval.Allowed || c.Approver != "alice (elicitation)" || c.Channel != "" {
		t.Errorf("a card answered before the upgrade: %s %q channel %q; want allowed, as stored, with no channel", c.State, c.Approver, c.Channel)
	}
	c, err = db.Resolve(ctx, "old-pending", approval.Denied, approval.Deny, "bob", approval.ChannelAPI, time.Date(2026, 1, 1, 0, 2, 0, 0, time.UTC))
	if err != nil || c.Channel != approval.ChannelAPI {
		t.Fatalf("answering a card parked before the upgrade: %+v, %v", c, err)
	}
	if err := db.Append(ctx, &audit.Event{Time: time.Date(2026, 1, 1, 0, 2, 0, 0, time.UTC), Kind: audit.KindApproval,
		CallID: "c2", Tenant: "t1", Decision: "deny", Approver: "bob", Channel: "api"}); err != nil {
		t.Fatal(err)
	}
	events, err := db.Query(ctx, audit.Filter{Kind: audit.KindApproval})
	if err != nil || len(events) != 2 {
		t.Fatalf("approval events: %v, %v; want 2", events, err)
	}
	if events[0].Channel != "" || events[1].Channel != "api" {
		t.Errorf("approval events' channels %q, %q; want none for the old event, api for the new", events[0].Channel, events[1].Channel)
	}
	// The event from before the chain has no hashes; the tenant's chain starts after it.
	if events[0].Hash != "" || events[1].PrevHash != audit.HashHex(audit.Genesis) {
		t.Errorf("hashes: old %q, new chains from %q; want none, and zeros", events[0].Hash, events[1].PrevHash)
	}
	sum, err := audit.VerifyLog(ctx, db)
	if err != nil || sum.Unchained != 1 || sum.Chained != 1 {
		t.Errorf("VerifyLog after the upgrade: %+v, %v; want 1 unchained event, then 1 chained", sum, err)
	}
}
