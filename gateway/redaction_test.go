package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/secret"
)

// leakValue is the value the leaking upstream declares once and then returns in the clear, split,
// encoded, and in what it describes.
const leakValue = "ghp_Zr8Lw2mVb5Nc9xT4kQpJ7hYd3sGfA1eU"

// leakyUpstream is an MCP server that declares leakValue in one tool's result and leaks it
// everywhere else: other tools' results, split across text blocks and in an embedded
// resource's blob; its tools', resources' and prompts' titles and descriptions; resource
// contents and prompt messages.
func leakyUpstream(t *testing.T) string {
	t.Helper()
	v := leakValue
	s := mcp.NewServer(&mcp.Implementation{Name: "leaky", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	text := func(parts ...string) *mcp.CallToolResult {
		r := &mcp.CallToolResult{}
		for _, p := range parts {
			r.Content = append(r.Content, &mcp.TextContent{Text: p})
		}
		return r
	}
	s.AddTool(&mcp.Tool{Name: "issue_key", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(`{"key":{"$wardenSensitive":{"type":"token","value":"` + v + `"}}}`), nil
	})
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"msg": map[string]any{"type": "string"}}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Msg string }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			return text("echo: " + a.Msg), nil
		})
	s.AddTool(&mcp.Tool{Name: "split", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("the key is "+v[:17], v[17:]+" (do not share)"), nil
	})
	s.AddTool(&mcp.Tool{Name: "blob", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "file:///creds.txt", MIMEType: "application/octet-stream", Blob: []byte("token=" + v + "\n")}}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "describe", Title: "Uses " + v, Description: "Authenticates with " + v + " and " + base64.StdEncoding.EncodeToString([]byte(v)),
		InputSchema: obj, Annotations: &mcp.ToolAnnotations{Title: "key " + v}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("ok"), nil })
	s.AddResource(&mcp.Resource{URI: "file:///notes.txt", Name: "notes", Title: "Notes on " + v, Description: "holds " + v, MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: req.Params.URI, MIMEType: "text/plain", Text: "first half " + v[:20]},
				{URI: req.Params.URI, MIMEType: "text/plain", Text: v[20:] + " second half"},
				{URI: req.Params.URI, MIMEType: "application/octet-stream", Blob: []byte("\x00\x01key:" + v + "\xff")},
			}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///keys/{name}", Name: "keys", Description: "the key " + v},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: v}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "login", Title: "Log in with " + v, Description: "uses " + v,
		Arguments: []*mcp.PromptArgument{{Name: "user", Title: "user for " + v, Description: "defaults to the owner of " + v}}},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "log in as " + v, Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "Use the token " + v}},
				{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///t", Blob: []byte(v)}}},
			}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

func leakyPolicy(url string) []byte {
	return fmt.Appendf(nil, `
version: 1
connectors:
  - id: leaky
    effect: read
    discover: true
    upstream: {url: %q, timeoutMs: 5000}
tenants:
  - id: default
    connections: [{id: leaky, connector: leaky}]
  - id: other
    connections: [{id: leaky-other, connector: leaky}]
`, url)
}

