package egress

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// maxRewriteBuffer is the largest body with a Content-Length that is read whole, so that the
// rewritten request keeps an exact Content-Length; a longer one, or one of unknown length, is
// streamed and sent chunked.
const maxRewriteBuffer = 1 << 20

var placeholderPrefix = []byte(PlaceholderPrefix)

// A rewriter puts values in place of placeholders for one request's destination.
type rewriter struct {
	t    *subTable
	host Host
	port uint16
}

// lookup returns the substitution of a placeholder's id if its value may go to the
// destination, or an error (ErrPlaceholder) saying why not.
func (w *rewriter) lookup(id []byte) (*Substitution, error) {
	s, ok := w.t.byID[string(id)]
	if !ok {
		return nil, fmt.Errorf("%w: the request holds a placeholder this session does not hold now (its command ended, or it is another's)", ErrPlaceholder)
	}
	if s.Hosts != nil {
		if _, ok := s.Hosts.MatchPort(w.host, w.port); ok {
			return s, nil
		}
	}
	return nil, fmt.Errorf("%w: the request holds the placeholder of %s, whose value may not go to %s", ErrPlaceholder, s.Name, w.host.hostPort(w.port))
}

// scan appends to dst what buf becomes, each placeholder replaced by esc of its value, and
// returns how much of buf it covers. Unless final, it stops before a tail of buf that may be
// the start of a placeholder, which the caller passes again with what follows.
func (w *rewriter) scan(dst, buf []byte, final bool, esc func(string) string) ([]byte, int, error) {
	i := 0
	for {
		j := bytes.Index(buf[i:], placeholderPrefix)
		if j < 0 {
			break
		}
		j += i
		end := j + PlaceholderLen
		if end > len(buf) {
			if final {
				break // too short to be one
			}
			return append(dst, buf[i:j]...), j, nil
		}
		id := buf[j+len(placeholderPrefix) : end]
		if !isPlaceholderID(id) {
			dst = append(dst, buf[i:j+len(placeholderPrefix)]...)
			i = j + len(placeholderPrefix)
			continue
		}
		s, err := w.lookup(id)
		if err != nil {
			return append(dst, buf[i:j]...), j, err // what came before it is passed on
		}
		dst = append(dst, buf[i:j]...)
		v := s.Value.Reveal()
		if esc != nil {
			v = esc(v)
		}
		dst = append(dst, v...)
		i = end
	}
	keep := 0
	if !final {
		keep = partialPrefix(buf[i:])
	}
	return append(dst, buf[i:len(buf)-keep]...), len(buf) - keep, nil
}

// partialPrefix is the length of the longest end of b that is a proper start of
// PlaceholderPrefix.
func partialPrefix(b []byte) int {
	for n := min(len(b), len(placeholderPrefix)-1); n > 0; n-- {
		if bytes.Equal(b[len(b)-n:], placeholderPrefix[:n]) {
			return n
		}
	}
	return 0
}

// text rewrites a whole string.
func (w *rewriter) text(s string, esc func(string) string) (string, error) {
	if !strings.Contains(s, PlaceholderPrefix) {
		return s, nil
	}
	out, _, err := w.scan(nil, []byte(s), true, esc)
	return string(out), err
}

// A scanReader is a body passed through a scanner as it streams: scan turns what was read
// into what is passed on, and says how much of it it used; what it leaves (a possible start of
// what it looks for, split across reads) is scanned again with the next read. An error from
// scan ends the body with it, after fail (if set) is told.
type scanReader struct {
	src  io.ReadCloser
	scan func(dst, buf []byte, final bool) (out []byte, used int, err error)
	fail func(error)
	buf  []byte // read from src, not yet scanned
	out  []byte // scanned, not yet returned
	off  int
	err  error
}

// newRewriteReader is a body with placeholders replaced as it streams: it holds back at most
// PlaceholderLen-1 bytes that may begin one, so a placeholder split across reads is found.
// The first refused placeholder ends it with an error, kept in refused for the proxy to
// answer with; nothing from the refused placeholder on is passed on.
func newRewriteReader(src io.ReadCloser, w *rewriter, refused *refusal) *scanReader {
	return &scanReader{src: src, fail: refused.set, scan: func(dst, buf []byte, final bool) ([]byte, int, error) {
		return w.scan(dst, buf, final, nil)
	}}
}

