package egress_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/wardenhq/warden/egress"
	"github.com/wardenhq/warden/secret"
)

// TestProxyPlaceholders runs requests through a real proxy to the test host: a placeholder
// becomes its value in the path, query, headers and body of requests to the hosts the value
// may go to, over plain HTTP and inside TLS the proxy terminates (verifying the host's own
// certificate), and is refused anywhere else, and once released.
func TestProxyPlaceholders(t *testing.T) {
	f := newProxyFixture(t, egress.ModeAllowlist, egress.ProxyOptions{})
	ip := f.host.addr.String()
	for _, e := range []string{ip, ip + ":8443", ip + ":7"} {
		if err := f.proxy.AllowOnce(e); err != nil {
			t.Fatal(err)
		}
	}
	const value = "s3cr3t-value-for-the-host-0042"
	ph := egress.NewPlaceholder()
	if !strings.HasPrefix(ph, egress.PlaceholderPrefix) || len(ph) != egress.PlaceholderLen || ph == egress.NewPlaceholder() {
		t.Fatalf("placeholder %q", ph)
	}
	hosts, err := egress.NewAllowlist([]string{ip, ip + ":8443"})
	if err != nil {
		t.Fatal(err)
	}
	release, err := f.proxy.Substitute([]egress.Substitution{{Name: "TOKEN", Placeholder: ph, Value: secret.New(value), Hosts: hosts}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.proxy.Substitute([]egress.Substitution{{Name: "AGAIN", Placeholder: ph}}); err == nil {
		t.Error("a placeholder held twice")
	}

	// The command trusts only what the proxy hands it: the system roots and the session's CA.
	bundle, err := f.proxy.CABundle()
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(bundle) {
		t.Fatal("the bundle holds no certificate")
	}
	sandboxed := &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyURL(f.proxyURL),
		TLSClientConfig: &tls.Config{RootCAs: pool},
	}}
	send := func(c *http.Client, method, u, body string, hdr map[string]string) (int, hostReply, string) {
		t.Helper()
		req, err := http.NewRequest(method, u, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		code, reply, text, _ := getJSON(t, c, req)
		return code, reply, text
	}
	// The host received the value (its digest says so); its echo of what it received comes
	// back with the placeholder in the value's place, so nothing hands the value to the command.
	check := func(what string, r hostReply) {
		t.Helper()
		if r.Digest != requestDigest("/x/"+value, "k="+url.QueryEscape(value), "Bearer "+value, `{"key":"`+value+`"}`) {
			t.Errorf("%s: the host did not receive the value in the path, query, header and body: %+v", what, r)
		}
		if r.Header.Get("Authorization") != "Bearer "+ph || r.Body != `{"key":"`+ph+`"}` || r.Path != "/x/"+ph {
			t.Errorf("%s: the echo was not given placeholders back: %+v", what, r)
		}
	}
	hdr := map[string]string{"Authorization": "Bearer " + ph}

	// Plain HTTP, in absolute form.
	code, r, text := send(sandboxed, "POST", "http://"+ip+"/x/"+ph+"?k="+ph, `{"key":"`+ph+`"}`, hdr)
	if code != http.StatusOK {
		t.Fatalf("http: %d %s", code, text)
	}
	check("http", r)

	// HTTPS: the proxy's certificate for the host, the host's own behind it.
	code, r, text = send(sandboxed, "POST", "https://"+ip+":8443/x/"+ph+"?k="+ph, `{"key":"`+ph+`"}`, hdr)
	if code != http.StatusOK || !r.TLS {
		t.Fatalf("https: %d %s", code, text)
	}
	check("https", r)

	// A body too long to hold is streamed, chunked, the placeholder found wherever it falls.
	long := strings.Repeat("a", 1<<20) + ph + strings.Repeat("b", 4093) + ph
	code, r, text = send(sandboxed, "PUT", "https://"+ip+":8443/long", long, nil)
	if code != http.StatusOK || r.Digest != requestDigest("/long", "", "", strings.Repeat("a", 1<<20)+value+strings.Repeat("b", 4093)+value) ||
		r.Body != long || strings.Contains(text, value) {
		t.Errorf("a long body: %d, %d bytes echoed, %.200s", code, len(r.Body), text)
	}

	// Another host (a name for the same address is another host), another port: refused.
	for _, u := range []string{"http://allowed.test/?k=" + ph, "http://" + ip + ":7/"} {
		code, _, text = send(sandboxed, "GET", u, "", hdr)
		if code != http.StatusForbidden || !strings.Contains(text, "placeholder_refused") || !strings.Contains(text, "TOKEN") || strings.Contains(text, value) {
			t.Errorf("%s: %d %s", u, code, text)
		}
	}
	// A body that cannot be read, to a host the value may not go to: refused. To one it
	// may go to: sent as it is, the placeholder inside left alone.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	io.WriteString(zw, ph)
	zw.Close()
	gzipped := map[string]string{"Content-Encoding": "gzip"}
	if code, _, text = send(sandboxed, "POST", "http://allowed.test/", gz.String(), gzipped); code != http.StatusForbidden || !strings.Contains(text, "cannot be read for placeholders") {
		t.Errorf("gzip elsewhere: %d %s", code, text)
	}
	if code, r, text = send(sandboxed, "POST", "http://"+ip+"/", gz.String(), gzipped); code != http.StatusOK || r.Header.Get("Content-Encoding") != "gzip" || len(r.Body) == 0 {
		t.Errorf("gzip to the host: %d %s", code, text)
	}
	// A placeholder found part way through a streamed body ends the request with a refusal.
	stale := strings.Repeat("c", 1<<20+5) + egress.NewPlaceholder() + "tail"
	if code, _, text = send(sandboxed, "PUT", "https://"+ip+":8443/long", stale, nil); code != http.StatusForbidden || !strings.Contains(text, "does not hold now") {
		t.Errorf("a streamed body with a placeholder not held: %d %.300s", code, text)
	}
	refused := 0
	f.mu.Lock()
	for _, d := range f.decisions {
		if d.Reason == egress.ReasonPlaceholder {
			refused++
			if d.Allow || strings.Contains(d.Detail, value) {
				t.Errorf("decision %+v", d)
			}
		}
	}
	f.mu.Unlock()
	if refused != 4 {
		t.Errorf("%d refusals reported, want 4", refused)
	}

	// Released: the placeholder is no longer known, and the host's TLS is a tunnel again.
	release()
	release()
	if f.proxy.Substituting() {
		t.Error("still substituting")
	}
	code, _, text = send(sandboxed, "GET", "http://"+ip+"/", "", hdr)
	if code != http.StatusOK || !strings.Contains(text, ph) {
		t.Errorf("after release, with no placeholder held: %d %s", code, text)
	}
	fresh := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(f.proxyURL), TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if _, err := fresh.Get("https://" + ip + ":8443/"); err == nil {
		t.Error("after release the session's CA still stands for the host")
	}
	direct := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(f.proxyURL), TLSClientConfig: &tls.Config{RootCAs: testHostRoots}}}
	if code, _, text = send(direct, "GET", "https://"+ip+":8443/", "", nil); code != http.StatusOK {
		t.Errorf("a tunnel after release: %d %s", code, text)
	}

	// While another placeholder is held, one this session no longer holds is refused.
	release, err = f.proxy.Substitute([]egress.Substitution{{Name: "OTHER", Placeholder: egress.NewPlaceholder(), Value: secret.New("x"), Hosts: hosts}})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if code, _, text = send(sandboxed, "GET", "http://"+ip+"/", "", hdr); code != http.StatusForbidden || !strings.Contains(text, "does not hold now") {
		t.Errorf("a stale placeholder: %d %s", code, text)
	}
}

