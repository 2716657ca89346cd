//go:build linux

package egress

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkHostAddrs measures what knowing this host's addresses costs a check: current (what
// every check pays: one non-blocking read of the change subscription, under a mutex), the
// same from every P at once, and the dump of the addresses that a change costs (and that a
// check would cost without the subscription), with net.InterfaceAddrs for comparison.
func BenchmarkHostAddrs(b *testing.B) {
	o := ownAddrsHere()
	if _, err := o.current(); err != nil {
		b.Skip(err)
	}
	b.Run("current", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := o.current(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("current/parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := o.current(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	// The floor: the cheapest system call there is, for scale.
	b.Run("getppid", func(b *testing.B) {
		for b.Loop() {
			unix.Getppid()
		}
	})
	b.Run("dump", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			o.mu.Lock()
			_, err := o.load()
			o.mu.Unlock()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("net.InterfaceAddrs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := net.InterfaceAddrs(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
