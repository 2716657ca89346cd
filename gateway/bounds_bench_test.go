package gateway

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkLargeRequest measures what one tools/call of 4 MB costs the server, in memory
// above all (run it with -benchmem): refused is a call of a tool outside the surface (the body
// read, checked and decoded, then refused); echo is a call the whole pipeline runs through
// the upstream, which answers with the 4 MB it was given. The client sends a body made once
// and discards the answer, so B/op is the gateway's and the upstream's.
func BenchmarkLargeRequest(b *testing.B) {
	br := newBenchRig(b)
	cs := br.dial(b, "warden")
	defer cs.Close()
	msg := strings.Repeat("x", maxBody-200)
	client := &http.Client{Transport: bearer{br.secret, http.DefaultTransport.(*http.Transport).Clone()}}
	for _, tool := range []string{"refused", "echo"} {
		name := map[string]string{"refused": "files_write", "echo": "mcp__up__echo"}[tool]
		body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":{"msg":%q}}}`, name, msg)
		b.Run(tool, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				req, err := http.NewRequest(http.MethodPost, br.gwURL, bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Mcp-Session-Id", cs.ID())
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || n < 100 {
					b.Fatalf("HTTP %d, %d bytes", resp.StatusCode, n)
				}
			}
		})
	}
}
