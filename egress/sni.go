package egress

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync/atomic"
	"time"
)

// The server name (SNI) a TLS client sends at the start of a CONNECT tunnel.
//
// A CONNECT to an allowed host (a shared CDN address or name, say) could carry a TLS handshake
// that asks the server behind it for another site: the server picks the site by the
// ClientHello's server_name, not by the CONNECT line. The proxy reads the ClientHello a tunnel
// starts with, before forwarding a byte of it, and refuses a server name the tunnel's host does
// not cover (ReasonSNIMismatch).
//
// The ClientHello is parsed here rather than by crypto/tls: the parser below reads only the
// record layer, the handshake header and the ClientHello's fields as far as the server_name
// extension, never allocates more than the bytes it was given, and leaves the bytes untouched,
// so what reaches the upstream is exactly what the client sent. FuzzClientHello holds it to
// crypto/tls's reading: on every input crypto/tls accepts as a ClientHello, both find the same
// server name (unless the records holding it pass maxHelloBytes, which counts their headers
// too, where crypto/tls counts the message alone).

// TLS constants (RFC 8446 and RFC 6066).
const (
	recordTypeAlert          = 21
	recordTypeHandshake      = 22
	recordHeaderLen          = 5
	maxRecordLen             = 1 << 14 // a plaintext record holds at most 2^14 bytes
	handshakeTypeClientHello = 1
	extensionServerName      = 0
	serverNameTypeHostName   = 0
)

// maxHelloBytes bounds what the proxy reads from a tunnel's client before it has the whole
// ClientHello: records, headers and any bytes that came with them. Real ClientHellos are
// well under 2 KiB; one with a large session ticket or post-quantum key shares a few KiB.
const maxHelloBytes = 64 << 10

// tlsAlertAccessDenied is the fatal access_denied alert the client gets when its server name
// is refused, so that it fails with "access denied" rather than a bare end of stream.
var tlsAlertAccessDenied = []byte{recordTypeAlert, 3, 3, 0, 2, 2, 49}

// startsTLS reports whether a tunnel whose first byte is b is taken to be TLS: it starts with
// a handshake record, or with an alert record, which servers (crypto/tls, OpenSSL) skip before
// reading the ClientHello that follows it. Anything else is passed through unread.
func startsTLS(b byte) bool { return b == recordTypeHandshake || b == recordTypeAlert }

// errHelloTooLarge: the ClientHello did not fit in maxHelloBytes.
var errHelloTooLarge = fmt.Errorf("the TLS ClientHello is longer than %d KiB", maxHelloBytes>>10)

// A helloError is a stream that starts like TLS but is not a well-formed ClientHello.
type helloError string

func (e helloError) Error() string { return string(e) }

func helloErrorf(format string, args ...any) error { return helloError(fmt.Sprintf(format, args...)) }

// A helloReader holds the bytes a client sent, reading more as the ClientHello needs them.
type helloReader struct {
	// buf holds every byte read so far, in order; reads go into its spare capacity first.
	buf []byte
	// read reads more; nil when buf is all there is (then a short input is an
	// io.ErrUnexpectedEOF).
	read func([]byte) (int, error)
}

// fill makes buf hold at least n bytes.
func (r *helloReader) fill(n int) error {
	if n > maxHelloBytes {
		return errHelloTooLarge
	}
	idle := 0
	for len(r.buf) < n {
		if r.read == nil {
			return io.ErrUnexpectedEOF
		}
		if cap(r.buf) < n {
			grown := make([]byte, len(r.buf), min(max(2*cap(r.buf), n, 4<<10), maxHelloBytes))
			copy(grown, r.buf)
			r.buf = grown
		}
		m, err := r.read(r.buf[len(r.buf):cap(r.buf)])
		r.buf = r.buf[:len(r.buf)+m]
		if err != nil {
			if len(r.buf) >= n {
				return nil
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if m == 0 {
			if idle++; idle > 100 {
				return io.ErrNoProgress
			}
		}
	}
	return nil
}

// clientHello reads records until the first handshake message is complete and returns it,
// with its 4-byte header. Alert records before and between its fragments are skipped, as
// servers skip warning alerts; any other record type, an empty handshake record, a record
// longer than TLS allows or a first message that is not a ClientHello is a helloError.
func (r *helloReader) clientHello() ([]byte, error) {
	var msg []byte // the handshake bytes so far
	owned := false // msg is a copy, not a piece of buf
	for pos := 0; ; {
		if err := r.fill(pos + recordHeaderLen); err != nil {
			return nil, err
		}
		typ := r.buf[pos]
		n := int(r.buf[pos+3])<<8 | int(r.buf[pos+4])
		if n > maxRecordLen {
			return nil, helloErrorf("a TLS record of %d bytes, more than the %d a record may hold", n, maxRecordLen)
		}
		if err := r.fill(pos + recordHeaderLen + n); err != nil {
			return nil, err
		}
		body := r.buf[pos+recordHeaderLen : pos+recordHeaderLen+n]
		pos += recordHeaderLen + n
		switch {
		case typ == recordTypeAlert:
			continue
		case typ != recordTypeHandshake:
			return nil, helloErrorf("a TLS record of type %d before the ClientHello was complete", typ)
		case n == 0:
			return nil, helloErrorf("an empty TLS handshake record")
		}
		switch {
		case msg == nil:
			msg = body
		case !owned:
			msg = append(append(make([]byte, 0, 2*(len(msg)+len(body))), msg...), body...)
			owned = true
		default:
			msg = append(msg, body...)
		}
		if len(msg) < 4 {
			continue
		}
		if msg[0] != handshakeTypeClientHello {
			return nil, helloErrorf("the first TLS handshake message is of type %d, not a ClientHello", msg[0])
		}
		l := int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3])
		if 4+l > maxHelloBytes {
			return nil, errHelloTooLarge
		}
		if len(msg) >= 4+l {
			return msg[:4+l], nil
		}
	}
}