// TestProxyPlaceholderServerName: inside a tunnel whose TLS the proxy terminates, the server
// name must be the tunnel's host: the certificate is for that host alone.
func TestProxyPlaceholderServerName(t *testing.T) {
	f := newProxyFixture(t, egress.ModeAllowlist, egress.ProxyOptions{})
	hosts, _ := egress.NewAllowlist([]string{"allowed.test"})
	release, err := f.proxy.Substitute([]egress.Substitution{{Name: "T", Placeholder: egress.NewPlaceholder(), Value: secret.New("v"), Hosts: hosts}})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	bundle, _ := f.proxy.CABundle()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle)
	conn := openTunnel(t, f, "allowed.test:443")
	defer conn.Close()
	tc := tls.Client(conn, &tls.Config{ServerName: "evil.test", RootCAs: pool})
	if err := tc.Handshake(); err == nil {
		t.Fatal("a handshake naming another server succeeded")
	}
	got := f.sniRefusals()
	if len(got) != 1 || !strings.Contains(got[0].Detail, "evil.test") {
		t.Errorf("refusals %+v", got)
	}
}

// BenchmarkProxyPlaceholders measures what terminating TLS costs a request to a host a held
// placeholder's value may go to, against the same HTTPS GET through a plain tunnel (the
// baseline, the same run): both over a kept-alive connection, with a placeholder in a header
// ("terminated"), and over a new connection each time (a TLS handshake with the proxy, and
// for "terminated" the proxy's pooled connection to the host).
func BenchmarkProxyPlaceholders(b *testing.B) {
	f := newProxyFixture(b, egress.ModeAllowlist, egress.ProxyOptions{})
	ip := f.host.addr.String()
	if err := f.proxy.AllowOnce(ip + ":8443"); err != nil {
		b.Fatal(err)
	}
	bundle, err := f.proxy.CABundle()
	if err != nil {
		b.Fatal(err)
	}
	pool := testHostRoots.Clone()
	pool.AppendCertsFromPEM(bundle)
	ph := egress.NewPlaceholder()
	get := func(b *testing.B, c *http.Client) {
		req, _ := http.NewRequest("GET", "https://"+ip+":8443/", nil)
		req.Header.Set("Authorization", "Bearer "+ph)
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s", resp.Status)
		}
	}
	client := func(keep bool) *http.Client {
		return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(f.proxyURL), DisableKeepAlives: !keep,
			TLSClientConfig: &tls.Config{RootCAs: pool}}}
	}
	for _, keep := range []bool{true, false} {
		conn := "keepalive"
		if !keep {
			conn = "newconn"
		}
		b.Run(conn+"/tunnel", func(b *testing.B) {
			c := client(keep)
			for b.Loop() {
				get(b, c)
			}
		})
		b.Run(conn+"/terminated", func(b *testing.B) {
			hosts, _ := egress.NewAllowlist([]string{ip + ":8443"})
			release, err := f.proxy.Substitute([]egress.Substitution{{Name: "T", Placeholder: ph, Value: secret.New("the-real-value"), Hosts: hosts}})
			if err != nil {
				b.Fatal(err)
			}
			defer release()
			c := client(keep)
			for b.Loop() {
				get(b, c)
			}
		})
	}
}

