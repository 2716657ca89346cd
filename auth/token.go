// Package auth is who may use Warden over HTTP (H1): bearer tokens, stored only as hashes,
// each with a role, and for agent tokens the tenant, session role and profile they bind.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"time"
)

// Roles a token can have.
const (
	RoleAdmin    = "admin"    // everything, every tenant
	RoleOperator = "operator" // a tenant's configuration
	RoleApprover = "approver" // a tenant's approval cards
	RoleViewer   = "viewer"   // a tenant's records, read only
	RoleAgent    = "agent"    // an MCP session: tenant, session role and profile bound
)

// Roles lists every token role.
var Roles = []string{RoleAdmin, RoleOperator, RoleApprover, RoleViewer, RoleAgent}

// A returns a role with its indefinite article, for messages: "an admin", "a viewer".
func A(role string) string {
	if role != "" && strings.ContainsRune("aeiou", rune(role[0])) {
		return "an " + role
	}
	return "a " + role
}

// Token is a stored bearer token. The secret itself is never stored: only its hash.
type Token struct {
	ID   string
	Hash string
	Role string
	// Tenant is the tenant the token is for ("" for admin tokens).
	Tenant string
	// SessionRole and Profile are what an agent token's MCP session runs as.
	SessionRole string
	Profile     string
	// Model and Harness, when set, are the model and the harness an agent token's MCP sessions
	// run on: a client that states another at initialize is refused.
	Model   string
	Harness string
	Name    string
	Created time.Time
	// Revoked is zero while the token is good.
	Revoked time.Time
	// Expires is when the token stops being good; zero never.
	Expires time.Time
}

// Expired says whether the token is past its expiry at now: an expired token is refused as a
// revoked one is.
func (t *Token) Expired(now time.Time) bool {
	return !t.Expires.IsZero() && !now.Before(t.Expires)
}

// ErrNotFound is matched when no good token has the hash.
var ErrNotFound = errors.New("token not found")

// Store keeps tokens. Implementations are safe for concurrent use.
type Store interface {
	CreateToken(ctx context.Context, t *Token) error
	// TokenByHash returns the good token with the hash (neither revoked nor expired), or
	// ErrNotFound.
	TokenByHash(ctx context.Context, hash string) (*Token, error)
	// Tokens lists every token, revoked ones included.
	Tokens(ctx context.Context) ([]*Token, error)
	RevokeToken(ctx context.Context, id string, at time.Time) error
}

// secretPrefix marks Warden's tokens, so that a leaked one is recognisable.
const secretPrefix = "wdn_"

// NewSecret returns a new random token secret and its hash.
func NewSecret() (secret, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	secret = secretPrefix + base64.RawURLEncoding.EncodeToString(b)
	return secret, Hash(secret), nil
}

// Hash is the stored form of a secret.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Bearer extracts the secret from an Authorization header value ("Bearer wdn_...").
func Bearer(header string) (string, bool) {
	scheme, secret, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(secret) == "" {
		return "", false
	}
	return strings.TrimSpace(secret), true
}

// NewID returns a new random token ID ("tok_" and 16 hex digits): an ID names a token in
// lists and revocations, and unlike the secret it is not a credential.
func NewID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return "tok_" + hex.EncodeToString(b[:])
}

// Validator checks what a new token binds against the policy in force: the tenant, and for
// an agent token the session role and profile. Nil when they fit.
type Validator func(t *Token) error

// RevocationWatcher is implemented by stores that say when tokens are revoked, whichever
// process or instance revoked them: WatchRevocations returns a channel closed when a token
// may have been revoked after the call. When ctx ends the channel stays open.
type RevocationWatcher interface {
	WatchRevocations(ctx context.Context) (<-chan struct{}, error)
}