// serverName returns the host_name of a ClientHello's server_name extension (RFC 6066), as
// sent: "" when there is none. msg is the whole handshake message, header included. The
// structure up to the extensions and the server_name extension are checked as crypto/tls
// checks them; the other extensions are skipped unread.
func serverName(msg []byte) (string, error) {
	s := cursor(msg)
	if !s.skip(4) || // handshake type and length
		!s.skip(2+32) || // legacy_version, random
		!s.skipVec8() || // legacy_session_id
		!s.skipVec16() || // cipher_suites
		!s.skipVec8() { // legacy_compression_methods
		return "", helloErrorf("the TLS ClientHello is truncated")
	}
	if len(s) == 0 {
		return "", nil // no extensions
	}
	exts, ok := s.vec16()
	if !ok || len(s) != 0 {
		return "", helloErrorf("the TLS ClientHello's extensions are malformed")
	}
	name, seen := "", false
	for len(exts) > 0 {
		typ, ok1 := exts.uint16()
		data, ok2 := exts.vec16()
		if !ok1 || !ok2 {
			return "", helloErrorf("the TLS ClientHello's extensions are malformed")
		}
		if typ != extensionServerName {
			continue
		}
		if seen {
			return "", helloErrorf("the TLS ClientHello has two server_name extensions")
		}
		seen = true
		list, ok := data.vec16()
		if !ok || len(data) != 0 || len(list) == 0 {
			return "", helloErrorf("the TLS ClientHello's server_name extension is malformed")
		}
		for len(list) > 0 {
			nameType, ok1 := list.uint8()
			host, ok2 := list.vec16()
			if !ok1 || !ok2 || len(host) == 0 {
				return "", helloErrorf("the TLS ClientHello's server_name extension is malformed")
			}
			if nameType != serverNameTypeHostName {
				continue // no other type is defined; servers ignore them
			}
			if name != "" {
				return "", helloErrorf("the TLS ClientHello names two servers")
			}
			name = string(host)
		}
	}
	return name, nil
}

// parseClientHello reads the server name from the bytes a TLS client starts with; the bytes
// must hold the whole ClientHello.
func parseClientHello(raw []byte) (string, error) {
	r := helloReader{buf: raw}
	msg, err := r.clientHello()
	if err != nil {
		return "", err
	}
	return serverName(msg)
}

// A cursor reads a ClientHello's fields; every method reports false, and reads nothing, when
// the field runs past the end.
type cursor []byte

func (c *cursor) skip(n int) bool {
	if len(*c) < n {
		return false
	}
	*c = (*c)[n:]
	return true
}

func (c *cursor) uint8() (byte, bool) {
	if len(*c) < 1 {
		return 0, false
	}
	v := (*c)[0]
	*c = (*c)[1:]
	return v, true
}

func (c *cursor) uint16() (int, bool) {
	if len(*c) < 2 {
		return 0, false
	}
	v := int((*c)[0])<<8 | int((*c)[1])
	*c = (*c)[2:]
	return v, true
}

// vec16 reads a vector with a 2-byte length.
func (c *cursor) vec16() (cursor, bool) {
	if len(*c) < 2 {
		return nil, false
	}
	n := int((*c)[0])<<8 | int((*c)[1])
	if len(*c) < 2+n {
		return nil, false
	}
	v := (*c)[2 : 2+n]
	*c = (*c)[2+n:]
	return v, true
}

