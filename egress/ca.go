package egress

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"sync"
	"time"
)

// DefaultCALifetime is how long a session's certificate authority (CA) is valid when
// ProxyOptions.CALifetime is zero.
const DefaultCALifetime = 24 * time.Hour

// A CA is a session's certificate authority: the proxy terminates TLS with certificates it
// issues, only for hosts a placeholder's value may go to, and only the session's sandboxed
// commands are told to trust it. Its key (ECDSA P-256) is made in memory and never written
// anywhere; it is valid for its lifetime only, and so is every certificate it issues. Its
// methods are safe for concurrent use.
type CA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	leafKey *ecdsa.PrivateKey // one key for the CA's certificates: they live as long as it
	pem     []byte

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// NewCA makes a CA valid from now for lifetime.
func NewCA(now time.Time, lifetime time.Duration) (*CA, error) {
	if lifetime <= 0 {
		return nil, fmt.Errorf("egress: a CA's lifetime must be positive, not %s", lifetime)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("egress: CA key: %w", err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("egress: certificate key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "Warden session CA " + serial.Text(32)[:12], Organization: []string{"Warden"}},
		// A minute back: a clock read a moment apart in the sandbox must not find it early.
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(lifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("egress: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("egress: CA certificate: %w", err)
	}
	return &CA{cert: cert, key: key, leafKey: leafKey, leaves: map[string]*tls.Certificate{},
		pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("egress: serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// Certificate returns the CA's own certificate.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// PEM returns the CA's certificate, PEM-encoded.
func (ca *CA) PEM() []byte { return bytes.Clone(ca.pem) }

// Expired reports whether the CA's lifetime is over at now.
func (ca *CA) Expired(now time.Time) bool { return !now.Before(ca.cert.NotAfter) }

// Leaf returns a certificate for host h (a name or an address) and nothing else, valid as
// long as the CA. It is made once and kept.
func (ca *CA) Leaf(h Host) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c, ok := ca.leaves[h.String()]; ok {
		return c, nil
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: h.String()},
		NotBefore:    ca.cert.NotBefore,
		NotAfter:     ca.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if h.IsAddr() {
		tmpl.IPAddresses = []net.IP{net.IP(h.Addr().AsSlice())}
	} else {
		tmpl.DNSNames = []string{h.Name()}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &ca.leafKey.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("egress: certificate for %s: %w", h, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("egress: certificate for %s: %w", h, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: ca.leafKey, Leaf: leaf}
	ca.leaves[h.String()] = c
	return c, nil
}

// systemRootFiles are where Linux distributions keep their bundle of trusted roots (the list
// crypto/x509 reads too).
var systemRootFiles = []string{
	"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Gentoo, Arch
	"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora, RHEL 6
	"/etc/ssl/ca-bundle.pem",                            // openSUSE
	"/etc/pki/tls/cacert.pem",                           // OpenELEC
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS, RHEL 7
	"/etc/ssl/cert.pem",                                 // Alpine
}

var systemRoots = sync.OnceValue(func() []byte {
	files := systemRootFiles
	if f := os.Getenv("SSL_CERT_FILE"); f != "" {
		files = append([]string{f}, files...)
	}
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && len(b) > 0 {
			if !bytes.HasSuffix(b, []byte("\n")) {
				b = append(b, '\n')
			}
			return b
		}
	}
	return nil
})

// Bundle returns what a sandboxed command should trust: this host's roots (its system
// bundle, where one is found) and the CA, PEM-encoded, so that hosts whose TLS the proxy does
// not terminate still verify.
func (ca *CA) Bundle() []byte {
	roots := systemRoots()
	out := make([]byte, 0, len(roots)+len(ca.pem))
	return append(append(out, roots...), ca.pem...)
}
