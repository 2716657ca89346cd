package egress

import (
	"net/netip"
	"runtime"
	"sync"
	"weak"
)

// nsKey identifies a network namespace (its nsfs inode); the zero key stands for "this
// process's" where namespaces cannot be told apart.
type nsKey struct{ dev, ino uint64 }

// owned holds one ownAddrs per network namespace, shared by every Checker made there, so that
// making a Checker costs no socket once one exists: a process has one, and a test that
// makes a namespace has one more. An entry goes when the last Checker using it does.
var owned struct {
	mu sync.Mutex
	m  map[nsKey]weak.Pointer[ownAddrs]
}

// ownAddrsHere returns the ownAddrs of the calling thread's network namespace, making it if
// there is none. (In Warden every thread is in the process's namespace; only a test that moves
// a locked thread into a namespace of its own sees another.)
func ownAddrsHere() *ownAddrs {
	key, err := netnsKey()
	if err != nil {
		key = nsKey{}
	}
	owned.mu.Lock()
	defer owned.mu.Unlock()
	if o := owned.m[key].Value(); o != nil {
		return o
	}
	o, fds := openOwnAddrs()
	if owned.m == nil {
		owned.m = map[nsKey]weak.Pointer[ownAddrs]{}
	}
	owned.m[key] = weak.Make(o)
	runtime.AddCleanup(o, func(fds *ownFDs) {
		fds.close()
		owned.mu.Lock()
		defer owned.mu.Unlock()
		if owned.m[key].Value() == nil {
			delete(owned.m, key)
		}
	}, fds)
	return o
}

// isOwn reports whether a (canonical) is in set.
func isOwn(set map[netip.Addr]struct{}, a netip.Addr) bool {
	_, ok := set[a]
	return ok
}
