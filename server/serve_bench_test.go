package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/store/sqlite"
)

// BenchmarkServeHTTP compares what a request costs through the mux alone (as ServeHTTP was
// before it answered 404 and 405 itself) with ServeHTTP, which looks the route up once more.
func BenchmarkServeHTTP(b *testing.B) {
	db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "w.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	secret, hash, err := auth.NewSecret()
	if err != nil {
		b.Fatal(err)
	}
	if err := db.CreateToken(context.Background(), &auth.Token{ID: "tok-admin", Hash: hash, Role: auth.RoleAdmin, Created: time.Now()}); err != nil {
		b.Fatal(err)
	}
	s := New(Options{Store: db})
	for _, path := range []string{"/healthz", "/api/v1/approvals/standing"} {
		for _, via := range []struct {
			name string
			h    http.Handler
		}{{"mux", s.mux}, {"server", s}} {
			b.Run(path+"/"+via.name, func(b *testing.B) {
				req := httptest.NewRequest("GET", path, nil)
				req.Header.Set("Authorization", "Bearer "+secret)
				for b.Loop() {
					via.h.ServeHTTP(httptest.NewRecorder(), req)
				}
			})
		}
	}
}
