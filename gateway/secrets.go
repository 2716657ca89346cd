package gateway

import (
	"context"
	"encoding/base64"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/secret"
)

// Protected values are kept per tenant, in memory only (secret.Shared): every session of a
// tenant redacts the values any of them protected, or was given as a connector's credential,
// and writes its own handle for the values it holds and protected://redacted for the others.
// Another tenant's sessions share nothing. A value stays known while a session holds it, and
// for a day after the last one ended (an upstream may return it again to a later session),
// within secret.Shared's limits: at the limit, values no session holds are forgotten first,
// least recently used first, and a result that would need more room is withheld.

// tenantSecrets are the tenants' Shareds.
type tenantSecrets struct {
	mu sync.Mutex
	m  map[string]*secret.Shared
}

// sharedSecrets returns the tenant's Shared, made at its first session.
func (g *Gateway) sharedSecrets(tenant string) *secret.Shared {
	g.secrets.mu.Lock()
	defer g.secrets.mu.Unlock()
	if g.secrets.m == nil {
		g.secrets.m = map[string]*secret.Shared{}
	}
	sh := g.secrets.m[tenant]
	if sh == nil {
		sh = secret.NewShared(secret.SharedOptions{Now: g.o.Gate.Now})
		g.secrets.m[tenant] = sh
	}
	return sh
}

// redactLists is receiving middleware that redacts what the client is told about tools,
// resources, resource templates and prompts: their titles and descriptions (and a prompt's
// arguments') come from upstream connectors and could carry a value. The listed objects are
// copied; the upstreams' catalogs, which other sessions list, are not changed.
func (s *session) redactLists(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || res == nil {
			return res, err
		}
		r := s.secrets
		switch x := res.(type) {
		case *mcp.ListToolsResult:
			c := *x
			c.Tools = make([]*mcp.Tool, len(x.Tools))
			for i, t := range x.Tools {
				t2 := *t
				t2.Title, t2.Description = r.Redact(t.Title), r.Redact(t.Description)
				if t.Annotations != nil {
					a := *t.Annotations
					a.Title = r.Redact(a.Title)
					t2.Annotations = &a
				}
				c.Tools[i] = &t2
			}
			return &c, nil
		case *mcp.ListResourcesResult:
			c := *x
			c.Resources = make([]*mcp.Resource, len(x.Resources))
			for i, res := range x.Resources {
				r2 := *res
				r2.Name, r2.Title, r2.Description = r.Redact(res.Name), r.Redact(res.Title), r.Redact(res.Description)
				c.Resources[i] = &r2
			}
			return &c, nil
		case *mcp.ListResourceTemplatesResult:
			c := *x
			c.ResourceTemplates = make([]*mcp.ResourceTemplate, len(x.ResourceTemplates))
			for i, t := range x.ResourceTemplates {
				t2 := *t
				t2.Name, t2.Title, t2.Description = r.Redact(t.Name), r.Redact(t.Title), r.Redact(t.Description)
				c.ResourceTemplates[i] = &t2
			}
			return &c, nil
		case *mcp.ListPromptsResult:
			c := *x
			c.Prompts = make([]*mcp.Prompt, len(x.Prompts))
			for i, p := range x.Prompts {
				p2 := *p
				p2.Title, p2.Description = r.Redact(p.Title), r.Redact(p.Description)
				p2.Arguments = make([]*mcp.PromptArgument, len(p.Arguments))
				for j, a := range p.Arguments {
					a2 := *a
					a2.Title, a2.Description = r.Redact(a.Title), r.Redact(a.Description)
					p2.Arguments[j] = &a2
				}
				c.Prompts[i] = &p2
			}
			return &c, nil
		}
		return res, nil
	}
}

// redactResult redacts a tool's result, decoded (see protect): the texts of its content read
// one after another as one text, so that a value split across two text blocks is found; the
// base64 of embedded resources, images and audio decoded, redacted and encoded again (one that
// does not decode withholds the result: it is never passed as it is); everything else as
// decoded JSON.
func (s *session) redactResult(m map[string]any) (map[string]any, error) {
	r := s.secrets
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != "content" {
			out[r.Redact(k)] = r.RedactValue(v)
		}
	}
	content, ok := m["content"].([]any)
	if !ok {
		if v, present := m["content"]; present {
			out["content"] = r.RedactValue(v)
		}
		return out, nil
	}
	items := make([]any, len(content))
	var texts []string // the text blocks' texts, in order
	var at []int       // where each is in items
	for i, c := range content {
		item, ok := c.(map[string]any)
		if !ok {
			items[i] = r.RedactValue(c)
			continue
		}
		item, err := s.redactItem(item)
		if err != nil {
			return nil, fmt.Errorf("content %d: %w", i, err)
		}
		items[i] = item
		if text, ok := item["text"].(string); ok && item["type"] == "text" {
			texts, at = append(texts, text), append(at, i)
		}
	}
	for j, text := range r.RedactTexts(texts) {
		items[at[j]].(map[string]any)["text"] = text
	}
	out["content"] = items
	return out, nil
}

