package secret_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/secret"
)

// TestNoFalsePositives redacts texts that hold none of 1,000 realistic values: the generated
// corpora (prose, source code, JSON, logs with UUIDs and hex ids, a git log full of SHAs,
// base64 blobs) and this repository's own Go source. Not one byte may change.
func TestNoFalsePositives(t *testing.T) {
	r := secret.NewRegistry(testScope)
	var envelopes []any
	for _, v := range realisticValues(1000) {
		envelopes = append(envelopes, map[string]any{secret.KeySensitive: map[string]any{"type": "token", "value": v}})
	}
	if _, err := r.Protect(envelopes); err != nil {
		t.Fatal(err)
	}
	texts := corpora(1 << 20)
	for _, dir := range []string{".", "../gateway", "../policy", "../native"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			texts["source "+f] = string(b)
		}
	}
	for name, text := range texts {
		if got := r.Redact(text); got != text {
			t.Errorf("%s: redacted %s", name, firstDifference(text, got))
		}
	}
}

// firstDifference quotes where two texts start to differ.
func firstDifference(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-20)
	return "…" + strings.ToValidUTF8(a[from:min(len(a), i+40)], "?") + "… → …" + strings.ToValidUTF8(b[from:min(len(b), i+60)], "?") + "…"
}

func TestRedactTextsAcrossBlocks(t *testing.T) {
	r := secret.NewRegistry(testScope)
	const v = "sk-Ab3dE5gH7jK9mN2pQ4sT6vW8yZ0bC1dF"
	h := r.Add(secret.TypeToken, secret.New(v))
	tests := []struct {
		name string
		give []string
		want []string
	}{
		{"two blocks", []string{"token: " + v[:15], v[15:] + " end"}, []string{"token: " + h, h + " end"}},
		{"three blocks", []string{"a " + v[:10], v[10:20], v[20:] + " z"}, []string{"a " + h, h, h + " z"}},
		{"only 8 characters across", []string{"x " + v[5:9], v[9:13] + " y"}, []string{"x " + h, h + " y"}},
		{"base64 across", []string{"b64: " + b64(v)[:20], b64(v)[20:]}, []string{"b64: " + h, h}},
		{"nothing to find", []string{"plain", "text"}, []string{"plain", "text"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.RedactTexts(tt.give)
			for i := range tt.want {
				if got[i] != tt.want[i] {
					t.Errorf("RedactTexts(%q)[%d] = %q; want %q", tt.give, i, got[i], tt.want[i])
				}
			}
		})
	}
	// Each block alone does not hold 8 characters of the value: Redact leaves them.
	if got := r.Redact("x " + v[5:9]); got != "x "+v[5:9] {
		t.Errorf("Redact of 4 characters = %q", got)
	}
}
