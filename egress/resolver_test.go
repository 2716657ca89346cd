package egress_test

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
)

// fakeResolver answers from a table and counts lookups. A name with several answers gives
// them in turn (the last one repeats): a DNS server that rebinds.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	calls   map[string]int
}

func newResolver(m map[string][]string) *fakeResolver {
	r := &fakeResolver{answers: map[string][][]netip.Addr{}, calls: map[string]int{}}
	for name, addrs := range m {
		r.add(name, addrs...)
	}
	return r
}

// add appends one answer for name; an answer of no addresses is a name with no records.
func (r *fakeResolver) add(name string, addrs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var as []netip.Addr
	for _, a := range addrs {
		as = append(as, netip.MustParseAddr(a))
	}
	r.answers[name] = append(r.answers[name], as)
}

func (r *fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if network != "ip" {
		return nil, fmt.Errorf("fake resolver: network %q", network)
	}
	answers, ok := r.answers[host]
	if !ok {
		return nil, fmt.Errorf("lookup %s: no such host", host)
	}
	n := r.calls[host]
	r.calls[host]++
	return answers[min(n, len(answers)-1)], nil
}

func (r *fakeResolver) lookups(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[host]
}
