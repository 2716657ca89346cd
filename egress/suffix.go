package egress

import (
	"fmt"
	"strings"

	"golang.org/x/net/publicsuffix"
)

//go:generate go run gen_suffixes.go

// suffixBelow is the shortest public suffix below a domain that is not one itself.
type suffixBelow struct {
	suffix string // s3.amazonaws.com, or *.kawasaki.jp for a wildcard rule
	icann  bool
}

func section(icann bool) string {
	if icann {
		return "ICANN section"
	}
	return "private section"
}

// publicSuffix returns the section of the public suffix list that makes the normalised name n
// a public suffix, if one does: a name under which anyone can register names, in the ICANN
// section (com, co.uk) or the private one (github.io, workers.dev). A single label the list
// does not name (intranet, test) is not one: publicsuffix answers it by its default rule, which
// says nothing about who owns it.
func publicSuffix(n string) (string, bool) {
	ps, icann := publicsuffix.PublicSuffix(n)
	if ps != n || !icann && !strings.Contains(n, ".") {
		return "", false
	}
	return section(icann), true
}

// suffixHost is why the host entry n may not be listed, if it may not: n is a public suffix.
// The name itself is the suffix operator's, but it is the front door of a shared service more
// often than a site (s3.amazonaws.com serves every bucket by path), and whoever lists it
// almost always means a name below it.
func suffixHost(n string) error {
	if sec, ok := publicSuffix(n); ok {
		return fmt.Errorf("%w: %s is a public suffix (%s): anyone can register names under it, and the name itself is the registry's; list the name you mean below it", ErrTooBroad, n, sec)
	}
	return nil
}

// suffixWildcard is why *.d may not be listed, if it may not: d is a public suffix, or there is
// one below it, so *.d would allow names that anyone can register (*.github.io,
// *.amazonaws.com, below which s3.amazonaws.com is one).
func suffixWildcard(d string) error {
	if sec, ok := publicSuffix(d); ok {
		return fmt.Errorf("%w: %s is a public suffix (%s): anyone can register names under it", ErrTooBroad, d, sec)
	}
	b, ok := suffixesBelow[d]
	if !ok {
		return nil
	}
	if rest, wild := strings.CutPrefix(b.suffix, "*."); wild && rest == d {
		return fmt.Errorf("%w: every name directly below %s is a public suffix (%s: %s): anyone can register names under them", ErrTooBroad, d, section(b.icann), b.suffix)
	}
	return fmt.Errorf("%w: below %s lies the public suffix %s (%s): anyone can register names under it, and *.%s would allow them", ErrTooBroad, d, b.suffix, section(b.icann), d)
}