// newHideReader is a response body with values replaced by their placeholders as it streams.
func newHideReader(src io.ReadCloser, hd *hider) *scanReader {
	return &scanReader{src: src, scan: func(dst, buf []byte, final bool) ([]byte, int, error) {
		out, used := hd.scan(dst, buf, final)
		return out, used, nil
	}}
}

func (r *scanReader) Read(p []byte) (int, error) {
	for r.off == len(r.out) {
		if r.err != nil {
			return 0, r.err
		}
		r.out, r.off = r.out[:0], 0
		n := len(r.buf)
		if cap(r.buf)-n < 16<<10 {
			r.buf = append(r.buf, make([]byte, 32<<10)...)[:n]
		}
		m, err := r.src.Read(r.buf[n:cap(r.buf)])
		r.buf = r.buf[:n+m]
		out, used, serr := r.scan(r.out, r.buf, err != nil)
		r.out = out
		r.buf = r.buf[:copy(r.buf, r.buf[used:])]
		switch {
		case serr != nil:
			if r.fail != nil {
				r.fail(serr)
			}
			r.err = serr
		case err != nil:
			r.err = err
		}
	}
	n := copy(p, r.out[r.off:])
	r.off += n
	return n, nil
}

func (r *scanReader) Close() error { return r.src.Close() }

// A refusal is where a streamed body's refused placeholder is kept, for the proxy's answer.
type refusal struct {
	mu  sync.Mutex
	err error
}

func (r *refusal) set(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

func (r *refusal) get() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// rewrite puts values in place of placeholders in a request to h:port, in its path, query,
// headers and body, or returns why it must be refused (ErrPlaceholder). A refusal found in a
// streamed body is kept in ref instead, and the body ends with it. Where a held value may not
// go, the request is also looked through for its placeholder in other forms (tripwire), and
// what cannot be read for placeholders (an encoded body, a protocol upgrade) is refused.
// Without held placeholders it changes nothing and costs one load.
func (p *Proxy) rewrite(r *http.Request, h Host, port uint16, ref *refusal) error {
	t := p.subs.Load()
	if t == nil {
		return nil
	}
	w := &rewriter{t: t, host: h, port: port}
	to := h.hostPort(port)
	tw := t.tripwire(h, port)
	// A request's trailers come after its body, and are not read for placeholders.
	r.Trailer = nil
	if tw != nil {
		if up := r.Header.Get("Upgrade"); up != "" {
			return fmt.Errorf("%w: the request asks to switch to %q, whose traffic cannot be read for placeholders, while this session holds some whose values may not go to %s", ErrPlaceholder, up, to)
		}
		var user string
		if r.URL.User != nil {
			user = r.URL.User.String()
		}
		for _, part := range [][2]string{{"the method", r.Method}, {"the URL's user", user}, {"the path", r.URL.Path},
			{"the path", r.URL.RawPath}, {"the query", r.URL.RawQuery}} {
			if err := tw.check([]byte(part[1]), part[0], to); err != nil {
				return err
			}
		}
	}
	path, err := w.text(r.URL.Path, nil)
	if err != nil {
		return err
	}
	if path != r.URL.Path {
		r.URL.Path, r.URL.RawPath = path, ""
	}
	if r.URL.RawQuery, err = w.text(r.URL.RawQuery, url.QueryEscape); err != nil {
		return err
	}
	for k, vs := range r.Header {
		if tw != nil {
			// Found in a name, the name is not repeated in the refusal: it holds the placeholder.
			if err := tw.check([]byte(k), "a header's name", to); err != nil {
				return err
			}
		}
		for i, v := range vs {
			if vs[i], err = w.text(v, nil); err != nil {
				return err
			}
			if tw != nil {
				if err := tw.check([]byte(v), "the header "+k, to); err != nil {
					return err
				}
			}
		}
		r.Header[k] = vs
	}
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		// An encoded body cannot be read for placeholders. Where every held value may go it is
		// sent as it is: a placeholder inside stays a placeholder, which the host refuses as
		// a credential, and the value is never written where Warden could not see it.
		// Elsewhere it is refused: it might carry a placeholder toward a host its value may
		// not reach.
		if tw == nil {
			return nil
		}
		return fmt.Errorf("%w: the body is encoded (Content-Encoding: %s), so it cannot be read for placeholders while this session holds some whose values may not go to %s", ErrPlaceholder, ce, to)
	}
	if r.ContentLength > 0 && r.ContentLength <= maxRewriteBuffer {
		b, err := io.ReadAll(io.LimitReader(r.Body, r.ContentLength))
		r.Body.Close()
		if err != nil {
			return fmt.Errorf("reading the request's body: %w", err)
		}
		out, _, err := w.scan(nil, b, true, nil)
		if err != nil {
			return err
		}
		if tw != nil {
			if err := tw.check(b, "the body", to); err != nil {
				return err
			}
		}
		r.Body, r.GetBody = io.NopCloser(bytes.NewReader(out)), nil
		r.ContentLength = int64(len(out))
		r.Header.Set("Content-Length", strconv.Itoa(len(out)))
		return nil
	}
	// Too long to hold, or of unknown length: streamed, and sent chunked, as its length is
	// not known before its end.
	body := r.Body
	if tw != nil {
		body = &tripReader{src: body, tw: tw, to: to, refused: ref}
	}
	r.Body, r.GetBody = newRewriteReader(body, w, ref), nil
	r.ContentLength = -1
	r.Header.Del("Content-Length")
	return nil
}

