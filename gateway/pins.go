package gateway

// Tool pinning (S11): a connector's tool definitions may be pinned by digest in the policy
// (policy.Server.Pins). A pinned tool whose upstream definition has another digest is withheld
// from every session until a person accepts the change (warden pin --accept), which rewrites
// the pin; the gateway sees it when the policy is reloaded.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/egress"
	"github.com/wardenhq/warden/native"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/surface"
	"github.com/wardenhq/warden/verdict"
)

// PinDigest is the digest by which a policy pins a connector's tool definition:
// "sha256:" followed by the lower-case hex SHA-256 of the canonical JSON encoding of
//
//	{"description": D, "inputSchema": S, "name": N}
//
// where N is the tool's name as the upstream lists it (not Warden's mcp__<connector>__ name),
// D its description ("" when it has none) and S its input schema (null when it has none).
//
// The encoding is canonical: the values are decoded as plain JSON (objects, arrays, strings,
// float64 numbers, booleans, null) and encoded again with encoding/json, so object keys are
// sorted, there is no insignificant whitespace, numbers take their shortest form (1.0 and 1e0
// are 1) and HTML characters are not escaped. Two definitions that differ only in key order,
// spacing or number spelling have the same digest.
//
// Only the name, description and input schema are covered: a change of the title, annotations,
// output schema, icons or _meta does not withhold a tool.
func PinDigest(def *mcp.Tool) string {
	var schema any
	if def.InputSchema != nil {
		b, err := json.Marshal(def.InputSchema)
		if err == nil {
			err = json.Unmarshal(b, &schema)
		}
		if err != nil {
			// A schema that is not JSON cannot match any pin; it digests as its error.
			schema = map[string]any{"unencodable": err.Error()}
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// The map's keys come out sorted; everything in it is plain JSON, so this cannot fail.
	_ = enc.Encode(map[string]any{"name": def.Name, "description": def.Description, "inputSchema": schema})
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Catalog connects to a connector's upstream as the gateway would for a session of the tenant
// (with the tenant's own or shared connection, or the host's variables for the owner's tenant;
// with no credential when tenant is ""), lists its tools, and disconnects. The tools are keyed
// by the upstream's own names. warden pin uses it to compute the digests it writes. A connector
// marked sandbox: true is started in the sandbox sb describes, as warden serve would.
func Catalog(ctx context.Context, env *policy.Env, tenant, connector string, sb CatalogSandbox) (map[string]*mcp.Tool, error) {
	p := env.Policy()
	srv, ok := p.Server(connector)
	if !ok || srv.Kind != policy.KindConnector {
		return nil, fmt.Errorf("the policy has no connector %q", connector)
	}
	if srv.Upstream == nil {
		return nil, fmt.Errorf("connector %s has no upstream: Warden does not reach it", connector)
	}
	var from *surface.Credential
	if tenant != "" {
		t, ok := p.Tenant(tenant)
		if !ok {
			return nil, fmt.Errorf("the policy has no tenant %q", tenant)
		}
		if res := t.Stored(srv); res != nil {
			from = &surface.Credential{Connector: srv, Source: res.Source, Connection: res.Connection}
		} else if t.Owner && env.HostCredentials(srv) {
			from = &surface.Credential{Connector: srv, Source: policy.SourceHost}
		}
	}
	cred, err := resolveCredential(srv, from)
	if err != nil {
		return nil, err
	}
	pl := newPool(slog.New(slog.DiscardHandler), nil, nil)
	pl.sandbox = connectorSandbox{checker: sb.Egress, native: sb.Native}
	defer pl.closeAll()
	u, err := pl.get(ctx, srv, cred, tenant)
	if err != nil {
		return nil, err
	}
	cat := u.catalog()
	if cat == nil {
		return nil, fmt.Errorf("connector %s lists no tools", connector)
	}
	return maps.Clone(cat), nil
}

// CatalogSandbox is the sandbox Catalog starts a connector marked sandbox: true in: the
// operator's switch, read-only and hidden paths (Native; its Proxy is not used), and what the
// connector's egress proxy enforces (Egress; nil: egress's defaults).
type CatalogSandbox struct {
	Native native.Sandbox
	Egress *egress.Checker
}

// pinHeld reports whether a pinned tool's upstream definition no longer has its pinned digest,
// so that the session must not list it. The first time the gateway sees a definition that does
// not match, it records the mismatch in the audit trail and logs it.
func (s *session) pinHeld(ctx context.Context, srv *policy.Server, name string, def *mcp.Tool) bool {
	pin, ok := srv.Pins[name]
	if !ok {
		return false
	}
	got := PinDigest(def)
	if got == pin {
		return false
	}
	log := &s.g.pins
	key := srv.ID + "\x00" + name + "\x00" + got
	if !log.first(key) {
		return true
	}
	detail := pinDetail(name, pin, got)
	s.g.logger.Warn("a pinned tool's definition changed upstream; it is withheld until a person accepts the change",
		"connector", srv.ID, "tool", name, "pinned", pin, "observed", got, "accept", "warden pin --accept "+name)
	if err := s.record(ctx, name, nil, verdict.PinMismatch, detail); err != nil {
		log.forget(key) // the next list tries to record it again
	}
	return true
}

// pinHeldFor says why a tool of the surface that the session does not list is withheld for a
// changed definition, if it is: for a call of it by name.
func (s *session) pinHeldFor(ctx context.Context, sf *surface.Surface, name string) (string, bool) {
	t, ok := sf.Policy().Tool(name)
	if !ok || t.Server == nil || t.Server.Upstream == nil {
		return "", false
	}
	pin, ok := t.Server.Pins[name]
	if !ok {
		return "", false
	}
	u := s.upstream(ctx, sf, t.Server)
	if u == nil {
		return "", false
	}
	def, ok := u.catalog()[strings.TrimPrefix(name, "mcp__"+t.Server.ID+"__")]
	if !ok {
		return "", false
	}
	if got := PinDigest(def); got != pin {
		return pinDetail(name, pin, got), true
	}
	return "", false
}

// pinDetail is the blocker detail of a withheld tool.
func pinDetail(name, pinned, observed string) string {
	return fmt.Sprintf("the upstream changed the definition of %s (name, description or input schema) after it was pinned: "+
		"pinned %s, now %s. The tool is withheld until a person reviews the change and accepts it "+
		"(warden pin --accept %s), and the policy is reloaded", name, pinned, observed, name)
}

// A onceSet remembers what a gateway has said once per process, not once per session or per
// list: pin mismatches by (connector, tool, observed digest), understated effects. Its zero
// value is ready.
type onceSet struct {
	mu   sync.Mutex
	seen map[string]bool
}

// first reports whether key is new, and marks it seen.
func (l *onceSet) first(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	if l.seen[key] {
		return false
	}
	l.seen[key] = true
	return true
}

// forget makes key new again (what was to be said once could not be).
func (l *onceSet) forget(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.seen, key)
}
