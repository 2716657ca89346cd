package gateway

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/surface"
)

// A session's route: the model and the harness it runs on. They decide whether its surface is
// the read-only route (policy.ReadOnlyRoute), and a harness's caps apply to it. Each is bound
// in the agent token (auth.Token.Model, Harness) or stated by the client in initialize's
// _meta (metaModel, metaHarness); the token wins, and a client that states otherwise is
// refused, so no client can claim a certified model its token does not name. Nothing stated
// and nothing bound: no model (not certified where the policy lists models) and the default
// harness.
const (
	metaModel   = "warden/model"
	metaHarness = "warden/harness"
)

// route is what a session runs on; empty fields are unstated.
type route struct {
	model, harness string
	// stated: the client stated them (the token's own binding is never "stated").
	statedModel, statedHarness string
}

// routeOf works out a new session's route from its token and the _meta of its initialize
// (nil when none was read). It refuses a malformed statement, and one that contradicts the
// token.
func routeOf(tok *auth.Token, meta map[string]any) (route, error) {
	rt := route{model: tok.Model, harness: tok.Harness}
	var err error
	if rt.statedModel, err = metaString(meta, metaModel); err != nil {
		return rt, err
	}
	if rt.statedHarness, err = metaString(meta, metaHarness); err != nil {
		return rt, err
	}
	if m := rt.statedModel; m != "" {
		if err := policy.CheckModelID(m); err != nil {
			return rt, fmt.Errorf("initialize _meta.%s: %w", metaModel, err)
		}
		if rt.model != "" && rt.model != m {
			return rt, fmt.Errorf("initialize _meta.%s states the model %s, but the session's token binds the model %s", metaModel, m, rt.model)
		}
		rt.model = m
	}
	if h := rt.statedHarness; h != "" {
		if rt.harness != "" && rt.harness != h {
			return rt, fmt.Errorf("initialize _meta.%s states the harness %s, but the session's token binds the harness %s", metaHarness, h, rt.harness)
		}
		rt.harness = h
	}
	return rt, nil
}

// metaString reads a _meta key that must be a non-empty string when present.
func metaString(meta map[string]any, key string) (string, error) {
	v, ok := meta[key]
	if !ok {
		return "", nil
	}
	str, ok := v.(string)
	if !ok || str == "" {
		return "", fmt.Errorf("initialize _meta.%s must be a non-empty string, not %s", key, clip(fmt.Sprint(v)))
	}
	return str, nil
}

// agrees refuses a session whose surface runs on another model or harness than the client
// stated: a subagent's session runs on its parent's, whatever it states.
func (rt route) agrees(sf *surface.Surface) error {
	if m := rt.statedModel; m != "" && m != sf.Model() {
		return fmt.Errorf("initialize _meta.%s states the model %s, but the session runs on its parent's model %s", metaModel, m, orNone(sf.Model()))
	}
	if h := rt.statedHarness; h != "" && h != sf.Harness().ID {
		return fmt.Errorf("initialize _meta.%s states the harness %s, but the session runs on its parent's harness %s", metaHarness, h, sf.Harness().ID)
	}
	return nil
}

func orNone(model string) string {
	if model == "" {
		return "(none stated)"
	}
	return model
}

// initMeta is the _meta of the initialize among msgs (nil when there is none, or it has no
// _meta; a malformed one is the SDK's to refuse).
func initMeta(msgs []*jsonrpc.Request) map[string]any {
	return metaOf(initParams(msgs))
}

// metaOf is the _meta of an initialize's params (nil when none can be read).
func metaOf(params json.RawMessage) map[string]any {
	if len(params) == 0 {
		return nil
	}
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	return p.Meta
}

// checkStated refuses an initialize whose _meta states a model or a harness the session does
// not run on. Over HTTP the session was opened on what its initialize states, so this holds;
// over stdio the session opens before its initialize is read, on what its token binds.
func (s *session) checkStated(req mcp.Request) error {
	p, ok := req.GetParams().(*mcp.InitializeParams)
	if !ok || p == nil {
		return nil
	}
	gs := s.gs.Load()
	if gs == nil {
		return nil
	}
	sf := gs.Review.Surface
	model, err := metaString(p.Meta, metaModel)
	if err != nil {
		return err
	}
	harness, err := metaString(p.Meta, metaHarness)
	if err != nil {
		return err
	}
	if model != "" && model != sf.Model() {
		return fmt.Errorf("initialize _meta.%s states the model %s, but the session runs on %s (bind it in the token with warden token create --model)", metaModel, model, orNone(sf.Model()))
	}
	if harness != "" && harness != sf.Harness().ID {
		return fmt.Errorf("initialize _meta.%s states the harness %s, but the session runs on %s (bind it in the token with warden token create --harness)", metaHarness, harness, sf.Harness().ID)
	}
	return nil
}