// TestProxyPlaceholderEveryTunnelRead: while a placeholder is held, every tunnel is opened,
// not only those to the hosts its value may go to. HTTPS to a host the value may not go to
// (the test host on 8443, its own certificate verified by the proxy) works for a request
// without the placeholder and refuses one that carries it, plainly or encoded, in the path,
// query, a header or the body (held whole or streamed); so is plain HTTP inside a tunnel,
// an upgrade, and a compressed body there. A tunnel that is neither TLS nor HTTP is closed
// and reported, and a host whose real certificate does not verify is not reached.
func TestProxyPlaceholderEveryTunnelRead(t *testing.T) {
	f := newProxyFixture(t, egress.ModeAllowlist, egress.ProxyOptions{})
	ip := f.host.addr.String()
	for _, e := range []string{ip, ip + ":8443", ip + ":7"} {
		if err := f.proxy.AllowOnce(e); err != nil {
			t.Fatal(err)
		}
	}
	const value = "s3cr3t-value-for-port-80-only"
	ph := egress.NewPlaceholder()
	hosts, _ := egress.NewAllowlist([]string{ip + ":80"})
	release, err := f.proxy.Substitute([]egress.Substitution{{Name: "TOKEN", Placeholder: ph, Value: secret.New(value), Hosts: hosts}})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	bundle, err := f.proxy.CABundle()
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle) // the session's CA and the system's roots, not the host's
	sandboxed := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(f.proxyURL), TLSClientConfig: &tls.Config{RootCAs: pool}}}
	send := func(method, u, body string, hdr map[string]string) (int, hostReply, string) {
		t.Helper()
		req, err := http.NewRequest(method, u, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		code, reply, text, _ := getJSON(t, sandboxed, req)
		return code, reply, text
	}
	other := "https://" + ip + ":8443"

	// Without the placeholder: through, to the real host, whose certificate the proxy checked.
	if code, r, text := send("POST", other+"/clean?q=1", `{"ok":true}`, map[string]string{"X-A": "b"}); code != http.StatusOK || !r.TLS || r.Body != `{"ok":true}` {
		t.Fatalf("a clean request: %d %s", code, text)
	}
	// The value's own host still gets it.
	if code, r, text := send("GET", "http://"+ip+"/", "", map[string]string{"Authorization": "Bearer " + ph}); code != http.StatusOK ||
		r.Digest != requestDigest("/", "", "Bearer "+value, "") {
		t.Fatalf("the value's host: %d %s", code, text)
	}

	b64 := base64.StdEncoding.EncodeToString([]byte(ph))
	streamed := strings.Repeat("s", 1<<20+777) + b64 + strings.Repeat("t", 5000)
	for _, c := range []struct {
		name, method, url, body string
		hdr                     map[string]string
		want                    string
	}{
		{"header", "GET", other + "/", "", map[string]string{"Authorization": "Bearer " + ph}, "placeholder of TOKEN, whose value may not go to " + ip + ":8443"},
		{"path", "GET", other + "/p/" + ph, "", nil, "placeholder of TOKEN"},
		{"query, url-encoded", "GET", other + "/?k=" + percent(ph), "", nil, "the query holds the placeholder of TOKEN (its random part, percent-encoded)"},
		{"header, upper case", "GET", other + "/", "", map[string]string{"X-Key": strings.ToUpper(ph)}, "the header X-Key holds the placeholder of TOKEN (its random part)"},
		{"header, base64", "GET", other + "/", "", map[string]string{"Authorization": "Basic " + b64}, "(base64-encoded)"},
		{"body", "POST", other + "/", `{"key":"` + ph + `"}`, nil, "placeholder of TOKEN"},
		{"body, hex", "POST", other + "/", `{"key":"` + hex.EncodeToString([]byte(ph)) + `"}`, nil, "the body holds the placeholder of TOKEN (hex-encoded)"},
		{"body, form", "POST", other + "/", "a=1&key=" + percent(ph[:20]) + ph[20:], map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, "percent-encoded"},
		{"body streamed, base64", "PUT", other + "/long", streamed, nil, "the body holds the placeholder of TOKEN (base64-encoded)"},
		{"upgrade", "GET", other + "/ws", "", map[string]string{"Connection": "Upgrade", "Upgrade": "websocket"}, "cannot be read for placeholders"},
		{"method", strings.ToUpper(ph), other + "/", "", nil, "the method holds the placeholder of TOKEN"},
		{"header name", "GET", other + "/", "", map[string]string{"X-" + ph: "1"}, "a header's name holds the placeholder of TOKEN (its random part)"},
		{"compressed", "POST", other + "/", "\x1f\x8b...", map[string]string{"Content-Encoding": "gzip"}, "cannot be read for placeholders"},
	} {
		code, _, text := send(c.method, c.url, c.body, c.hdr)
		if code != http.StatusForbidden || !strings.Contains(text, "placeholder_refused") || !strings.Contains(text, c.want) || strings.Contains(text, value) ||
			strings.Contains(strings.ToLower(text), ph[len(egress.PlaceholderPrefix):]) {
			t.Errorf("%s: %d %.300s", c.name, code, text)
		}
	}

	// Plain HTTP inside a tunnel is read too.
	conn := openTunnel(t, f, ip+":80")
	fmt.Fprintf(conn, "GET /in-tunnel?k=%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", ph, ip)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	conn.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"query":"k=`+ph) {
		t.Errorf("plain HTTP in a tunnel to the value's host: %d %s", resp.StatusCode, body)
	}
	conn = openTunnel(t, f, ip+":8443")
	fmt.Fprintf(conn, "GET /in-tunnel?k=%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", ph, ip)
	resp, err = http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	conn.Close()
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Warden-Egress-Reason") != string(egress.ReasonPlaceholder) {
		t.Errorf("plain HTTP in a tunnel elsewhere: %s", resp.Status)
	}

	// Neither TLS nor HTTP: closed unread, and reported.
	conn = openTunnel(t, f, ip+":7")
	io.WriteString(conn, "\x00echo "+ph+"\n")
	if got, _ := io.ReadAll(conn); len(got) != 0 {
		t.Errorf("the echo tunnel answered %q", got)
	}
	conn.Close()

	// A host whose real certificate does not verify (the test host on 443, httptest's) is not
	// reached, though the sandbox trusts the proxy's certificate for it.
	if code, _, text := send("GET", "https://allowed.test/", "", nil); code != http.StatusBadGateway || !strings.Contains(text, "certificate") {
		t.Errorf("a host with a certificate that does not verify: %d %s", code, text)
	}

	var refused []string
	f.mu.Lock()
	for _, d := range f.decisions {
		if d.Reason == egress.ReasonPlaceholder {
			refused = append(refused, d.Detail)
		}
	}
	f.mu.Unlock()
	if len(refused) != 15 || !strings.Contains(refused[len(refused)-1], "neither TLS nor HTTP") {
		t.Errorf("%d refusals reported: %q", len(refused), refused)
	}
}

// percent percent-encodes every byte of s.
func percent(s string) string {
	var b strings.Builder
	for i := range len(s) {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}
