package boundary

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/wardenhq/warden/policy"
)

// PolicyRules are the hard blocks a policy file writes (its top-level boundaries, and each
// tenant's), checked. It is immutable and safe for concurrent use.
type PolicyRules struct {
	def     *Document
	tenants map[string]*Document // the deployment's rules, then the tenant's own
}

// checkHome stands in for a session's home while a policy's rules are checked: "~/" is
// allowed in a policy, and expanded with the real home when the rules are compiled.
const checkHome = "/home/warden"

// FromPolicy checks the hard blocks written in p and returns them. Every problem is reported,
// each at the place in the policy (or at the file reference, for a document kept in a file)
// where it is written, as a policy.ErrorList: `warden check` refuses a policy whose rules do
// not validate. A tenant's rule may not reuse the id of a deployment-wide rule.
func FromPolicy(p *policy.Policy) (*PolicyRules, error) {
	var errs policy.ErrorList
	read := func(b *policy.BoundariesConfig, who string) *Document {
		if b == nil || b.JSON == nil {
			return nil
		}
		d, err := Parse(b.JSON)
		if err == nil {
			if fe := check(d, Options{Home: checkHome}); len(fe) > 0 {
				err = ValidationError(fe)
			}
		}
		if err == nil {
			return d
		}
		var ve ValidationError
		if !errors.As(err, &ve) {
			ve = ValidationError{{Msg: err.Error()}}
		}
		for _, fe := range ve {
			errs = append(errs, &policy.Error{File: p.File, Pos: b.Place(fe.Field),
				Msg: fmt.Sprintf("%s%s: %s", who, b.Describe(), fe.Error())})
		}
		return nil
	}
	r := &PolicyRules{def: read(p.DefaultBoundaries(), ""), tenants: map[string]*Document{}}
	for t := range p.Tenants() {
		b := p.TenantBoundaries(t.ID)
		own := read(b, "tenant "+t.ID+": ")
		if own == nil {
			continue
		}
		d := &Document{Version: 1}
		ids := map[string]bool{}
		if r.def != nil {
			d.HardBlocks = append(d.HardBlocks, r.def.HardBlocks...)
			for _, rule := range r.def.HardBlocks {
				ids[rule.ID] = true
			}
		}
		for i, rule := range own.HardBlocks {
			if ids[rule.ID] {
				field := fmt.Sprintf("hardBlocks[%d].id", i)
				errs = append(errs, &policy.Error{File: p.File, Pos: b.Place(field),
					Msg: fmt.Sprintf("tenant %s: %s: %s: %q is already the id of a deployment-wide rule; hard blocks only add up, so give this one its own id", t.ID, b.Describe(), field, rule.ID)})
			}
		}
		d.HardBlocks = append(d.HardBlocks, own.HardBlocks...)
		r.tenants[t.ID] = d
	}
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(a, b *policy.Error) int {
			return cmp.Or(a.Pos.Line-b.Pos.Line, a.Pos.Col-b.Pos.Col)
		})
		return nil, errs
	}
	return r, nil
}

// For returns the policy's rules for a tenant: the deployment's, then the tenant's own. It
// returns nil when the policy writes none (and for a nil receiver).
func (r *PolicyRules) For(tenant string) *Document {
	if r == nil {
		return nil
	}
	if d, ok := r.tenants[tenant]; ok {
		return d
	}
	return r.def
}
