package gateway

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/store/postgres"
	"github.com/wardenhq/warden/store/sqlite"
	"github.com/wardenhq/warden/store/storetest"
)

// A token revoked on one instance is refused by another sharing the store at once, though
// that one trusts tokens it looked up for an hour, and the sessions it opened there end,
// with the call that waits for an approval in one of them.
func testRevocationReachesEveryInstance(t *testing.T, dbA, dbB storetest.Store) {
	a := newRigOn(t, dbA, []byte(askPolicy), nil, func(o *Options) { o.TokenTTL = time.Hour })
	read := make(chan struct{}, 1)
	b := newRigOn(t, dbB, []byte(askPolicy), nil, func(o *Options) {
		o.TokenTTL = time.Hour
		o.RevocationsRead = func() {
			select {
			case read <- struct{}{}:
			default:
			}
		}
	})
	secret := b.token("default", "person", "")
	cs := b.connect(secret, nil) // B has looked the token up, and trusts it for an hour
	// A call that waits for a person's answer.
	done := make(chan error, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "files_write", Arguments: map[string]any{"path": "a.txt", "content": "x"}})
		if err == nil && !res.IsError {
			err = errAllowed
		}
		done <- err
	}()
	select {
	case <-b.cards:
	case <-time.After(time.Minute):
		t.Fatal("no card was made for the waiting call")
	}
	var id string
	toks, err := dbA.Tokens(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range toks {
		if tok.Role == auth.RoleAgent {
			id = tok.ID
		}
	}
	if err := a.gw.RevokeToken(t.Context(), id, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Wait for instance B to have read the revocation and ended the session (the read after
	// the store said so; any earlier read found nothing revoked).
	for len(b.gw.LiveSessions()) > 0 {
		select {
		case <-read:
		case <-time.After(time.Minute):
			t.Fatal("instance B never ended the revoked token's session")
		}
	}
	select {
	case err := <-done:
		if err == errAllowed {
			t.Error("the waiting call ran after its token was revoked")
		}
	case <-time.After(time.Minute):
		t.Fatal("the waiting call still waits after its session ended")
	}
	// A new session with the token is refused on B, within the hour B would have trusted it.
	if _, err := b.dial(secret, nil); err == nil || !strings.Contains(err.Error(), "401") && !strings.Contains(err.Error(), http.StatusText(http.StatusUnauthorized)) {
		t.Errorf("a new session with the revoked token on instance B: %v, want 401", err)
	}
}

var errAllowed = errors.New("the call ran")

func TestRevocationReachesEveryInstanceSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "warden.db")
	open := func() *sqlite.DB {
		// Two handles on one file stand for two processes: each polls for the other's writes.
		db, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	testRevocationReachesEveryInstance(t, open(), open())
}

func TestRevocationReachesEveryInstancePostgres(t *testing.T) {
	u := postgresSchema(t)
	open := func() *postgres.DB {
		db, err := postgres.Open(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	testRevocationReachesEveryInstance(t, open(), open())
}
