package egress

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
)

// A tripwire looks, in a request to one destination, for the placeholders held now whose
// values may not go there, in the forms a command could put one in to slip past the
// rewrite's plain scan (which finds "warden-ph-" and what follows, and refuses a placeholder
// whose value may not go to the request's host):
//
//   - the placeholder's random part alone, in any letter case;
//   - percent-encoded, any characters of it, up to two levels deep (%77 and %2577);
//   - hex, either case;
//   - base64, standard or URL alphabet, at any of the three alignments, with or without
//     padding, and with line breaks anywhere in it (MIME);
//
// and the last three combined with percent-encoding. Anything else (a placeholder reversed,
// split across headers or requests, encrypted, compressed inside a body that does not say
// so) passes: a placeholder is worth nothing where its value may not go, so this is a
// tripwire that catches a careless or naive attempt and records it, not the barrier, which is
// that the value is written only toward its own hosts.
type tripwire struct {
	subs  []*Substitution
	lower []twPattern // looked for in the view in lower case
	b64   []twPattern // looked for in the base64 view (line breaks out, URL alphabet mapped)
	keep  int         // the raw bytes a streamed body keeps from one read to the next

	low, b64v []byte // views' buffers
}

type twPattern struct {
	b    []byte
	sub  int
	form string
}

// maxPercentDepth is how many levels of percent-encoding the tripwire undoes.
const maxPercentDepth = 2

// tripwire returns the tripwire for requests to h:port: for each held placeholder whose value
// may not go there. Nil when every held value may go there (or none is held).
func (t *subTable) tripwire(h Host, port uint16) *tripwire {
	if t == nil {
		return nil
	}
	var tw *tripwire
	longest := 0
	for id, s := range t.byID {
		if s.Hosts != nil {
			if _, ok := s.Hosts.MatchPort(h, port); ok {
				continue
			}
		}
		if tw == nil {
			tw = &tripwire{}
		}
		i := len(tw.subs)
		tw.subs = append(tw.subs, s)
		raw := []byte(id)
		hx := []byte(hex.EncodeToString(raw))
		tw.lower = append(tw.lower, twPattern{raw, i, "its random part"}, twPattern{hx, i, "hex-encoded"})
		longest = max(longest, len(hx))
		for k := range 3 {
			// The characters that hold bits of the id alone, with k bytes before it.
			enc := base64.RawStdEncoding.EncodeToString(append(make([]byte, k), raw...))
			from, to := (8*k+5)/6, (8*k+8*len(raw))/6
			tw.b64 = append(tw.b64, twPattern{[]byte(enc[from:to]), i, "base64-encoded"})
		}
	}
	if tw != nil {
		// Each character percent-encoded at each level takes 3 times as many, and base64 may
		// hold a line break every 76 characters.
		tw.keep = longest*2 + 2
		for range maxPercentDepth {
			tw.keep *= 3
		}
	}
	return tw
}

// check returns why b may not be sent (ErrPlaceholder), or nil. what says where b is, for
// the refusal: "the body", "header X".
func (tw *tripwire) check(b []byte, what string, to string) error {
	view := b
	for depth := 0; ; depth++ {
		if err := tw.checkView(view, depth, what, to); err != nil {
			return err
		}
		if depth == maxPercentDepth || bytes.IndexByte(view, '%') < 0 {
			return nil
		}
		next := percentDecode(view)
		if len(next) == len(view) {
			return nil
		}
		view = next
	}
}

func (tw *tripwire) checkView(v []byte, depth int, what, to string) error {
	found := func(p twPattern) error {
		form := p.form
		if depth > 0 {
			form += ", percent-encoded"
		}
		return fmt.Errorf("%w: %s holds the placeholder of %s (%s), whose value may not go to %s", ErrPlaceholder, what, tw.subs[p.sub].Name, form, to)
	}
	lower, b64 := tw.views(v)
	for _, p := range tw.lower {
		if bytes.Contains(lower, p.b) {
			return found(p)
		}
	}
	for _, p := range tw.b64 {
		if bytes.Contains(b64, p.b) {
			return found(p)
		}
	}
	return nil
}

// views returns v in lower case, and v as base64 is read: line breaks taken out, the URL
// alphabet's two letters written as the standard alphabet's. They are the tripwire's own
// buffers, good until the next call.
func (tw *tripwire) views(v []byte) (lower, b64 []byte) {
	if cap(tw.low) < len(v) {
		tw.low, tw.b64v = make([]byte, len(v)), make([]byte, len(v))
	}
	lower, b64 = tw.low[:len(v)], tw.b64v[:len(v)]
	n := 0
	for i, c := range v {
		lower[i] = lowerTable[c]
		b64[n] = base64Table[c]
		if c != '\r' && c != '\n' {
			n++
		}
	}
	return lower, b64[:n]
}

var lowerTable, base64Table = func() (l, b [256]byte) {
	for i := range 256 {
		c := byte(i)
		l[i], b[i] = c, c
		if 'A' <= c && c <= 'Z' {
			l[i] = c + 'a' - 'A'
		}
	}
	b['-'], b['_'] = '+', '/'
	return l, b
}()

// percentDecode undoes one level of percent-encoding; a '%' not followed by two hex digits
// stays as it is.
func percentDecode(v []byte) []byte {
	out := make([]byte, 0, len(v))
	for i := 0; i < len(v); i++ {
		if v[i] == '%' && i+2 < len(v) && isHex(v[i+1]) && isHex(v[i+2]) {
			out = append(out, unhex(v[i+1])<<4|unhex(v[i+2]))
			i += 2
			continue
		}
		out = append(out, v[i])
	}
	return out
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// A tripReader is a body checked by a tripwire as it streams: each read is checked with the
// end of what came before it (tripwire.keep bytes), so a placeholder split across reads is
// found. The read that completes one is not passed on; it ends the body with the refusal,
// which refused keeps for the proxy's answer. What went before it is sent: a part of a
// placeholder, worth nothing.
type tripReader struct {
	src     io.ReadCloser
	tw      *tripwire
	to      string
	refused *refusal
	window  []byte
	err     error
}

func (r *tripReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.src.Read(p)
	if n > 0 {
		r.window = append(r.window, p[:n]...)
		if cerr := r.tw.check(r.window, "the body", r.to); cerr != nil {
			r.refused.set(cerr)
			r.err = cerr
			return 0, cerr
		}
		if drop := len(r.window) - r.tw.keep; drop > 0 {
			r.window = r.window[:copy(r.window, r.window[drop:])]
		}
	}
	return n, err
}

func (r *tripReader) Close() error { return r.src.Close() }
