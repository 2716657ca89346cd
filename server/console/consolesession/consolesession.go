// Package consolesession is how the web console keeps its sign-in sessions in a store that
// every instance of Warden shares, so that any instance serves any session: a person signed in
// through one instance behind a load balancer is signed in on all of them, and signed out of
// all of them at once.
//
// A stored session never holds what would let someone who reads the store act as the person:
// not the cookie's session id (only its SHA-256, IDHash) and not the API token's secret (only
// the token's id, which names it and is not a credential). The console acts as the token in
// process, by its id (server.ActAs), and the API reads the token from the store on every call.
package consolesession

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"
)

// Record is a console session as a store keeps it.
type Record struct {
	// IDHash is HashID of the session's id, the value of its cookie; the id itself is never
	// stored.
	IDHash string
	// TokenID is the id of the API token the person signed in with: the console calls the API
	// as it. Its secret is never stored.
	TokenID string
	// CSRF is the session's CSRF token, which every form of the session carries.
	CSRF string
	// Name, Tenant and Role are who signed in, as the API said at sign-in: what the pages show
	// and offer (the API decides what is allowed, by the token, on every call).
	Name, Tenant, Role string
	// Created is the sign-in, Seen the last use; Ended is zero while the session has not been
	// ended (signed out, or evicted at the bound).
	Created, Seen, Ended time.Time
}

// Bounds are the limits of console sessions, measured at Now by the clock of the instance that
// asks.
type Bounds struct {
	Now time.Time
	// Idle ends a session unused this long: live while Seen is after Now-Idle.
	Idle time.Duration
	// MaxAge ends any session this long after sign-in: live while Created is after Now-MaxAge.
	MaxAge time.Duration
	// Max is how many sessions may be live in the store at once.
	Max int
}

// Live reports whether r is live within the bounds, as far as r itself tells (a store also
// requires its token to be good).
func (b Bounds) Live(r *Record) bool {
	return r.Ended.IsZero() && b.Now.Sub(r.Seen) < b.Idle && b.Now.Sub(r.Created) < b.MaxAge
}

// ErrNotFound is matched when no live session has the hash.
var ErrNotFound = errors.New("no live console session")

// Store keeps console sessions. A session is live while it has not ended, is within its
// bounds, and its token is good (neither revoked nor expired at Bounds.Now): a session whose
// token is revoked, on any instance, is no longer live anywhere. Implementations are safe for
// concurrent use, by several processes on the same storage.
type Store interface {
	// CreateConsoleSession stores a new session, first making room within b: sessions no
	// longer live are removed, and while Max or more are live the one unused longest (the
	// oldest Seen) is ended. Two creates at once never leave more than Max live.
	CreateConsoleSession(ctx context.Context, r *Record, b Bounds) error
	// UseConsoleSession returns the live session with the hash and marks it used at b.Now
	// (Seen never goes back), or ErrNotFound.
	UseConsoleSession(ctx context.Context, idHash string, b Bounds) (*Record, error)
	// ConsoleSession returns the live session with the hash without marking it used, or
	// ErrNotFound.
	ConsoleSession(ctx context.Context, idHash string, b Bounds) (*Record, error)
	// EndConsoleSession ends the session with the hash at at; one already ended or unknown is
	// no error.
	EndConsoleSession(ctx context.Context, idHash string, at time.Time) error
}

// HashID is the stored form of a session's id: the hex SHA-256 of it. The id is 256 random
// bits, so the hash cannot be turned back into it, and a store's reader cannot make a cookie.
func HashID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}
