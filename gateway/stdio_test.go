package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// A client that writes its requests and closes its input at once (printf '...' | warden mcp)
// gets an answer to every one: the initialize, a list and a call, in a batch too.
func TestStdioAnswersEveryRequestReadBeforeTheEnd(t *testing.T) {
	r := newRig(t, []byte(askPolicy), nil)
	secret := r.token("default", "person", "")
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"files_read","arguments":{"path":"missing.txt"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"no/such/method"}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := r.gw.ServeStdio(ctx, secret, io.NopCloser(strings.NewReader(input)), nopWriteCloser{&lockedWriter{w: &out}}); err != nil && ctx.Err() != nil {
		t.Fatalf("serve: %v (the end of the input was never passed on)", err)
	}
	answered := map[string]bool{}
	for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a line of output is not JSON: %q", line)
		}
		if m.ID != nil && (m.Result != nil || m.Error != nil) {
			answered[string(m.ID)] = true
		}
	}
	for _, id := range []string{`1`, `2`, `"three"`, `4`} {
		if !answered[id] {
			t.Errorf("request %s was not answered before the end of the input:\n%s", id, out.String())
		}
	}
}
