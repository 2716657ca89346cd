package egress

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/wardenhq/warden/secret"
)

// chunkReader returns its text in reads of the given sizes, in turn.
type chunkReader struct {
	b     []byte
	sizes []int
	i     int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := min(c.sizes[c.i%len(c.sizes)], len(p), len(c.b))
	c.i++
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}

// TestRewriteReaderChunks: a placeholder is found wherever reads split it, and so is one
// that follows a false start (the prefix without a placeholder after it).
func TestRewriteReaderChunks(t *testing.T) {
	a, b := NewPlaceholder(), NewPlaceholder()
	here := mustList(t, "api.example.com")
	tab := &subTable{byID: map[string]*Substitution{
		a[len(PlaceholderPrefix):]: {Name: "A", Placeholder: a, Value: secret.New("VALUE-A"), Hosts: here},
		b[len(PlaceholderPrefix):]: {Name: "B", Placeholder: b, Value: secret.New("the value of b, longer than its placeholder"), Hosts: here},
	}}
	w := &rewriter{t: tab, host: mustHost(t, "api.example.com"), port: 443}
	in := "x" + a + "warden-ph-" + a + "warden-" + b + b + "warden-ph-short" + "tail warden-p"
	want := "x" + "VALUE-A" + "warden-ph-" + "VALUE-A" + "warden-" + "the value of b, longer than its placeholder" +
		"the value of b, longer than its placeholder" + "warden-ph-short" + "tail warden-p"
	for _, sizes := range [][]int{{1}, {2}, {3, 5}, {7}, {9, 1, 41}, {41}, {42}, {43}, {1 << 20}} {
		r := newRewriteReader(io.NopCloser(&chunkReader{b: []byte(in), sizes: sizes}), w, &refusal{})
		got, err := io.ReadAll(iotest.OneByteReader(r))
		if err != nil || string(got) != want {
			t.Errorf("reads of %v: %v\n%q\nwant\n%q", sizes, err, got, want)
		}
	}
	// Whole texts, as headers are.
	if got, err := w.text("Bearer "+a, nil); err != nil || got != "Bearer VALUE-A" {
		t.Errorf("text: %q %v", got, err)
	}
}

// TestRewriteReaderRefuses: a placeholder whose value may not go to the destination, or one
// not held, ends the body there: what came before it is passed on, nothing of it or after.
func TestRewriteReaderRefuses(t *testing.T) {
	a := NewPlaceholder()
	tab := &subTable{byID: map[string]*Substitution{
		a[len(PlaceholderPrefix):]: {Name: "A", Placeholder: a, Value: secret.New("VALUE-A"), Hosts: mustList(t, "api.example.com")},
	}}
	for _, tt := range []struct {
		name, host, text, want string
	}{
		{"another host", "evil.example.com", "before " + a + " after", "the placeholder of A, whose value may not go to evil.example.com"},
		{"not held", "api.example.com", "before " + NewPlaceholder() + " after", "does not hold now"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := &rewriter{t: tab, host: mustHost(t, tt.host), port: 443}
			ref := &refusal{}
			r := newRewriteReader(io.NopCloser(&chunkReader{b: []byte(tt.text), sizes: []int{3}}), w, ref)
			got, err := io.ReadAll(r)
			if !errors.Is(err, ErrPlaceholder) || !strings.Contains(err.Error(), tt.want) || ref.get() != err {
				t.Errorf("error %v, kept %v", err, ref.get())
			}
			if string(got) != "before " || bytes.Contains(got, []byte("VALUE")) {
				t.Errorf("passed on %q", got)
			}
			if _, err := w.text(tt.text, nil); !errors.Is(err, ErrPlaceholder) {
				t.Errorf("text: %v", err)
			}
		})
	}
}

