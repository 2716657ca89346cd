package postgres

import (
	"os"
	"testing"
	"time"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
)

// TestUpgradeFromVersion1 opens a schema written by a Warden whose migrations stopped at
// version 1 (before cards and audit events recorded their channel): it is migrated in place,
// its rows read back with no channel, and new answers and events record theirs.
func TestUpgradeFromVersion1(t *testing.T) {
	u := newSchema(t)
	v1, err := os.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		string(v1),
		`CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL, applied timestamptz NOT NULL DEFAULT now())`,
		`INSERT INTO schema_version (version, name) VALUES (1, '0001_init.sql')`,
		`INSERT INTO cards (id, tenant, session, principal, tool, digest, policy_revision, args, reason, state,
			answer, approver, created, created_ns, deadline, deadline_ns, answered, answered_ns) VALUES
			('old-answered', 't1', 's', 'alice', 'tool', 'd1', 'rev', '{}', 'why', 'allowed', 'allow_once', 'alice (elicitation)',
				'2026-01-01T00:00:00Z', 0, '2026-01-01T00:05:00Z', 0, '2026-01-01T00:01:00Z', 0),
			('old-pending', 't1', 's', 'alice', 'tool', 'd2', 'rev', '{}', 'why', 'pending', '', '',
				'2026-01-01T00:00:01Z', 0, '2026-01-01T00:05:01Z', 0, NULL, 0)`,
		`INSERT INTO audit_events (time, time_ns, kind, call_id, tenant, session, principal, role, profile, run, tool,
			digest, decision, approver, outcome, error, policy_revision) VALUES
			('2026-01-01T00:01:00Z', 0, 'approval', 'c1', 't1', 's', 'alice', 'person', '', '', 'tool', 'd1',
				'allow', 'alice (elicitation)', '', '', 'rev')`,
	} {
		admin(t, u, q)
	}

	db := openURL(t, u)
	ctx := ctxT(t)
	var version int
	if err := db.pool.QueryRow(ctx, `SELECT max(version) FROM schema_version`).Scan(&version); err != nil || version != SchemaVersion() {
		t.Fatalf("schema version %d (%v) after opening a version 1 schema; want %d", version, err, SchemaVersion())
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