// redactItem redacts one content item, but for a text block's text, which redactResult
// redacts with the others. It returns a copy.
func (s *session) redactItem(item map[string]any) (map[string]any, error) {
	r := s.secrets
	out := make(map[string]any, len(item))
	for k, v := range item {
		switch {
		case k == "text" && item["type"] == "text":
			out[k] = v
		case k == "data" && (item["type"] == "image" || item["type"] == "audio"):
			red, err := s.redactBase64(v)
			if err != nil {
				return nil, fmt.Errorf("%s data: %w", item["type"], err)
			}
			out[k] = red
		case k == "resource" && item["type"] == "resource":
			res, ok := v.(map[string]any)
			if !ok {
				out[k] = r.RedactValue(v)
				continue
			}
			res2 := make(map[string]any, len(res))
			for rk, rv := range res {
				if rk == "blob" {
					red, err := s.redactBase64(rv)
					if err != nil {
						return nil, fmt.Errorf("resource blob: %w", err)
					}
					res2[rk] = red
					continue
				}
				res2[r.Redact(rk)] = r.RedactValue(rv)
			}
			out[k] = res2
		default:
			out[r.Redact(k)] = r.RedactValue(v)
		}
	}
	return out, nil
}

// redactBase64 decodes a base64 string, redacts what it holds and encodes it again; a value
// that is not base64 is an error.
func (s *session) redactBase64(v any) (string, error) {
	enc, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("not a base64 string")
	}
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return "", fmt.Errorf("not valid base64, withheld rather than passed unredacted")
	}
	if red := s.secrets.Redact(string(raw)); red != string(raw) {
		return base64.StdEncoding.EncodeToString([]byte(red)), nil
	}
	return enc, nil
}

// redactContents redacts a resource's contents in place: the texts read one after another as
// one text, and blobs, which the SDK has decoded from base64, as the bytes they are.
func (s *session) redactContents(contents []*mcp.ResourceContents) {
	var texts []string
	var at []*mcp.ResourceContents
	for _, c := range contents {
		if c == nil {
			continue
		}
		c.URI = s.secrets.Redact(c.URI)
		if c.Text != "" {
			texts, at = append(texts, c.Text), append(at, c)
		}
		if len(c.Blob) > 0 {
			if red := s.secrets.Redact(string(c.Blob)); red != string(c.Blob) {
				c.Blob = []byte(red)
			}
		}
	}
	for i, text := range s.secrets.RedactTexts(texts) {
		at[i].Text = text
	}
}

// redactPrompt redacts a prompt got from an upstream, in place: its description, and each
// message's content as redactContents and redactResult do.
func (s *session) redactPrompt(res *mcp.GetPromptResult) {
	r := s.secrets
	res.Description = r.Redact(res.Description)
	var texts []string
	var at []*mcp.TextContent
	for _, msg := range res.Messages {
		if msg == nil {
			continue
		}
		switch c := msg.Content.(type) {
		case *mcp.TextContent:
			texts, at = append(texts, c.Text), append(at, c)
		case *mcp.EmbeddedResource:
			s.redactContents([]*mcp.ResourceContents{c.Resource})
		case *mcp.ImageContent:
			if red := r.Redact(string(c.Data)); red != string(c.Data) {
				c.Data = []byte(red)
			}
		case *mcp.AudioContent:
			if red := r.Redact(string(c.Data)); red != string(c.Data) {
				c.Data = []byte(red)
			}
		case *mcp.ResourceLink:
			c.Name, c.Title, c.Description, c.URI = r.Redact(c.Name), r.Redact(c.Title), r.Redact(c.Description), r.Redact(c.URI)
		}
	}
	for i, text := range r.RedactTexts(texts) {
		at[i].Text = text
	}
}
