package egress_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/wardenhq/warden/egress"
)

// TestCA: the session's CA issues a certificate valid for its host alone, for the CA's short
// lifetime, with a P-256 key, and is not valid before or after it.
func TestCA(t *testing.T) {
	now := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	ca, err := egress.NewCA(now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(ca.PEM())
	root, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !root.IsCA || !root.MaxPathLenZero || root.NotAfter != now.Add(time.Hour) {
		t.Errorf("CA %+v", root)
	}
	if k, ok := root.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
		t.Errorf("CA key %T", root.PublicKey)
	}
	pool := x509.NewCertPool()
	pool.AddCert(root)
	for _, tt := range []struct{ host, other string }{{"api.example.com", "example.com"}, {"198.51.100.7", "198.51.100.8"}} {
		h, err := egress.ParseHost(tt.host)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ca.Leaf(h)
		if err != nil {
			t.Fatal(err)
		}
		if again, _ := ca.Leaf(h); again != c {
			t.Error("a host's certificate was made twice")
		}
		leaf := c.Leaf
		if leaf.NotAfter.After(root.NotAfter) || leaf.IsCA {
			t.Errorf("%s: %v..%v, CA %v", tt.host, leaf.NotBefore, leaf.NotAfter, leaf.IsCA)
		}
		verify := func(name string, at time.Time) error {
			_, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool, CurrentTime: at})
			return err
		}
		if err := verify(tt.host, now.Add(30*time.Minute)); err != nil {
			t.Errorf("%s: %v", tt.host, err)
		}
		if err := verify(tt.other, now.Add(30*time.Minute)); err == nil {
			t.Errorf("the certificate for %s is valid for %s", tt.host, tt.other)
		}
		if err := verify(tt.host, now.Add(61*time.Minute)); err == nil {
			t.Errorf("%s: valid after the CA's lifetime", tt.host)
		}
		if err := verify(tt.host, now.Add(-2*time.Minute)); err == nil {
			t.Errorf("%s: valid before the CA was made", tt.host)
		}
	}
	if ca.Expired(now.Add(59*time.Minute)) || !ca.Expired(now.Add(time.Hour)) {
		t.Error("Expired")
	}
	if _, err := egress.NewCA(now, 0); err == nil {
		t.Error("a CA without a lifetime")
	}
}

// TestProxyCARenewed: a proxy makes its CA at first use and a new one when it has run out.
func TestProxyCARenewed(t *testing.T) {
	now := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	p, err := egress.NewProxy(nil, egress.ProxyOptions{CALifetime: time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	first, err := p.CABundle()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := p.CABundle(); string(again) != string(first) {
		t.Error("the CA changed within its lifetime")
	}
	now = now.Add(time.Hour)
	if later, _ := p.CABundle(); string(later) == string(first) {
		t.Error("the CA was kept past its lifetime")
	}
}