// minHiddenLen is the shortest value hidden again in responses: a shorter one would turn up by
// chance in any response and garble it. (Output redaction still looks for short values whole.)
const minHiddenLen = 8

// A hider puts placeholders back in place of their values in a response from a host the
// values may go to, so that a host that echoes what it was sent does not hand a value into
// the sandbox.
type hider struct {
	pairs  [][2][]byte // value, placeholder
	maxLen int
}

// hiderFor returns the hider for responses from h:port: the held values that may go there, or
// nil if none may.
func (t *subTable) hiderFor(h Host, port uint16) *hider {
	if t == nil {
		return nil
	}
	var hd *hider
	for _, s := range t.byID {
		if s.Hosts == nil {
			continue
		}
		if _, ok := s.Hosts.MatchPort(h, port); !ok {
			continue
		}
		v := s.Value.Reveal()
		if len(v) < minHiddenLen {
			continue
		}
		if hd == nil {
			hd = &hider{}
		}
		hd.pairs = append(hd.pairs, [2][]byte{[]byte(v), []byte(s.Placeholder)})
		hd.maxLen = max(hd.maxLen, len(v))
	}
	return hd
}

// scan is rewriter.scan for values: it appends buf with every value replaced by its
// placeholder, up to a tail that may begin one (unless final), and returns how much it covered.
func (hd *hider) scan(dst, buf []byte, final bool) ([]byte, int) {
	limit := len(buf)
	if !final {
		limit = max(0, len(buf)-(hd.maxLen-1))
	}
	i := 0
	for i < limit {
		at, which := -1, -1
		for k, p := range hd.pairs {
			j := bytes.Index(buf[i:], p[0])
			if j >= 0 && (at < 0 || j < at || j == at && len(p[0]) > len(hd.pairs[which][0])) {
				at, which = j, k
			}
		}
		if at < 0 || i+at >= limit {
			break
		}
		dst = append(append(dst, buf[i:i+at]...), hd.pairs[which][1]...)
		i += at + len(hd.pairs[which][0])
	}
	if i >= limit {
		return dst, i
	}
	return append(dst, buf[i:limit]...), limit
}

// hideKey carries a request's hider to the response.
type hideKey struct{}

// hide puts placeholders back in a response whose request carried a hider: in its headers
// and, streamed, its body (sent on without a Content-Length). An encoded body cannot be read
// for values, so it is not passed on (the request asked for none: see forward).
func hide(resp *http.Response) error {
	hd, _ := resp.Request.Context().Value(hideKey{}).(*hider)
	if hd == nil {
		return nil
	}
	for _, vs := range resp.Header {
		for i, v := range vs {
			out, _ := hd.scan(nil, []byte(v), true)
			vs[i] = string(out)
		}
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		return nil
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		resp.Body.Close()
		return fmt.Errorf("%w: the response is encoded (Content-Encoding: %s), so it cannot be read for the protected values sent to this host, and is withheld", ErrPlaceholder, ce)
	}
	resp.Body = newHideReader(resp.Body, hd)
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	return nil
}
