package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/clock"
	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/server/console"
	"github.com/wardenhq/warden/store/sqlite"
)

// BenchmarkInbox serves the inbox to a signed-in viewer (in process, no network), its session
// in memory and in the SQLite store, side by side: what keeping sessions in the store costs a
// page (the session's use written, the token read by id).
func BenchmarkInbox(b *testing.B) {
	for _, mode := range []string{"memory", "sqlite"} {
		b.Run(mode, func(b *testing.B) {
			db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "w.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			secret, hash, _ := auth.NewSecret()
			if err := db.CreateToken(context.Background(), &auth.Token{ID: "tok-viewer", Hash: hash, Role: auth.RoleViewer, Tenant: "acme", Created: time.Now()}); err != nil {
				b.Fatal(err)
			}
			o := server.Options{Store: db, Broker: approval.NewBroker(approval.Options{Store: db}), Cards: &server.CardFeed{}}
			co := console.Options{API: server.New(o), Clock: clock.Real{}}
			if mode == "sqlite" {
				co.Sessions = db
			}
			c, err := console.New(co)
			if err != nil {
				b.Fatal(err)
			}
			o.Console = c
			h := server.New(o)
			srv := httptest.NewServer(h)
			defer srv.Close()
			cookie := signInOn(b, srv, secret)
			for b.Loop() {
				req := httptest.NewRequest("GET", "/inbox", nil)
				req.AddCookie(&http.Cookie{Name: console.CookieName, Value: cookie})
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("the inbox: %d", rec.Code)
				}
			}
		})
	}
}
