package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"
)

// currentCA returns the proxy's certificate authority, made at first use and made again
// once its lifetime is over.
func (p *Proxy) currentCA() (*CA, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.opts.Now()
	if p.ca == nil || p.ca.Expired(now) {
		ca, err := NewCA(now, p.opts.CALifetime)
		if err != nil {
			return nil, err
		}
		p.ca = ca
	}
	return p.ca, nil
}

// CABundle returns what a sandboxed command that holds placeholders should trust, PEM-encoded:
// this host's roots and the proxy's certificate authority, which signs the certificates of
// the hosts whose TLS the proxy terminates. Write it where the command can read it and name
// it in SSL_CERT_FILE and its kin (sandbox.Spec.CABundle does).
func (p *Proxy) CABundle() ([]byte, error) {
	ca, err := p.currentCA()
	if err != nil {
		return nil, err
	}
	return ca.Bundle(), nil
}

// intercept serves a CONNECT tunnel to t while the proxy holds placeholders (Substitute):
// it terminates the client's TLS with a certificate of the proxy's CA for t's host alone, and
// sends each request inside on as https://t, checked and rewritten like any other (forward),
// over a new TLS connection that verifies the real host's certificate. Every tunnel is read
// so while any placeholder is held, not only those to hosts a value may go to: a request
// that carries a placeholder where its value may not go is refused (ReasonPlaceholder)
// whether it is sent in the clear or inside TLS. A tunnel that does not start with TLS is
// read as plain HTTP/1.1 (http://t); one that is neither is closed and reported: it cannot be
// read for placeholders.
func (p *Proxy) intercept(w http.ResponseWriter, t Target) {
	ca, err := p.currentCA()
	var leaf *tls.Certificate
	if err == nil {
		leaf, err = ca.Leaf(t.Host)
	}
	if err != nil {
		answer(w, http.StatusInternalServerError, "", fmt.Sprintf("warden egress: CONNECT %s: no certificate: %v\n", t, err))
		return
	}
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		answer(w, http.StatusInternalServerError, "", "warden egress: CONNECT needs HTTP/1.1\n")
		return
	}
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		client.Close()
		return
	}
	if !p.track(client) {
		client.Close()
		return
	}
	defer p.untrack(client)
	defer client.Close()
	_ = client.SetReadDeadline(time.Now().Add(p.opts.ReadHeaderTimeout))
	first, err := brw.Reader.Peek(1)
	if err != nil {
		return
	}
	_ = client.SetDeadline(time.Time{})
	var inner net.Conn = &readerConn{Conn: client, r: brw.Reader}
	scheme := "https"
	switch {
	case startsTLS(first[0]):
		tc := tls.Server(inner, &tls.Config{
			MinVersion: tls.VersionTLS12,
			NextProtos: []string{"http/1.1"}, // the requests inside are read as HTTP/1.1
			GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
				if hello.ServerName != "" {
					if h, err := ParseHost(hello.ServerName); err != nil || h != t.Host {
						dd := deny(Decision{Host: t.Host.String(), Port: t.Port}, ReasonSNIMismatch,
							"the tunnel to %s names the server %q: while placeholders are held, a tunnel names its own host", t, hello.ServerName)
						p.report(dd)
						return nil, fmt.Errorf("server name %q is not %s", hello.ServerName, t.Host)
					}
				}
				return leaf, nil
			},
		})
		hctx, cancel := context.WithTimeout(context.Background(), p.opts.DialTimeout)
		err = tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			return
		}
		inner = tc
	case 'A' <= first[0] && first[0] <= 'Z':
		scheme = "http" // a method: plain HTTP inside the tunnel
	default:
		p.report(deny(Decision{Host: t.Host.String(), Port: t.Port}, ReasonPlaceholder,
			"the tunnel to %s carries neither TLS nor HTTP, which cannot be read for placeholders while this session holds some", t))
		return
	}
	closed := make(chan struct{})
	var once sync.Once
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodConnect {
				answer(w, http.StatusBadRequest, "", "warden egress: CONNECT inside a tunnel is not proxied\n")
				return
			}
			// The destination is the tunnel's, whatever the request says.
			r.URL.Scheme, r.URL.Host = scheme, t.String()
			p.forward(w, r)
		}),
		ReadHeaderTimeout: p.opts.ReadHeaderTimeout,
		IdleTimeout:       p.opts.IdleTimeout,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateClosed || s == http.StateHijacked {
				once.Do(func() { close(closed) })
			}
		},
	}
	_ = srv.Serve(&oneConn{c: inner})
	<-closed
}

// readerConn is a connection whose first bytes were read into r already.
type readerConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *readerConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// CloseWrite passes a half-close on, for a relayed tunnel.
func (c *readerConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// oneConn is a listener that accepts one connection, then reports itself closed: the
// server serves that connection on after Serve returns.
type oneConn struct {
	mu sync.Mutex
	c  net.Conn
}

func (l *oneConn) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c == nil {
		return nil, net.ErrClosed
	}
	c := l.c
	l.c = nil
	return c, nil
}

func (l *oneConn) Close() error   { return nil }
func (l *oneConn) Addr() net.Addr { return tunnelAddr{} }

type tunnelAddr struct{}

func (tunnelAddr) Network() string { return "tunnel" }
func (tunnelAddr) String() string  { return "tunnel" }