func (c *cursor) skipVec8() bool {
	if len(*c) < 1 || len(*c) < 1+int((*c)[0]) {
		return false
	}
	*c = (*c)[1+int((*c)[0]):]
	return true
}

func (c *cursor) skipVec16() bool {
	_, ok := c.vec16()
	return ok
}

// checkServerName judges the server name a TLS client sent at the start of a tunnel to t:
// true when it may go on, else the refusal.
//
// In allowlist mode the name must be t's host itself or a name the proxy's lists (the
// checker's, the tenant's, AllowOnce's) list by name on t's port; it is not resolved, since nothing
// connects to its addresses. In both modes a name that is never allowed (localhost, the
// metadata names) or an address in a never-allowed range or of this host is refused, and in allowlist mode so
// is any address: a server name is never one (RFC 6066).
func (p *Proxy) checkServerName(t Target, sni string) (Decision, bool) {
	if sni == "" || sni == t.Host.Name() {
		return Decision{}, true
	}
	refuse := func(format string, args ...any) (Decision, bool) {
		return deny(Decision{Host: t.Host.String(), Port: t.Port}, ReasonSNIMismatch, format, args...), false
	}
	h, err := ParseHost(sni)
	if err != nil {
		return refuse("the TLS server name %q is not a valid host name: %s", sni, hostProblem(err))
	}
	if h.IsAddr() {
		a := h.Addr()
		if r, ok := Classify(a); ok && r.NeverAllowed {
			return refuse("the TLS server name %q is %s, %s (%s), which is never allowed", sni, a, r.Name, r.Prefix)
		}
		if _, own := p.checker.hostAddress(Decision{}, "", []netip.Addr{a}); own {
			return refuse("the TLS server name %q is %s, one of this host's own addresses (or they cannot be read), which are never allowed", sni, a)
		}
		if p.checker.mode == ModeAllowlist {
			return refuse("the TLS server name %q is an IP address, which a server name never is", sni)
		}
		return Decision{}, true
	}
	name := h.Name()
	if why, ok := forbiddenName(name); ok {
		return refuse("the TLS server name %s is %s, which is never allowed", name, why)
	}
	if p.checker.mode == ModeOpen || h == t.Host {
		return Decision{}, true
	}
	if _, _, ok := p.checker.match(h, t.Port, p.extras()); ok {
		return Decision{}, true
	}
	return refuse("the TLS server name %s does not match the CONNECT host %s and is not on the allowlist", name, t.Host)
}

// screenHello judges the first bytes a tunnel's client sent (buf, at least one byte; its spare
// capacity may be used to read more) before any of them reach the upstream. Unless they start
// like TLS they pass as they are. Otherwise the rest of the ClientHello is read, for at most
// DialTimeout and maxHelloBytes, and its server name is judged: on a refusal the decision is
// reported, the client gets an access_denied alert and false is returned, with nothing
// forwarded. On success it returns every byte read, to be forwarded as they are.
func (p *Proxy) screenHello(client net.Conn, buf []byte, t Target, last *atomic.Int64) ([]byte, bool) {
	if !startsTLS(buf[0]) {
		return buf, true
	}
	_ = client.SetReadDeadline(time.Now().Add(p.opts.DialTimeout))
	r := helloReader{buf: buf, read: func(b []byte) (int, error) {
		n, err := client.Read(b)
		if n > 0 {
			last.Store(time.Now().UnixNano())
		}
		return n, err
	}}
	msg, err := r.clientHello()
	var sni string
	if err == nil {
		sni, err = serverName(msg)
	}
	var d Decision
	var he helloError
	var ne net.Error
	switch {
	case err == nil:
		var ok bool
		if d, ok = p.checkServerName(t, sni); ok {
			return r.buf, true
		}
	case errors.As(err, &he), errors.Is(err, errHelloTooLarge):
		d = deny(Decision{Host: t.Host.String(), Port: t.Port}, ReasonSNIMismatch,
			"the tunnel's first bytes start a TLS record, but its server name cannot be checked: %v", err)
	case errors.As(err, &ne) && ne.Timeout():
		d = deny(Decision{Host: t.Host.String(), Port: t.Port}, ReasonSNIMismatch,
			"the tunnel's first bytes start a TLS record, but the rest of the ClientHello did not come within %s", p.opts.DialTimeout)
	default:
		return nil, false // the client went away, or the proxy is closing: nothing to report
	}
	p.report(d)
	_ = client.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = client.Write(tlsAlertAccessDenied)
	return nil, false
}
