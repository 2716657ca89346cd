package native

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/wardenhq/warden/action"
)

func (e *Executor) netFetch(ctx context.Context, a *action.Action) (Result, error) {
	raw := a.Inputs["url"]
	if raw == "" {
		raw = a.URL
	}
	if raw == "" {
		return Result{}, fmt.Errorf("%w: net_fetch without a url", ErrUnreviewed)
	}
	if e.fetch == nil {
		return Result{}, failf("net_fetch is not available: no egress configured (the operator has not set up outbound access)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Result{}, failf("%q is not a valid URL: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return Result{}, failf("net_fetch reads http and https URLs only, not %q", u.Scheme)
	}
	if u.Host == "" {
		return Result{}, failf("%s names no host", u.Redacted())
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Result{}, failf("cannot fetch %s: %v", u.Redacted(), err)
	}
	req.Header.Set("User-Agent", "Warden")
	req.Header.Set("Accept", "text/*, application/json, application/xml;q=0.9, */*;q=0.5")
	resp, err := e.fetch.Do(req)
	if err != nil {
		return Result{}, failf("fetching %s failed: %v", u.Redacted(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, e.maxRead+1))
	if err != nil {
		return Result{}, failf("reading %s failed: %v", u.Redacted(), err)
	}
	truncated := int64(len(body)) > e.maxRead
	if truncated {
		body = cutUTF8(body, int(e.maxRead))
	}
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		ct = http.DetectContentType(body)
	}
	mt, _, _ := mime.ParseMediaType(ct)
	data := map[string]any{
		"status": resp.StatusCode, "contentType": ct, "bytes": len(body), "truncated": truncated,
	}
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %s from %s (%s)\n\n", resp.Status, resp.Request.URL.Redacted(), ct)
	switch {
	case !textual(mt) || isBinary(body):
		size := fmt.Sprintf("%d bytes", len(body))
		if truncated {
			size = fmt.Sprintf("more than %d bytes", e.maxRead)
		}
		fmt.Fprintf(&b, "[binary content (%s), %s; not shown]\n", mt, size)
	case truncated:
		fmt.Fprintf(&b, "%s\n\n[truncated: the first %d bytes are shown]\n", text(body), len(body))
	default:
		b.WriteString(text(body))
	}
	return Result{Text: b.String(), Structured: data, IsError: resp.StatusCode >= 400}, nil
}

// textual reports whether a media type is text a model can read.
func textual(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "text/"),
		strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/ecmascript",
		"application/x-javascript", "application/x-www-form-urlencoded", "application/yaml",
		"application/x-yaml", "application/toml", "application/x-sh", "application/sql",
		"application/graphql", "application/ld+json", "application/xhtml+xml", "image/svg+xml":
		return true
	}
	return false
}
