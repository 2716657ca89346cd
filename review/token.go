package review

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/verdict"
)

// Reviewer reviews calls and signs its verdicts, and checks those signatures again where a call
// is executed. It is safe for concurrent use.
type Reviewer struct {
	key  []byte
	ttl  time.Duration
	now  func() time.Time
	macs sync.Pool // of keyed HMAC-SHA256 hashes
	memo *memo     // recent reviews of commands (memo.go)
	// dirs is what recent reviews found in directories, used where a directory is unchanged
	// (action.Dirs).
	dirs *action.Dirs
}

// Options configures a Reviewer. The zero value is usable: a random key for this process and
// five-minute tokens.
type Options struct {
	// Key signs review tokens. Instances that honour each other's tokens share it; nil makes a
	// random key, so tokens are good only in this process.
	Key []byte
	// TTL is how long a token stays good (default 5 minutes).
	TTL time.Duration
	// Now is the clock (default time.Now); tests set it.
	Now func() time.Time
}

// DefaultTTL is how long a review token stays good unless Options say otherwise.
const DefaultTTL = 5 * time.Minute

// New returns a Reviewer.
func New(opt Options) (*Reviewer, error) {
	r := &Reviewer{key: opt.Key, ttl: opt.TTL, now: opt.Now, memo: newMemo(), dirs: action.NewDirs()}
	if r.key == nil {
		r.key = make([]byte, 32)
		if _, err := rand.Read(r.key); err != nil {
			return nil, fmt.Errorf("review key: %w", err)
		}
	}
	if len(r.key) < 16 {
		return nil, errors.New("review key: at least 16 bytes")
	}
	if r.ttl <= 0 {
		r.ttl = DefaultTTL
	}
	if r.now == nil {
		r.now = time.Now
	}
	key := r.key
	r.macs.New = func() any { return hmac.New(sha256.New, key) }
	return r, nil
}

// Review judges a call and, unless it is denied, signs the verdict with a token bound to the
// session, the call's digest, the policy and hard-block revisions, and an expiry.
func (r *Reviewer) Review(s *Session, tool string, args map[string]any) Verdict {
	v := judge(s, tool, args, r.memo, r.dirs)
	if v.Decision != verdict.Deny && v.Action != nil {
		v.Token = r.sign(claims{
			Session:    s.ID,
			Digest:     v.Action.Digest,
			Policy:     s.Surface.Policy().Revision,
			Boundaries: boundaryRevision(s),
			Decision:   v.Decision.String(),
			Expires:    r.now().Add(r.ttl).Unix(),
		})
	}
	return v
}

// decisionApproved marks a token for an ask verdict that a person has since allowed.
const decisionApproved = "approved"

// Approved turns the token of an ask verdict into one for the same call that a person allowed:
// the caller (the gate) has the person's answer. The ask token must be good for exactly this
// call, session, policy and rules, and not expired; the new token expires like a fresh one.
// Execute accepts it, and still denies if the second review denies.
func (r *Reviewer) Approved(s *Session, token, tool string, args map[string]any) (string, error) {
	c, err := r.verify(s, token, tool, args)
	if err != nil {
		return "", err
	}
	if c.Decision != verdict.Ask.String() {
		return "", fmt.Errorf("%w: only an ask verdict can be approved, and this one decided %s", ErrToken, c.Decision)
	}
	c.Decision = decisionApproved
	c.Expires = r.now().Add(r.ttl).Unix()
	return r.sign(c), nil
}

// ErrToken is matched by every error about a review token that is not good for a call.
var ErrToken = errors.New("review token refused")

// Execute runs a call that was reviewed: it checks that token is an allowing review of exactly
// this call, in this session, under the policy and hard blocks now in force and not expired;
// then it reviews the call again at the execution boundary (paths are resolved afresh, so a
// link swapped in since the review is seen) and runs it only if that review allows it too.
// The verdict returned is the second review's, or a denial saying why the token was refused.
func (r *Reviewer) Execute(s *Session, token, tool string, args map[string]any, run func(*action.Action) error) (Verdict, error) {
	c, err := r.verify(s, token, tool, args)
	if err == nil && c.Decision != verdict.Allow.String() && c.Decision != decisionApproved {
		err = fmt.Errorf("%w: the review decided %s, not allow", ErrToken, c.Decision)
	}
	if err != nil {
		var v Verdict
		v.block(Blocker{Code: CodeTokenInvalid, Detail: err.Error(), Decision: verdict.Deny})
		return v, err
	}
	v := judge(s, tool, args, r.memo, r.dirs)
	switch {
	case v.Decision == verdict.Allow:
	case v.Decision == verdict.Ask && c.Decision == decisionApproved:
		// A person allowed this exact call; the second review still asks for the same reasons.
	default:
		return v, fmt.Errorf("the call no longer passes review at execution: %s", v.Summary())
	}
	return v, run(v.Action)
}

