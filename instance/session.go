package instance

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// A Session is what a store keeps of an MCP session so that any instance sharing the store can
// serve it: who opened it, on what route, what the client said at initialize. Everything else
// a session has (its surface, its tools, its review and gate sessions) is computed again from
// the policy in force and this record; its protected values are never stored.
type Session struct {
	// ID is the MCP session id (Mcp-Session-Id).
	ID string
	// Warden is Warden's own id of the session: its run ("run-"+Warden), its cards and its
	// audit events name it.
	Warden string
	// Token is the id of the token that opened the session; only it may use the session.
	Token  string
	Tenant string
	// Principal is who the session acts for; Profile the profile it runs ("" for none).
	Principal, Profile string
	// Model and Harness are the session's route (bound in the token or stated at initialize).
	Model, Harness string
	// Protocol is the protocol version negotiated at initialize.
	Protocol string
	// Init is the client's initialize params, as it sent them.
	Init json.RawMessage
	// Initialized: the client has sent notifications/initialized.
	Initialized bool
	// Run is the session's run id ("" for a session that runs no profile).
	Run string
	// Instance is the instance that opened the session.
	Instance string
	// Opened is when the session was opened; Seen when a request of it was last seen by
	// any instance (written at most once a minute per instance); Ended when it ended (zero
	// while it is live), and Why, why.
	Opened, Seen, Ended time.Time
	Why                 string
}

// A Child is a subagent's token, made by a session's spawn_subagent. It lives as long as its
// parent session: a store returns it only while that session is live.
type Child struct {
	// Hash is the hash of the token's secret (the secret is never stored).
	Hash string
	// Token is the token's id.
	Token string
	// Parent is the MCP session id of the session that made it.
	Parent string
	// Tenant, Role (the session role), Profile and Name are the token's.
	Tenant, Role, Profile, Name string
	// Spawned is the profile the subagent was spawned with (spawn_subagent's argument).
	Spawned string
	// Root is the directory the subagent works in.
	Root    string
	Created time.Time
}

// ErrNoSession is matched when a store holds no session (or no live child token) of an id.
var ErrNoSession = errors.New("no such session")

// Sessions keeps MCP sessions in a store shared by instances. Implementations are safe for
// concurrent use.
type Sessions interface {
	// OpenSession records a new session.
	OpenSession(ctx context.Context, s *Session) error
	// Session returns the record of a session, ended or not; ErrNoSession if there is none.
	Session(ctx context.Context, id string) (*Session, error)
	// SessionOfRun returns the record of the session whose run is run; ErrNoSession if none.
	SessionOfRun(ctx context.Context, run string) (*Session, error)
	// TouchSession records that a request of a live session was seen at at, and, when
	// initialized is true, that the client has said it is initialized; live reports whether
	// the session is live (false: it has ended, or there is none).
	TouchSession(ctx context.Context, id string, at time.Time, initialized bool) (live bool, err error)
	// EndSession ends a live session; ended reports whether this call ended it (false: it
	// had ended already, or there is no such session).
	EndSession(ctx context.Context, id string, at time.Time, why string) (ended bool, err error)
	// ExpireSessions ends, with why, the live sessions last seen before seenBefore or opened
	// before openedBefore, and returns them (at most limit, oldest first). Of two instances
	// expiring at once, each session is returned by one.
	ExpireSessions(ctx context.Context, seenBefore, openedBefore, at time.Time, why string, limit int) ([]*Session, error)
	// PutChild records a subagent's token.
	PutChild(ctx context.Context, c *Child) error
	// Child returns the subagent token of a secret's hash while its parent session is live;
	// ErrNoSession otherwise.
	Child(ctx context.Context, hash string) (*Child, error)
}

// A Relayed message is one an instance sent the client of a session it does not hold the
// event stream of (a call's progress while it waits for a person), for the instance that
// holds it.
type Relayed struct {
	// Session is the MCP session id.
	Session string
	// Kind says what Data is ("progress": notifications/progress params, JSON).
	Kind string
	Data []byte
}

// MaxRelayed bounds a relayed message's Data (PostgreSQL's notifications carry under 8,000
// bytes).
const MaxRelayed = 7000

// Relay carries messages of sessions between the instances sharing a store. Delivery is best
// effort: a message relayed while an instance is not listening is lost to it.
type Relay interface {
	// Relay sends m to every instance listening, this one included.
	Relay(ctx context.Context, m Relayed) error
	// Relayed returns the messages relayed from now until ctx ends. A listener that falls
	// behind loses messages rather than holding the others.
	Relayed(ctx context.Context) (<-chan Relayed, error)
}
