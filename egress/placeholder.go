package egress

import (
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wardenhq/warden/secret"
)

// Placeholders stand for protected values inside the sandbox. A command bound to a protected
// value is given a placeholder, PlaceholderPrefix and 32 characters of lower-case base32
// (160 random bits), fresh for each call; the session's proxy writes the value in its place
// only in requests to the hosts the value may go to (Substitution.Hosts). The value never
// enters the sandbox, so nothing the command prints can show it.
const (
	// PlaceholderPrefix starts every placeholder.
	PlaceholderPrefix = "warden-ph-"
	// PlaceholderLen is the length of a placeholder.
	PlaceholderLen = len(PlaceholderPrefix) + placeholderIDLen

	placeholderIDLen = 32
)

var placeholderEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewPlaceholder returns a fresh placeholder.
func NewPlaceholder() string {
	var b [placeholderIDLen * 5 / 8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return PlaceholderPrefix + placeholderEncoding.EncodeToString(b[:])
}

// isPlaceholderID reports whether b is placeholderIDLen characters of the placeholder alphabet.
func isPlaceholderID(b []byte) bool {
	if len(b) != placeholderIDLen {
		return false
	}
	for _, c := range b {
		if !('a' <= c && c <= 'z' || '2' <= c && c <= '7') {
			return false
		}
	}
	return true
}

// A Substitution says that Placeholder stands for Value in requests to Hosts. Value prints
// and logs as secret.Placeholder.
type Substitution struct {
	// Name says what the value is to a person reading a refusal: the variable it was bound to.
	Name string
	// Placeholder is what the command was given (NewPlaceholder).
	Placeholder string
	// Value is written in the placeholder's place.
	Value secret.Secret
	// Hosts are where Value may go; nil or empty: nowhere.
	Hosts *Allowlist
}

// ErrPlaceholder is wrapped by the error of a request that holds a placeholder where its value
// may not go, or that cannot be read for placeholders.
var ErrPlaceholder = errors.New("placeholder refused")

// subTable is the placeholders a proxy knows, replaced whole, never changed.
type subTable struct {
	byID map[string]*Substitution // by the placeholder without its prefix
}

// Substitute has the proxy put each substitution's value in place of its placeholder, in the
// requests to its hosts, until release is called (once the command that holds the
// placeholders has ended). While any are held, every CONNECT tunnel is opened (TLS
// terminated with the proxy's CA, which the command must trust: CABundle) and read, and a
// request that holds a placeholder the proxy does not know, or one whose value may not go to
// the request's host, plainly or in another form the tripwire knows, is refused
// (ReasonPlaceholder); so is a request that cannot be read for them (a body with a
// Content-Encoding, a protocol upgrade, a tunnel that is neither TLS nor HTTP) to a host some
// held value may not go to. A placeholder already held is an error and nothing changes.
func (p *Proxy) Substitute(subs []Substitution) (release func(), err error) {
	for _, s := range subs {
		id, ok := strings.CutPrefix(s.Placeholder, PlaceholderPrefix)
		if !ok || !isPlaceholderID([]byte(id)) {
			return nil, fmt.Errorf("egress: %s: %q is not a placeholder", s.Name, s.Placeholder)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.subs.Load()
	next := &subTable{byID: map[string]*Substitution{}}
	if old != nil {
		for k, v := range old.byID {
			next.byID[k] = v
		}
	}
	var ids []string
	for i := range subs {
		s := subs[i]
		id := s.Placeholder[len(PlaceholderPrefix):]
		if _, dup := next.byID[id]; dup {
			return nil, fmt.Errorf("egress: %s: the placeholder is held already", s.Name)
		}
		next.byID[id] = &s
		ids = append(ids, id)
	}
	p.subs.Store(next)
	var once bool
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if once {
			return
		}
		once = true
		cur := p.subs.Load()
		left := &subTable{byID: map[string]*Substitution{}}
		for k, v := range cur.byID {
			if !slices.Contains(ids, k) {
				left.byID[k] = v
			}
		}
		if len(left.byID) == 0 {
			left = nil
		}
		p.subs.Store(left)
	}, nil
}

// Substituting reports whether any placeholder is held (Substitute) right now.
func (p *Proxy) Substituting() bool { return p.subs.Load() != nil }