// claims are what a review token binds.
type claims struct {
	Session    string
	Digest     string
	Policy     string
	Boundaries string
	Decision   string
	Expires    int64
}

// A token is "wrv1", then the session id (base64url), the call's digest, the policy and
// hard-block revisions, the decision and the expiry (Unix seconds), each after a ".", then an
// HMAC-SHA256 of all that, base64url. Digests and revisions are hex, so "." never occurs in a
// field.
const tokenPrefix = "wrv1"

var b64 = base64.RawURLEncoding

func (r *Reviewer) mac(dst, payload []byte) []byte {
	m := r.macs.Get().(hash.Hash)
	m.Reset()
	m.Write(payload)
	dst = m.Sum(dst)
	r.macs.Put(m)
	return dst
}

func (r *Reviewer) sign(c claims) string {
	var stack [512]byte
	b := append(stack[:0], tokenPrefix...)
	b = append(b, '.')
	b = b64.AppendEncode(b, []byte(c.Session))
	for _, f := range []string{c.Digest, c.Policy, c.Boundaries, c.Decision} {
		b = append(b, '.')
		b = append(b, f...)
	}
	b = append(b, '.')
	b = strconv.AppendInt(b, c.Expires, 10)
	var sum [sha256.Size]byte
	mac := r.mac(sum[:0], b)
	b = append(b, '.')
	b = b64.AppendEncode(b, mac)
	return string(b)
}

// verify checks a token's signature and binding to a call; every failure names what did not
// match. It does not look at the decision.
func (r *Reviewer) verify(s *Session, token, tool string, args map[string]any) (claims, error) {
	c, err := r.parse(token)
	if err != nil {
		return c, err
	}
	switch {
	case c.Session != s.ID:
		return c, fmt.Errorf("%w: it was issued to another session", ErrToken)
	case c.Digest != action.Digest(tool, args):
		return c, fmt.Errorf("%w: it reviewed a different call (tool or arguments differ)", ErrToken)
	case c.Policy != s.Surface.Policy().Revision:
		return c, fmt.Errorf("%w: it was issued under policy revision %s, and %s is in force", ErrToken, c.Policy, s.Surface.Policy().Revision)
	case c.Boundaries != boundaryRevision(s):
		return c, fmt.Errorf("%w: the hard-block rules changed since the review", ErrToken)
	case r.now().Unix() >= c.Expires:
		return c, fmt.Errorf("%w: it expired at %s", ErrToken, time.Unix(c.Expires, 0).UTC().Format(time.RFC3339))
	}
	return c, nil
}

// parse checks a token's form and signature and returns its claims.
func (r *Reviewer) parse(token string) (claims, error) {
	i := strings.LastIndexByte(token, '.')
	if !strings.HasPrefix(token, tokenPrefix+".") || i < 0 {
		return claims{}, fmt.Errorf("%w: not a review token", ErrToken)
	}
	payload, mac64 := token[:i], token[i+1:]
	mac, err := b64.DecodeString(mac64)
	var sum [sha256.Size]byte
	if err != nil || !hmac.Equal(mac, r.mac(sum[:0], []byte(payload))) {
		return claims{}, fmt.Errorf("%w: the signature does not match (fabricated, altered, or signed with another key)", ErrToken)
	}
	fields := strings.Split(payload, ".")
	if len(fields) != 7 {
		return claims{}, fmt.Errorf("%w: malformed", ErrToken)
	}
	session, err1 := b64.DecodeString(fields[1])
	expires, err2 := strconv.ParseInt(fields[6], 10, 64)
	if err1 != nil || err2 != nil {
		return claims{}, fmt.Errorf("%w: malformed", ErrToken)
	}
	return claims{Session: string(session), Digest: fields[2], Policy: fields[3], Boundaries: fields[4], Decision: fields[5], Expires: expires}, nil
}

func boundaryRevision(s *Session) string {
	if s.Boundaries == nil {
		return ""
	}
	return s.Boundaries.Revision()
}