func mustList(t *testing.T, entries ...string) *Allowlist {
	t.Helper()
	l, err := NewAllowlist(entries)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustHost(t *testing.T, s string) Host {
	t.Helper()
	h, err := ParseHost(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// FuzzRewriteReader: however reads split a body, streaming it gives what rewriting it whole
// gives, refusal included.
func FuzzRewriteReader(f *testing.F) {
	a := "warden-ph-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	b := "warden-ph-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	tab := &subTable{byID: map[string]*Substitution{
		a[len(PlaceholderPrefix):]: {Name: "A", Placeholder: a, Value: secret.New("VALUE-A"), Hosts: mustListF(f, "api.example.com")},
		b[len(PlaceholderPrefix):]: {Name: "B", Placeholder: b, Value: secret.New("VALUE-B"), Hosts: mustListF(f, "other.example.com")},
	}}
	host, _ := ParseHost("api.example.com")
	f.Add([]byte("x"+a+"y"), uint8(1), uint8(7))
	f.Add([]byte("warden-ph-"+a+"warden-p"), uint8(3), uint8(41))
	f.Add([]byte("before "+b+" after"), uint8(5), uint8(2))
	f.Add([]byte("warden-ph-warden-ph-"+a[:20]), uint8(9), uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, s1, s2 uint8) {
		w := &rewriter{t: tab, host: host, port: 443}
		whole, used, werr := w.scan(nil, body, true, nil)
		if werr != nil {
			// Streamed, everything before the refused placeholder is passed on.
			whole, _, _ = w.scan(nil, body[:used], true, nil)
		}
		sizes := []int{int(s1)%64 + 1, int(s2)%64 + 1}
		r := newRewriteReader(io.NopCloser(&chunkReader{b: body, sizes: sizes}), w, &refusal{})
		got, err := io.ReadAll(r)
		if (werr != nil) != (err != nil) {
			t.Fatalf("whole: %v, streamed: %v", werr, err)
		}
		if !bytes.Equal(got, whole) {
			t.Fatalf("streamed in %v:\n%q\nwhole:\n%q", sizes, got, whole)
		}
	})
}

func mustListF(f *testing.F, entries ...string) *Allowlist {
	l, err := NewAllowlist(entries)
	if err != nil {
		f.Fatal(err)
	}
	return l
}

// BenchmarkRewriteBody: what a 1 MiB body costs to stream through the placeholder rewriter,
// against copying it (the baseline, the same run): without a placeholder in it, and with one
// every 10 KiB.
func BenchmarkRewriteBody(b *testing.B) {
	ph := NewPlaceholder()
	list, _ := NewAllowlist([]string{"api.example.com"})
	tab := &subTable{byID: map[string]*Substitution{ph[len(PlaceholderPrefix):]: {Name: "T", Placeholder: ph, Value: secret.New("the-real-value-0123456789abcdef"), Hosts: list}}}
	host, _ := ParseHost("api.example.com")
	clean := bytes.Repeat([]byte(`{"name":"warden","items":[1,2,3],"text":"lorem ipsum dolor sit amet"}`+"\n"), (1<<20)/72)
	var marked []byte
	for len(marked) < 1<<20 {
		marked = append(append(marked, clean[:10<<10]...), ph...)
	}
	elsewhere, _ := ParseHost("elsewhere.example.com")
	buf := make([]byte, 32<<10)
	for _, bb := range []struct {
		name string
		body []byte
		wrap bool
		trip bool // to a host the value may not go to: the tripwire reads it too
	}{{"copy", clean, false, false}, {"clean", clean, true, false}, {"placeholders", marked, true, false}, {"elsewhere", clean, true, true}} {
		b.Run(bb.name, func(b *testing.B) {
			b.SetBytes(int64(len(bb.body)))
			for b.Loop() {
				var src io.Reader = bytes.NewReader(bb.body)
				if bb.trip {
					src = &tripReader{src: io.NopCloser(src), tw: tab.tripwire(elsewhere, 443), to: "elsewhere", refused: &refusal{}}
					src = newRewriteReader(io.NopCloser(src), &rewriter{t: tab, host: elsewhere, port: 443}, &refusal{})
				} else if bb.wrap {
					src = newRewriteReader(io.NopCloser(src), &rewriter{t: tab, host: host, port: 443}, &refusal{})
				}
				if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{src}, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestHideReaderChunks: a value a host echoes is given its placeholder back wherever reads
// split it; short values and values bound for other hosts are left alone.
func TestHideReaderChunks(t *testing.T) {
	a, b, c := NewPlaceholder(), NewPlaceholder(), NewPlaceholder()
	here, there := mustList(t, "api.example.com"), mustList(t, "other.example.com")
	tab := &subTable{byID: map[string]*Substitution{
		a[len(PlaceholderPrefix):]: {Name: "A", Placeholder: a, Value: secret.New("value-of-a-0123"), Hosts: here},
		b[len(PlaceholderPrefix):]: {Name: "B", Placeholder: b, Value: secret.New("pin1"), Hosts: here},
		c[len(PlaceholderPrefix):]: {Name: "C", Placeholder: c, Value: secret.New("value-of-c-4567"), Hosts: there},
	}}
	hd := tab.hiderFor(mustHost(t, "api.example.com"), 443)
	if hd == nil || len(hd.pairs) != 1 {
		t.Fatalf("hider %+v", hd)
	}
	in := `{"echo":"value-of-a-0123","pin":"pin1","other":"value-of-c-4567","twice":"value-of-a-0123value-of-a-0123","part":"value-of-a"}`
	want := `{"echo":"` + a + `","pin":"pin1","other":"value-of-c-4567","twice":"` + a + a + `","part":"value-of-a"}`
	for _, sizes := range [][]int{{1}, {2}, {5, 3}, {14}, {15}, {16}, {1 << 20}} {
		r := newHideReader(io.NopCloser(&chunkReader{b: []byte(in), sizes: sizes}), hd)
		got, err := io.ReadAll(iotest.OneByteReader(r))
		if err != nil || string(got) != want {
			t.Errorf("reads of %v: %v\n%s\nwant\n%s", sizes, err, got, want)
		}
	}
	if tab.hiderFor(mustHost(t, "evil.example.com"), 443) != nil {
		t.Error("a hider for a host no value may go to")
	}
}

// TestHideEncodedResponse: a response that cannot be read for the values sent to its host is
// withheld; a plain one is streamed with its headers and body hidden.
func TestHideEncodedResponse(t *testing.T) {
	a := NewPlaceholder()
	tab := &subTable{byID: map[string]*Substitution{
		a[len(PlaceholderPrefix):]: {Name: "A", Placeholder: a, Value: secret.New("value-of-a-0123"), Hosts: mustList(t, "api.example.com")},
	}}
	hd := tab.hiderFor(mustHost(t, "api.example.com"), 443)
	req, _ := http.NewRequest("GET", "https://api.example.com/", nil)
	req = req.WithContext(context.WithValue(req.Context(), hideKey{}, hd))
	resp := &http.Response{Request: req, Header: http.Header{"Content-Encoding": {"gzip"}}, Body: io.NopCloser(strings.NewReader("x")), ContentLength: 1}
	if err := hide(resp); !errors.Is(err, ErrPlaceholder) {
		t.Errorf("an encoded response: %v", err)
	}
	resp = &http.Response{Request: req, Header: http.Header{"X-Echo": {"value-of-a-0123"}, "Content-Length": {"21"}},
		Body: io.NopCloser(strings.NewReader("token=value-of-a-0123")), ContentLength: 21}
	if err := hide(resp); err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("X-Echo") != a || string(body) != "token="+a || resp.ContentLength != -1 || resp.Header.Get("Content-Length") != "" {
		t.Errorf("hidden: %v %q %d", resp.Header, body, resp.ContentLength)
	}
}
