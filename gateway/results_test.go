package gateway

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The results the fast paths take (plainText, textResult) must come out exactly as the JSON
// round trips they stand in for (plain, and toResult's); the others must be left to those.

func TestPlainTextIsPlain(t *testing.T) {
	text := func(s string) *mcp.TextContent { return &mcp.TextContent{Text: s} }
	for _, c := range []struct {
		what string
		res  *mcp.CallToolResult
		fast bool
	}{
		{"one text", &mcp.CallToolResult{Content: []mcp.Content{text("echo: hi")}}, true},
		{"texts, an error", &mcp.CallToolResult{Content: []mcp.Content{text("a"), text(""), text("<b>&\u2028")}, IsError: true}, true},
		{"no content", &mcp.CallToolResult{Content: []mcp.Content{}}, true},
		{"nil content", &mcp.CallToolResult{}, false},
		{"an image", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte("x"), MIMEType: "image/png"}}}, false},
		{"annotations", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a", Annotations: &mcp.Annotations{Priority: 1}}}}, false},
		{"a text's _meta", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a", Meta: mcp.Meta{"k": "v"}}}}, false},
		{"_meta", &mcp.CallToolResult{Meta: mcp.Meta{"k": "v"}, Content: []mcp.Content{text("a")}}, false},
		{"structured", &mcp.CallToolResult{Content: []mcp.Content{text("a")}, StructuredContent: map[string]any{"n": 1}}, false},
		{"request state", &mcp.CallToolResult{Content: []mcp.Content{text("a")}, RequestState: "s"}, false},
	} {
		want, err := plain(c.res)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := plainText(c.res)
		if ok != c.fast {
			t.Errorf("%s: fast path %v, want %v", c.what, ok, c.fast)
		}
		if ok && !reflect.DeepEqual(any(got), want) {
			t.Errorf("%s: %#v, plain's %#v", c.what, got, want)
		}
	}
}

func TestTextResultIsToResults(t *testing.T) {
	item := func(text any) map[string]any { return map[string]any{"type": "text", "text": text} }
	for _, c := range []struct {
		what string
		m    map[string]any
		fast bool
	}{
		{"one text", map[string]any{"content": []any{item("echo: hi")}}, true},
		{"texts, an error", map[string]any{"content": []any{item("a"), item("<b>&")}, "isError": true}, true},
		{"not an error", map[string]any{"content": []any{item("a")}, "isError": false}, true},
		{"no content", map[string]any{"content": []any{}}, true},
		{"content null", map[string]any{"content": nil}, false},
		{"no content key", map[string]any{}, false},
		{"structured", map[string]any{"content": []any{item("a")}, "structuredContent": map[string]any{"n": 1.0}}, false},
		{"a text that is a number", map[string]any{"content": []any{item(5.0)}}, false},
		{"an image", map[string]any{"content": []any{map[string]any{"type": "image", "data": "eA==", "mimeType": "image/png"}}}, false},
		{"annotations", map[string]any{"content": []any{map[string]any{"type": "text", "text": "a", "annotations": map[string]any{"priority": 1.0}}}}, false},
		{"isError a string", map[string]any{"content": []any{item("a")}, "isError": "yes"}, false},
	} {
		want, err := decodeResult(c.m)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := textResult(c.m)
		if ok != c.fast {
			t.Errorf("%s: fast path %v, want %v", c.what, ok, c.fast)
		}
		if !ok {
			continue
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) || !reflect.DeepEqual(got.Content, want.Content) || got.IsError != want.IsError {
			t.Errorf("%s: %s, the round trip's %s", c.what, g, w)
		}
	}
}
