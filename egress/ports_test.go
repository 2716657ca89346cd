package egress_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/wardenhq/warden/egress"
)

// TestProxyPorts: a tunnel and a forwarded request go to 80 and 443 only, unless an entry
// names another port; the refusal says which port and how to allow it. (Before ports were
// checked, CONNECT allowed.test:8443 was allowed and dialled.)
func TestProxyPorts(t *testing.T) {
	f := newProxyFixture(t, egress.ModeAllowlist, egress.ProxyOptions{})
	refused := func(t *testing.T, raw, reason, mention string) {
		t.Helper()
		resp, body := rawRequest(t, f, raw)
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Warden-Egress-Reason") != reason || !strings.Contains(body, mention) {
			t.Errorf("%q: %s %q %q; want 403 %s mentioning %q", raw, resp.Status, resp.Header.Get("X-Warden-Egress-Reason"), body, reason, mention)
		}
	}
	connect := func(target string) int {
		conn := dialProxy(t, f)
		fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("CONNECT %s: %v", target, err)
		}
		conn.Close()
		return resp.StatusCode
	}

	refused(t, "CONNECT allowed.test:8443 HTTP/1.1\r\nHost: allowed.test:8443\r\n\r\n", "port_not_allowed", "list allowed.test:8443")
	refused(t, "CONNECT www.allowed.test:22 HTTP/1.1\r\nHost: www.allowed.test:22\r\n\r\n", "port_not_allowed", "port 22")
	refused(t, "GET http://allowed.test:8080/ HTTP/1.1\r\nHost: allowed.test:8080\r\n\r\n", "port_not_allowed", "port 8080")
	if s := connect("allowed.test:7"); s != http.StatusOK {
		t.Errorf("CONNECT allowed.test:7 (listed with its port): %d", s)
	}
	if s := connect("allowed.test:443"); s != http.StatusOK {
		t.Errorf("CONNECT allowed.test:443: %d", s)
	}

	// An entry added at run time with a port opens that port only.
	if s := connect("other.test:7"); s != http.StatusForbidden {
		t.Errorf("CONNECT other.test:7 before AllowOnce: %d", s)
	}
	if err := f.proxy.AllowOnce("other.test:7"); err != nil {
		t.Fatal(err)
	}
	if s := connect("other.test:7"); s != http.StatusOK {
		t.Errorf("CONNECT other.test:7 after AllowOnce(other.test:7): %d", s)
	}
	refused(t, "CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n", "port_not_allowed", "other.test:7")

	// net_fetch's path.
	_, err := f.proxy.DialContext(context.Background(), "tcp", "allowed.test:8443")
	var re *egress.RefusedError
	if !errors.As(err, &re) || re.Decision.Reason != egress.ReasonPortNotAllowed || re.Decision.Port != 8443 {
		t.Errorf("DialContext(allowed.test:8443): %v; want a port_not_allowed refusal", err)
	}
}

// TestProxyPortsOpenMode: open mode reaches every public host on 80 and 443, and a listed host
// on the port its entry names.
func TestProxyPortsOpenMode(t *testing.T) {
	f := newProxyFixture(t, egress.ModeOpen, egress.ProxyOptions{})
	d := f.proxy.Check(context.Background(), "8.8.8.8:22")
	if d.Allow || d.Reason != egress.ReasonPortNotAllowed {
		t.Errorf("open mode, 8.8.8.8:22: %s %s (%s); want port_not_allowed", d.Verdict(), d.Reason, d.Detail)
	}
	if d := f.proxy.Check(context.Background(), "8.8.8.8:443"); !d.Allow {
		t.Errorf("open mode, 8.8.8.8:443: %s %s (%s)", d.Verdict(), d.Reason, d.Detail)
	}
	resp, body := rawRequest(t, f, "CONNECT 8.8.8.8:25 HTTP/1.1\r\nHost: 8.8.8.8:25\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Warden-Egress-Reason") != "port_not_allowed" {
		t.Errorf("open mode, CONNECT 8.8.8.8:25: %s %s", resp.Status, body)
	}
}
