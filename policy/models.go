package policy

import (
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strings"
)

// Routing by model. A policy may list the models its sessions run on (models:), each certified
// for the standard tool set or held back. A route is read-only when its model is not certified
// or its harness is not: the session is then assembled as the read_only role is (its ceiling,
// its credentials, its invariants), never fenced wide. A held-back or unlisted model keeps the
// standard set in the owner's tenant; an uncertified harness is read-only for everyone. A
// policy that lists no models routes by harness only, as before models existed.

// Model is a model sessions run on.
type Model struct {
	ID, Description string
	Index           int
	// Certified: the model is certified for the standard tool set. A session on a model that
	// is not runs the read-only route unless its tenant is the owner's.
	Certified bool
	Pos       Pos
}

// ModelIDPattern is what a model id looks like: a letter or digit, then letters, digits and
// . _ - / : @ (as in "claude-haiku-5-5", "google/gemini-3.8-flash"), at most MaxModelID long.
var ModelIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/:@-]*$`)

// MaxModelID bounds a model id's length.
const MaxModelID = 128

// CheckModelID says what is wrong with a model id as a client or a token states it; nil when
// it is well formed. Whether the policy certifies it is another question (Policy.ModelRoute).
func CheckModelID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("the model id is empty")
	case len(id) > MaxModelID:
		return fmt.Errorf("the model id is %d bytes long, longer than %d", len(id), MaxModelID)
	case !ModelIDPattern.MatchString(id):
		return fmt.Errorf("the model id %q must match %s", id, ModelIDPattern)
	}
	return nil
}

// Model returns the declared model with the id.
func (p *Policy) Model(id string) (*Model, bool) {
	i, ok := p.modelIdx[id]
	if !ok {
		return nil, false
	}
	return p.models[i], true
}

// Models yields every declared model, in document order.
func (p *Policy) Models() iter.Seq[*Model] { return slices.Values(p.models) }

// DeclaresModels reports whether the policy lists its models: only then does a session's model
// decide its route.
// An empty list (models: []) declares that no model is certified.
func (p *Policy) DeclaresModels() bool { return p.modelsDeclared }

// ModelIDs lists the declared models' ids, for messages.
func (p *Policy) ModelIDs() []string {
	if len(p.models) == 0 {
		return []string{"none"}
	}
	out := make([]string, len(p.models))
	for i, m := range p.models {
		out[i] = m.ID
	}
	return out
}

// ReadOnlyRoute says why a session on the harness and model (empty: none stated), in a tenant
// that is the owner's or not, runs the read-only route; "" when it runs its role's own. The
// harness's certification counts for every tenant; the model's only when the policy lists
// models, and not in the owner's tenant (the owner runs uncertified models on the standard set).
func (p *Policy) ReadOnlyRoute(h *Harness, model string, owner bool) string {
	if h != nil && !h.Certified {
		return fmt.Sprintf("the harness %s is not certified for the standard tool set", h.ID)
	}
	if !p.DeclaresModels() || owner {
		return ""
	}
	m, ok := p.Model(model)
	switch {
	case model == "":
		return "the session states no model, and only the policy's certified models run the standard tool set outside the owner's tenant"
	case !ok:
		return fmt.Sprintf("the model %s is not among the policy's models (%s), so it is not certified", model, strings.Join(p.ModelIDs(), ", "))
	case !m.Certified:
		return fmt.Sprintf("the model %s is held back: not certified for the standard tool set outside the owner's tenant", model)
	}
	return ""
}

func (c *compiler) compileModels() {
	p := c.pol
	p.modelsDeclared = c.cfg.Has("models")
	for i := range c.cfg.Models {
		mc := &c.cfg.Models[i]
		if mc.ID == "" {
			c.errorf(mc.Pos, "a model has no id")
			continue
		}
		if err := CheckModelID(mc.ID); err != nil {
			c.errorf(mc.At("id"), "models: %v", err)
			continue
		}
		if j, dup := p.modelIdx[mc.ID]; dup {
			c.errorf(mc.At("id"), "model %q is declared twice (first at line %d)", mc.ID, p.models[j].Pos.Line)
			continue
		}
		m := &Model{ID: mc.ID, Description: mc.Description, Index: len(p.models), Pos: mc.Pos,
			Certified: mc.Certified == nil || *mc.Certified}
		p.modelIdx[m.ID] = m.Index
		p.models = append(p.models, m)
	}
}
