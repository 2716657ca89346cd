package egress_test

import (
	"context"
	"testing"

	"github.com/wardenhq/warden/egress"
)

// refusedSpellings are spellings of loopback, private, link-local, metadata and other
// never-allowed addresses, in URL and host:port forms, and names that resolve to them. Every
// one must be refused as private_address in every mode, even when the allowlist names every
// test name. The proxy and CLI tests reuse the table.
var refusedSpellings = []string{
	// Loopback, spelled every way.
	"http://127.0.0.1/",
	"http://127.1/",
	"http://127.0.1/",
	"http://0x7f.1/",
	"http://0x7f.0x0.0x0.0x1/",
	"http://2130706433/",
	"http://017700000001/",
	"http://0x7f000001/",
	"http://0177.0.0.1/",
	"http://127.000.000.001/",
	"http://127.0.0.1.:80/",
	"http://127.255.255.254/",
	"127.0.0.1:80",
	"127.1:8080",
	"0x7f.0.0.1:443",
	"１２７．０．０．１:80",
	"127。0。0。1",
	"http://[::1]/",
	"[::1]:80",
	"::1",
	"http://[0:0:0:0:0:0:0:1]:8080/",
	"http://[::ffff:127.0.0.1]/",
	"[::ffff:7f00:1]:443",
	"http://[::127.0.0.1]/",
	"http://[::ffff:0:7f00:1]/",
	"http://[64:ff9b::7f00:1]/",
	"http://localhost/",
	"localhost:8080",
	"http://LOCALHOST./",
	"http://api.localhost/",
	"http://allowed.test@127.0.0.1/",
	// Cloud metadata.
	"http://169.254.169.254/latest/meta-data/",
	"169.254.169.254:80",
	"http://169.254.43518/",
	"http://0xa9fea9fe/",
	"http://2852039166/",
	"http://0251.0376.0251.0376/",
	"http://0xa9.0xfe.0xa9.0xfe/",
	"http://[::ffff:169.254.169.254]/",
	"http://[::ffff:a9fe:a9fe]/",
	"http://[64:ff9b::a9fe:a9fe]/",
	"http://169.254.170.2/v2/credentials",
	"http://metadata.google.internal/computeMetadata/v1/",
	"http://Metadata.Google.Internal./",
	"http://100.100.100.200/latest/meta-data/",
	"http://168.63.129.16/machine?comp=goalstate",
	"[fd00:ec2::254]:80",
	"http://[fd00:ec2::254]/latest/meta-data/",
	// Private, CGNAT, link-local.
	"http://10.0.0.1/",
	"10.1:22",
	"http://012.0.0.1/",
	"http://172.16.0.1/",
	"http://172.31.255.255/",
	"http://192.168.1.1/",
	"http://0xc0a80101/",
	"http://192.168.257/",
	"http://100.64.0.1/",
	"http://100.127.255.255/",
	"http://[fc00::1]/",
	"http://[fd12:3456::1]:8080/",
	"http://[fe80::1%25eth0]/",
	"[fe80::1%eth0]:80",
	"http://[fec0::1]/",
	// Unspecified, multicast, broadcast, reserved.
	"http://0.0.0.0/",
	"http://0/",
	"0:80",
	"http://[::]/",
	"http://224.0.0.1/",
	"http://239.255.255.250:1900/",
	"http://255.255.255.255/",
	"http://240.0.0.1/",
	"http://[ff02::1]/",
	"http://198.18.0.1/",
	"[2002:7f00:1::1]:80",
	"http://[2001::1]/",
	// Names that resolve there, however the answer is written.
	"http://metadata.rebind.test/",
	"http://mixed.rebind.test/",
	"mapped.rebind.test:443",
	"http://nat64.rebind.test/",
	"http://loopback6.rebind.test/",
	"http://zoned.rebind.test/",
}

// rebindResolver maps the test names of refusedSpellings to never-allowed answers.
func rebindResolver() *fakeResolver {
	return newResolver(map[string][]string{
		"metadata.rebind.test":  {"169.254.169.254"},
		"mixed.rebind.test":     {"198.51.100.1", "203.0.113.9", "10.0.0.1"},
		"mapped.rebind.test":    {"::ffff:127.0.0.1"},
		"nat64.rebind.test":     {"64:ff9b::a9fe:a9fe"},
		"loopback6.rebind.test": {"::1"},
		"zoned.rebind.test":     {"fe80::1%eth0"},
	})
}

func TestRefusedSpellings(t *testing.T) {
	if len(refusedSpellings) < 40 {
		t.Fatalf("the table has %d spellings; the issue asks for at least 40", len(refusedSpellings))
	}
	// A list that names every test host: listing never opens a never-allowed address.
	list, err := egress.ParseAllowlist("*.rebind.test, allowed.test, 198.51.100.0/24, 203.0.113.9")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []egress.Mode{egress.ModeAllowlist, egress.ModeOpen} {
		c := egress.New(egress.Options{Mode: mode, Allowlist: list, Resolver: rebindResolver()})
		for _, s := range refusedSpellings {
			d := c.Check(context.Background(), s)
			if d.Allow || d.Reason != egress.ReasonPrivate || len(d.Addrs) != 0 {
				t.Errorf("%s mode: Check(%q) = %s %s (%s) %v; want deny private_address with no address",
					mode, s, d.Verdict(), d.Reason, d.Detail, d.Addrs)
			}
		}
	}
}