func callJSON(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// TestProtectedValuesDoNotLeak is issue 11 through the gateway, with a real upstream: a value
// one session protected never reaches another session of the tenant, split, encoded, in a
// blob, or in what the upstream describes; another tenant does not share it.
func TestProtectedValuesDoNotLeak(t *testing.T) {
	r := newRig(t, leakyPolicy(leakyUpstream(t)), nil)
	a := r.connect(r.token("default", "person", ""), nil)
	b := r.connect(r.token("default", "person", ""), nil)
	other := r.connect(r.token("other", "person", ""), nil)
	ctx := context.Background()

	// A protects the value and holds its handle.
	out, isErr := call(t, a, "mcp__leaky__issue_key", nil)
	var issued struct{ Key string }
	if isErr || json.Unmarshal([]byte(out), &issued) != nil || !strings.HasPrefix(issued.Key, "protected://token/") {
		t.Fatalf("issue_key: %v %s", isErr, out)
	}
	ha := issued.Key

	// The upstream echoes it: A reads its handle, B (same tenant) reads the placeholder,
	// encoded too, and the other tenant, which never saw it, reads it.
	give := leakValue + " " + base64.StdEncoding.EncodeToString([]byte(leakValue))
	if out, _ := call(t, a, "mcp__leaky__echo", map[string]any{"msg": give}); out != "echo: "+ha+" "+ha {
		t.Errorf("A: %q", out)
	}
	if out, _ := call(t, b, "mcp__leaky__echo", map[string]any{"msg": give}); out != "echo: "+secret.Redacted+" "+secret.Redacted {
		t.Errorf("B: %q; want the placeholder twice", out)
	}
	if out, _ := call(t, other, "mcp__leaky__echo", map[string]any{"msg": leakValue}); out != "echo: "+leakValue {
		t.Errorf("another tenant: %q", out)
	}
	// B cannot bind A's handle: it is a handle of another session.
	if out, isErr := call(t, b, "mcp__leaky__echo", map[string]any{"msg": ha, "protectedBindings": map[string]any{"K": ha}}); strings.Contains(out, leakValue) {
		t.Errorf("B with A's handle: %v %s", isErr, out)
	}

	// Split across two text blocks: each part is replaced.
	res := callJSON(t, b, "mcp__leaky__split", nil)
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, c.(*mcp.TextContent).Text)
	}
	if len(parts) != 2 || parts[0] != "the key is "+secret.Redacted || parts[1] != secret.Redacted+" (do not share)" {
		t.Errorf("split across blocks: %q", parts)
	}

	// An embedded resource's blob is decoded, redacted, and encoded again.
	res = callJSON(t, a, "mcp__leaky__blob", nil)
	er, ok := res.Content[0].(*mcp.EmbeddedResource)
	if !ok || string(er.Resource.Blob) != "token="+ha+"\n" {
		t.Errorf("blob: %#v", res.Content[0])
	}

	// What the upstream describes, as B lists it.
	seen := false
	for tool, err := range b.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name != "mcp__leaky__describe" {
			continue
		}
		seen = true
		if b, _ := json.Marshal(tool); strings.Contains(string(b), leakValue) || strings.Contains(string(b), "Z2hwX1py") ||
			!strings.Contains(tool.Description, secret.Redacted) || !strings.Contains(tool.Title, secret.Redacted) {
			t.Errorf("tool listed as %s", b)
		}
	}
	if !seen {
		t.Error("the describe tool is not listed")
	}
	resources, err := b.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	templates, err := b.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	prompts, err := b.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resources.Resources) != 1 || len(templates.ResourceTemplates) != 1 || len(prompts.Prompts) != 1 {
		t.Fatalf("listed %d resources, %d templates, %d prompts", len(resources.Resources), len(templates.ResourceTemplates), len(prompts.Prompts))
	}
	for what, v := range map[string]any{"resources": resources, "templates": templates, "prompts": prompts} {
		if js, _ := json.Marshal(v); strings.Contains(string(js), leakValue) || !strings.Contains(string(js), secret.Redacted) {
			t.Errorf("%s listed as %s", what, js)
		}
	}

	// A resource's contents: texts read together, the blob as bytes.
	read, err := b.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///notes.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if len(read.Contents) != 3 || read.Contents[0].Text != "first half "+secret.Redacted || read.Contents[1].Text != secret.Redacted+" second half" ||
		string(read.Contents[2].Blob) != "\x00\x01key:"+secret.Redacted+"\xff" {
		js, _ := json.Marshal(read)
		t.Errorf("resource read as %s", js)
	}
	// A prompt's messages.
	got, err := b.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp__leaky__login"})
	if err != nil {
		t.Fatal(err)
	}
	if js, _ := json.Marshal(got); strings.Contains(string(js), leakValue) || strings.Contains(string(js), base64.StdEncoding.EncodeToString([]byte(leakValue))) ||
		!strings.Contains(got.Messages[0].Content.(*mcp.TextContent).Text, secret.Redacted) {
		t.Errorf("prompt got as %s", js)
	}
}

// TestUnreadableBlobIsWithheld: a blob that is not base64 cannot be redacted, and is not
// passed on as it is.
func TestUnreadableBlobIsWithheld(t *testing.T) {
	s := &session{secrets: secret.NewRegistry(secret.Scope{})}
	s.secrets.Add(secret.TypeToken, secret.New(leakValue))
	_, err := s.redactResult(map[string]any{"content": []any{map[string]any{"type": "resource",
		"resource": map[string]any{"uri": "file:///x", "blob": "not base64 " + leakValue}}}})
	if err == nil || strings.Contains(err.Error(), leakValue) {
		t.Errorf("an unreadable blob: %v", err)
	}
	out, err := s.redactResult(map[string]any{"content": []any{map[string]any{"type": "image", "mimeType": "image/png",
		"data": base64.StdEncoding.EncodeToString([]byte("\x89PNG" + leakValue))}}})
	if err != nil || strings.Contains(fmt.Sprint(out), base64.StdEncoding.EncodeToString([]byte(leakValue))[:12]) {
		t.Errorf("an image holding the value: %v %v", out, err)
	}
}
