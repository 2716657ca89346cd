package egress

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/wardenhq/warden/secret"
)

// percentAll percent-encodes every byte of s.
func percentAll(s string) string {
	var b strings.Builder
	for i := range len(s) {
		b.WriteString("%" + strings.ToUpper(hex.EncodeToString([]byte{s[i]})))
	}
	return b.String()
}

// TestTripwireForms: a placeholder whose value may not go to the destination is found in
// each form the tripwire knows, inside other text, whatever the reads split; a placeholder
// whose value may go there, and text that only looks like one, pass.
func TestTripwireForms(t *testing.T) {
	a, b := NewPlaceholder(), NewPlaceholder()
	tab := &subTable{byID: map[string]*Substitution{
		a[len(PlaceholderPrefix):]: {Name: "A", Placeholder: a, Value: secret.New("VALUE-A"), Hosts: mustList(t, "api.example.com")},
		b[len(PlaceholderPrefix):]: {Name: "B", Placeholder: b, Value: secret.New("VALUE-B"), Hosts: mustList(t, "elsewhere.example.com")},
	}}
	tw := tab.tripwire(mustHost(t, "api.example.com"), 443)
	if tw == nil || len(tw.subs) != 1 || tw.subs[0].Name != "B" {
		t.Fatalf("the tripwire for api.example.com: %+v", tw)
	}
	if tab.tripwire(mustHost(t, "elsewhere.example.com"), 443).subs[0].Name != "A" {
		t.Fatal("the tripwire for elsewhere.example.com is not A's")
	}
	mime := base64.StdEncoding.EncodeToString([]byte("0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefg" + b))
	mime = mime[:76] + "\r\n" + mime[76:]
	forms := map[string]string{
		"plain":                b,
		"upper case":           strings.ToUpper(b),
		"random part alone":    b[len(PlaceholderPrefix):],
		"percent-encoded":      percentAll(b),
		"partly percent-coded": url.QueryEscape("k=" + b[:15] + percentAll(b[15:20]) + b[20:]),
		"twice percent-coded":  strings.ReplaceAll(percentAll(b), "%", "%25"),
		"hex":                  hex.EncodeToString([]byte(b)),
		"HEX":                  strings.ToUpper(hex.EncodeToString([]byte(b))),
		"base64":               base64.StdEncoding.EncodeToString([]byte(b)),
		"base64 after 1 byte":  base64.StdEncoding.EncodeToString([]byte("x" + b)),
		"base64 after 2 bytes": base64.RawURLEncoding.EncodeToString([]byte("xy" + b)),
		"base64url":            base64.URLEncoding.EncodeToString([]byte("\xff\xfe" + b + "\xff")),
		"base64, MIME lines":   mime,
		"base64, url-encoded":  url.QueryEscape(base64.StdEncoding.EncodeToString([]byte("?>" + b))),
		"hex, url-encoded":     percentAll(hex.EncodeToString([]byte(b))),
	}
	for name, form := range forms {
		text := `{"data":"` + form + `","more":"` + strings.Repeat("z", 3000) + `"}`
		if err := tw.check([]byte(text), "the body", "api.example.com:443"); !errors.Is(err, ErrPlaceholder) || !strings.Contains(err.Error(), "placeholder of B") {
			t.Errorf("%s: %v", name, err)
		}
		for _, sizes := range [][]int{{1}, {7, 3}, {40}, {4096}} {
			r := &tripReader{src: io.NopCloser(&chunkReader{b: []byte(text), sizes: sizes}), tw: tw, to: "api.example.com:443", refused: &refusal{}}
			_, err := io.ReadAll(iotest.OneByteReader(r))
			if !errors.Is(err, ErrPlaceholder) || r.refused.get() == nil {
				t.Errorf("%s, in reads of %v: %v", name, sizes, err)
			}
		}
	}
	for name, text := range map[string]string{
		"the placeholder that may go here": a + " " + base64.StdEncoding.EncodeToString([]byte(a)) + hex.EncodeToString([]byte(a)),
		"another placeholder's prefix":     PlaceholderPrefix + strings.Repeat("a", 32),
		"ordinary text":                    strings.Repeat("The quick brown fox %41%42 %zz -_ ", 200),
	} {
		r := &tripReader{src: io.NopCloser(strings.NewReader(text)), tw: tw, to: "api.example.com:443", refused: &refusal{}}
		if got, err := io.ReadAll(iotest.OneByteReader(r)); err != nil || string(got) != text {
			t.Errorf("%s: %v", name, err)
		}
	}
	if tab.tripwire(mustHost(t, "api.example.com"), 443) == nil || (&subTable{byID: map[string]*Substitution{
		a[len(PlaceholderPrefix):]: tab.byID[a[len(PlaceholderPrefix):]]}}).tripwire(mustHost(t, "api.example.com"), 443) != nil {
		t.Error("a tripwire where every held value may go")
	}
}
