package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/store/sqlite"
)

// consolePolicy gates files_write on a person; a reader may hold files_read only.
const consolePolicy = `
version: 1
builtins:
  - name: files_read
  - name: files_write
    gate: {approval: true}
roles:
  - {id: desk, approvalChannel: true, ceiling: ['*']}
  - {id: reader, ceiling: [files_read]}
tenants:
  - id: default
`

// chromium finds a Chromium to drive, or skips the test: unless WARDEN_CONSOLE=require (CI),
// where a missing browser fails it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("WARDEN_CONSOLE") == "require" {
		t.Fatal("WARDEN_CONSOLE=require, but no chromium is installed (apt-get install chromium)")
	}
	t.Skip("no chromium installed: the console's browser tests are skipped (WARDEN_CONSOLE=require makes this a failure)")
	return ""
}

// A person signs in to the console in a real browser, answers the card a real MCP client's
// call waits on, explores a surface, edits the hard blocks (an invalid document first) and
// sees a live session's next call decided by them; a form without its CSRF token is refused.
func TestConsoleInBrowser(t *testing.T) {
	exe := chromium(t)
	dir := t.TempDir()
	db, err := sqlite.Open(t.Context(), filepath.Join(dir, "warden.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err := policy.Parse("console.yaml", []byte(consolePolicy))
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := newStack(p, db, filepath.Join(dir, "ws"), &sandboxState{}, logger, "")
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	if err := st.withData(t.Context(), db, "console.yaml", []byte(consolePolicy), logger); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", st.gateway.Handler())
	mux.Handle("/", newServer(st, db, logger, nil))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	token := func(role, sessionRole string) string {
		secret, hash, err := auth.NewSecret()
		if err != nil {
			t.Fatal(err)
		}
		tok := &auth.Token{ID: newTokenID(), Hash: hash, Role: role, SessionRole: sessionRole, Name: role, Created: time.Now()}
		if role != auth.RoleAdmin {
			tok.Tenant = "default"
		}
		if err := db.CreateToken(t.Context(), tok); err != nil {
			t.Fatal(err)
		}
		return secret
	}
	admin, agent := token(auth.RoleAdmin, ""), token(auth.RoleAgent, "desk")

	client := mcp.NewClient(&mcp.Implementation{Name: "console-test", Version: "1"}, nil)
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	cs, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{agent}}}, nil)
	ccancel()
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	call := func(args map[string]any) <-chan result {
		done := make(chan result, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files_write", Arguments: args})
			done <- result{res, err}
		}()
		return done
	}
	text := func(r *mcp.CallToolResult) string {
		var b strings.Builder
		for _, c := range r.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(1200, 900), chromedp.Flag("disable-dev-shm-usage", true))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	bctx, tcancel := context.WithTimeout(bctx, 3*time.Minute)
	defer tcancel()
	run := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	// read reads the text of the first element a CSS selector finds.
	read := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return v
	}
	shots := os.Getenv("WARDEN_CONSOLE_SCREENSHOTS") == "1"
	shot := func(name string) {
		t.Helper()
		if !shots {
			return
		}
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "console", name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Sign in.
	run("sign in", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	shot("signin")
	run("sign in", chromedp.SendKeys(chromedp.CSS("#token"), admin), chromedp.Click(chromedp.CSS(`#signin button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#cards[data-live="1"]`)))

	// A call waits for a person; its card appears in the open inbox, and "Allow once" lets it run.
	done := call(map[string]any{"path": "a.txt", "content": "hello"})
	run("the card arrives live", chromedp.WaitVisible(chromedp.CSS(`#cards article.approval[data-id]:not([data-id=""])`)))
	tool := read(`#cards article.approval .tool`)
	if tool != "files_write" {
		t.Errorf("the card's tool: %q", tool)
	}
	shot("inbox")
	if shots { // the same page at a phone's width
		run("phone", chromedp.EmulateViewport(390, 844))
		shot("inbox-phone")
		run("desktop", chromedp.EmulateViewport(1200, 900))
	}
	run("allow once", chromedp.Click(chromedp.CSS(`#cards article.approval button[value=allow_once]`)),
		chromedp.WaitVisible(chromedp.CSS("#page-notice")))
	select {
	case r := <-done:
		if r.err != nil || r.res.IsError {
			t.Fatalf("the call allowed in the console: %v %+v", r.err, r.res)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the call allowed in the console did not return")
	}
	if data, err := os.ReadFile(filepath.Join(st.workspaces, "default", "a.txt")); err != nil || string(data) != "hello" {
		t.Errorf("the allowed write: %q %v", data, err)
	}

	// Explore a reader's surface and open an absent tool's explanation.
	run("explore", chromedp.Navigate(srv.URL+"/surface?tenant=default"), chromedp.WaitVisible(chromedp.CSS("#role")),
		chromedp.SendKeys(chromedp.CSS("#role"), "reader"), chromedp.Click(chromedp.CSS(`#surface-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`details.explain[data-tool="files_write"] summary`)),
		chromedp.Click(chromedp.CSS(`details.explain[data-tool="files_write"] summary`)),
		chromedp.WaitVisible(chromedp.CSS(`details.explain[data-tool="files_write"] .why`)))
	why := read(`details.explain[data-tool="files_write"] .why`)
	if !strings.Contains(why, "ceiling") {
		t.Errorf("the explanation of files_write for a reader: %q; want the ceiling filter", why)
	}
	shot("surface")

	// The hard blocks: an invalid document is refused with its field shown; a valid one is in
	// force for the live session's next call.
	const bad = `{"version":2,"hardBlocks":[]}`
	const good = `{"version":1,"hardBlocks":[{"id":"no-secret","enabled":true,"type":"path","pattern":"**/secret.txt","match":"glob","operations":["write"],"reason":"the secret stays"}]}`
	run("an invalid document", chromedp.Navigate(srv.URL+"/boundaries?tenant=default"), chromedp.WaitVisible(chromedp.CSS("#document")),
		chromedp.SetValue(chromedp.CSS("#document"), bad), chromedp.Click(chromedp.CSS(`#editor button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#problems .problem`)))
	field := read(`#problems .problem .field`)
	if !strings.Contains(field, "version") {
		t.Errorf("the problem shown for version 2: at %q; want the field version", field)
	}
	shot("boundaries-invalid")
	run("a valid document", chromedp.SetValue(chromedp.CSS("#document"), good), chromedp.Click(chromedp.CSS(`#editor button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS("#page-notice")))
	shot("boundaries")
	select {
	case r := <-call(map[string]any{"path": "secret.txt", "content": "x"}):
		if r.err != nil || !r.res.IsError || !strings.Contains(text(r.res), "no-secret") {
			t.Errorf("the live session's call after the new rule: %v %q; want it refused by no-secret", r.err, text(r.res))
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the call after the new rule did not return (was it asked instead of refused?)")
	}

	// Try a call shows the verdict with its rule.
	run("try a call", chromedp.Navigate(srv.URL+"/try?tenant=default"), chromedp.WaitVisible(chromedp.CSS("#tool")),
		chromedp.SendKeys(chromedp.CSS("#role"), "desk"), chromedp.SendKeys(chromedp.CSS("#tool"), "files_write"),
		chromedp.SetValue(chromedp.CSS("#input"), `{"path":"secret.txt","content":"x"}`),
		chromedp.Click(chromedp.CSS(`#try-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(".verdict .decision")))
	decision := read(".verdict .decision")
	if !strings.EqualFold(decision, "deny") {
		t.Errorf("try a write to secret.txt: %q; want deny", decision)
	}
	shot("try")
	run("audit", chromedp.Navigate(srv.URL+"/audit?tenant=default"), chromedp.WaitVisible(chromedp.CSS("#events")))
	shot("audit")
	editProfile(t, srv.URL, run, read, shot)

	// A form posted without its CSRF token is refused.
	status, err := chromedp.Run(bctx, chromedp.Evaluate[int](`fetch("/try", {method: "POST", body: new URLSearchParams({tool: "files_read", input: "{}", role: "desk"})}).then(r => r.status)`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusForbidden {
		t.Errorf("a POST without the CSRF token: %d; want 403", status)
	}
}

// editProfile creates a profile in the console: first with a tool the policy does not have,
// refused with the problem shown at its field, then fixed.
func editProfile(t *testing.T, base string, run func(string, ...chromedp.Action[chromedp.Void]), read func(string) string, shot func(string)) {
	t.Helper()
	run("a new profile", chromedp.Navigate(base+"/profiles/new?tenant=default"), chromedp.WaitVisible(chromedp.CSS("#document")))
	run("an invalid profile", chromedp.SendKeys(chromedp.CSS("#id"), "scribe"),
		chromedp.SetValue(chromedp.CSS("#document"), `{"role":"coworker","tools":["files_raed"]}`),
		chromedp.Click(chromedp.CSS(`#editor button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#problems .problem`)))
	if field := read(`#problems .problem .field`); field != "/tools/0" {
		t.Errorf("the problem of a profile with an unknown tool: at %q; want /tools/0", field)
	}
	shot("profile-invalid")
	run("the profile fixed", chromedp.SetValue(chromedp.CSS("#document"), `{"role":"coworker","tools":["files_read"],"limits":{"runBudgetUsd":0.1,"maxTurns":5,"maxConcurrentRuns":1}}`),
		chromedp.Click(chromedp.CSS(`#editor button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS("#page-notice")))
	shot("profile-editor")
	run("the list", chromedp.Navigate(base+"/profiles?tenant=default"), chromedp.WaitVisible(chromedp.CSS(`a[href^="/profiles/scribe"]`)))
}
