// Command goclient is the Go SDK program of docs/gateway.md: it connects to `warden serve` with
// an agent token, lists the session's tools and, if asked, calls one.
//
//	WARDEN_TOKEN=wdn_... go run ./examples/goclient -url http://127.0.0.1:8640/mcp [-call TOOL -args JSON]
//
// It prints the tools one per line, then the call's text result. The interop tests run it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds the agent token to every request of the session.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func main() {
	url := flag.String("url", "http://127.0.0.1:8640/mcp", "Warden's MCP endpoint")
	tool := flag.String("call", "", "a tool to call")
	args := flag.String("args", "{}", "the call's arguments, a JSON object")
	flag.Parse()
	token := os.Getenv("WARDEN_TOKEN")
	if token == "" {
		log.Fatal("set WARDEN_TOKEN to an agent token (warden token create --tenant default --role person)")
	}

	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "goclient", Version: "1.0.0"}, nil)
	transport := &mcp.StreamableClientTransport{
		Endpoint:   *url,
		HTTPClient: &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}},
	}
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		log.Fatalf("connect to %s: %v", *url, err)
	}
	defer session.Close()

	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			log.Fatalf("list tools: %v", err)
		}
		fmt.Println(t.Name)
	}
	if *tool == "" {
		return
	}
	var arguments map[string]any
	if err := json.Unmarshal([]byte(*args), &arguments); err != nil {
		log.Fatalf("-args: %v", err)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: *tool, Arguments: arguments})
	if err != nil {
		log.Fatalf("call %s: %v", *tool, err)
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			fmt.Println(t.Text)
		}
	}
	if res.IsError {
		os.Exit(2)
	}
}
