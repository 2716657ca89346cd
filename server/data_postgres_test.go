package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/manage"
	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/store/postgres"
)

// postgresURL returns WARDEN_TEST_POSTGRES_URL selecting a schema of the test's own, dropped
// when the test ends; unset, the test skips.
func postgresURL(t *testing.T) string {
	t.Helper()
	base := os.Getenv("WARDEN_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("WARDEN_TEST_POSTGRES_URL is not set")
	}
	schema := "warden_test_server_" + strings.ToLower(auth.NewID())
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

// Two instances on one PostgreSQL database: an object written through one's API is read
// through the other's at once, with the same ETag, and is in force in the other's policy
// once its store's feed says so; a write through the second with the first's stale ETag is
// refused.
func TestDataTwoInstancesPostgres(t *testing.T) {
	u := postgresURL(t)
	ctx := context.Background()
	var secret string
	instance := func() *fixture {
		db, err := postgres.Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		svc, err := manage.New(ctx, manage.Options{Store: db, Log: db, Name: "warden.yaml", Data: []byte(dataPolicy)})
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); svc.Watch(wctx) }()
		t.Cleanup(func() { cancel(); wg.Wait() })
		if secret == "" {
			var hash string
			if secret, hash, err = auth.NewSecret(); err != nil {
				t.Fatal(err)
			}
			if err := db.CreateToken(ctx, &auth.Token{ID: "tok-admin", Hash: hash, Role: auth.RoleAdmin, Name: "admin", Created: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		srv := httptest.NewServer(server.New(server.Options{Store: db, Broker: approval.NewBroker(approval.Options{Store: db}), Data: svc}))
		t.Cleanup(srv.Close)
		return &fixture{t: t, srv: srv, tokens: map[string]string{"admin": secret}}
	}
	a, b := instance(), instance()

	const crawler = `{"name":"Crawler","role":"specialist","tools":["mcp__crawl__scrape"],"grant":{"connectors":["crawl"],"allowance":{"crawl":{"perRun":2,"perDay":8}}}}`
	if code, h, body := a.request("PUT", "/api/v1/tenants/acme/profiles/crawler", "admin", crawler, "If-Match", `"0"`); code != http.StatusCreated || h.Get("ETag") != `"1"` {
		t.Fatalf("PUT through a: %d %q %s", code, h.Get("ETag"), body)
	}
	if code, h, body := b.request("GET", "/api/v1/tenants/acme/profiles/crawler", "admin", ""); code != http.StatusOK || h.Get("ETag") != `"1"` {
		t.Fatalf("GET through b: %d %q %s", code, h.Get("ETag"), body)
	}
	// In force in b's policy once b's feed brings it: its allowance is listed.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, _, body := b.request("GET", "/api/v1/tenants/acme/allowances", "admin", "")
		if strings.Contains(body, `"profile": "crawler"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b's allowances never showed the profile written through a: %s", body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, h, _ := b.request("PUT", "/api/v1/tenants/acme/profiles/crawler/grant", "admin", `{"connectors":["crawl"],"allowance":{"crawl":{"perRun":1,"perDay":8}}}`, "If-Match", `"1"`); code != http.StatusOK || h.Get("ETag") != `"2"` {
		t.Fatalf("PUT grant through b: %d %q", code, h.Get("ETag"))
	}
	if code, h, _ := a.request("PUT", "/api/v1/tenants/acme/profiles/crawler", "admin", crawler, "If-Match", `"1"`); code != http.StatusPreconditionFailed || h.Get("ETag") != `"2"` {
		t.Errorf("a stale PUT through a: %d %q; want 412 with ETag \"2\"", code, h.Get("ETag"))
	}
}
