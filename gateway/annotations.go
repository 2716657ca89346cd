package gateway

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/policy"
)

// EffectHint is the effect class an upstream's tool annotations suggest (M2), and why:
//
//   - readOnlyHint true: read;
//   - otherwise, destructiveHint false: write (the tool only adds or updates);
//   - otherwise delete: MCP's default for a tool that is not read-only is destructive, so a
//     tool without annotations is taken to delete.
//
// openWorldHint and idempotentHint do not change the class. Annotations are claims of an
// upstream Warden does not trust: they are a default for a person writing the policy (warden
// discover prints them), never a decision. At run time the policy's effect is the one that
// counts, and the annotations a client sees are made to agree with it (policyAnnotations).
func EffectHint(a *mcp.ToolAnnotations) (policy.Effect, string) {
	switch {
	case a == nil:
		return policy.EffectDelete, "no annotations: MCP takes a tool that is not read-only to be destructive"
	case a.ReadOnlyHint:
		return policy.EffectRead, "readOnlyHint"
	case a.DestructiveHint != nil && !*a.DestructiveHint:
		return policy.EffectWrite, "not read-only, destructiveHint false"
	case a.DestructiveHint != nil:
		return policy.EffectDelete, "destructiveHint true"
	}
	return policy.EffectDelete, "not read-only, and destructive by MCP's default"
}

// strictness orders effect classes by how much a person should care; EffectHint's classes
// and the policy's are compared with it.
var strictness = map[policy.Effect]int{
	policy.EffectRead: 0, policy.EffectWrite: 1, policy.EffectDelete: 2, policy.EffectSend: 2,
	policy.EffectSpend: 2, policy.EffectExecute: 2, policy.EffectDelegate: 2,
}

// Understated reports whether the policy gives a tool a milder effect class than its
// upstream's annotations claim (the policy says read; the upstream says it deletes): the policy
// still decides, but a person should look.
func Understated(policyEffect policy.Effect, a *mcp.ToolAnnotations) bool {
	hint, _ := EffectHint(a)
	return strictness[policyEffect] < strictness[hint]
}

// policyAnnotations are the annotations a client sees for an upstream tool: the upstream's
// title, idempotent and open-world hints, with read-only and destructive set from the
// policy's effect class, which overrides what the upstream claims. A client that trusts
// readOnlyHint (to run a tool without asking, say) must not be misled by an upstream.
func policyAnnotations(t *policy.Tool, up *mcp.ToolAnnotations) *mcp.ToolAnnotations {
	a := &mcp.ToolAnnotations{}
	if up != nil {
		a.Title, a.IdempotentHint, a.OpenWorldHint = up.Title, up.IdempotentHint, up.OpenWorldHint
	}
	a.ReadOnlyHint = t.Effect == policy.EffectRead
	if !a.ReadOnlyHint {
		destructive := t.Effect != policy.EffectWrite
		a.DestructiveHint = &destructive
	}
	return a
}

// warnUnderstated logs, once per tool and claim, a listed upstream tool whose policy effect is
// milder than its annotations explicitly claim.
func (g *Gateway) warnUnderstated(name string, t *policy.Tool, up *mcp.ToolAnnotations) {
	if up == nil || !Understated(t.Effect, up) {
		return // (an upstream that claims nothing is not warned about: most claim nothing)
	}
	hint, why := EffectHint(up)
	if g.hints.first(name + "\x00" + string(hint)) {
		g.logger.Warn("the policy gives a tool a milder effect than its upstream claims; the policy decides (warden discover shows every claim)",
			"tool", name, "policy", t.Effect, "upstream", hint, "because", why)
	}
}
