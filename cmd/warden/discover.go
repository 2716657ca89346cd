package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/policy"
)

type discoverOptions struct {
	tenant     string
	connectors []string
	json       bool
	sandbox    sandboxFlags
}

func newDiscoverCmd(root *rootOptions) *cobra.Command {
	o := &discoverOptions{}
	cmd := &cobra.Command{
		Use:   "discover [-c FILE] [--tenant T] [--connector ID ...] [--json]",
		Short: "List connectors' upstream tools, the effect their annotations claim, and what the policy says",
		Long: `Connect to each connector's upstream (every connector with an upstream, or those named with
--connector) and list its tools: the annotations the upstream gives (readOnlyHint,
destructiveHint, ...), the effect class they suggest, and the effect the policy gives the tool
now (declared, the connector's default for a discovered catalog, withheld, or not offered).

Annotations are the upstream's claims: they give the default a person starts from, and the
policy decides. A tool the policy gives a milder effect than its upstream claims is marked,
and a ready-to-paste tools: list declares every such tool, and every tool the policy does not
offer yet, with the effect its annotations suggest. The upstream is reached with the
credentials a session of --tenant would use (default: the owner's tenant, or the only tenant).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd, root) },
	}
	f := cmd.Flags()
	o.sandbox.register(cmd)
	f.StringVar(&o.tenant, "tenant", "", "the tenant whose credentials reach the upstreams (default: the owner's tenant, or the only one)")
	f.StringArrayVar(&o.connectors, "connector", nil, "a connector to list (repeatable; default: every connector with an upstream)")
	f.BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

// discovered is one upstream tool, as warden discover reports it.
type discovered struct {
	Tool        string               `json:"tool"`
	Annotations *mcp.ToolAnnotations `json:"annotations,omitempty"`
	Suggests    policy.Effect        `json:"suggests"`
	Because     string               `json:"because"`
	// Policy is the effect the policy gives the tool, "" when it does not offer it.
	Policy policy.Effect `json:"policy,omitempty"`
	// How says where the policy's answer comes from: declared, discovered (the connector's
	// effect), withheld or not offered.
	How         string `json:"how"`
	Understated bool   `json:"understated,omitempty"`
}

type discoveredConnector struct {
	Connector string       `json:"connector"`
	Error     string       `json:"error,omitempty"`
	Tools     []discovered `json:"tools"`
}

func (o *discoverOptions) run(cmd *cobra.Command, root *rootOptions) error {
	p, err := root.load(cmd)
	if err != nil {
		return err
	}
	sel := &pinOptions{tenant: o.tenant, connectors: o.connectors}
	servers, err := sel.selected(p)
	if err != nil {
		return err
	}
	tenant, err := sel.tenantOf(p)
	if err != nil {
		return err
	}
	env := p.Env(os.LookupEnv)
	sb, err := o.sandbox.catalog(cmd.Context())
	if err != nil {
		return err
	}
	var report []discoveredConnector
	failed := false
	for _, srv := range servers {
		c := discoveredConnector{Connector: srv.ID, Tools: []discovered{}}
		cat, err := gateway.Catalog(cmd.Context(), env, tenant, srv.ID, sb)
		if err != nil {
			c.Error = err.Error()
			failed = true
			report = append(report, c)
			continue
		}
		for _, remote := range slices.Sorted(maps.Keys(cat)) {
			def := cat[remote]
			name := "mcp__" + srv.ID + "__" + remote
			d := discovered{Tool: name, Annotations: def.Annotations, How: "not offered"}
			d.Suggests, d.Because = gateway.EffectHint(def.Annotations)
			switch t, ok := p.Tool(name); {
			case ok && t.Server == srv && t.Pattern:
				d.Policy, d.How = t.Effect, "discovered"
			case ok && t.Server == srv:
				d.Policy, d.How = t.Effect, "declared"
			case srv.Withholds(name):
				d.How = "withheld"
			}
			d.Understated = d.Policy != "" && gateway.Understated(d.Policy, def.Annotations)
			c.Tools = append(c.Tools, d)
		}
		report = append(report, c)
	}
	out := cmd.OutOrStdout()
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	} else {
		for _, c := range report {
			printDiscovered(out, c)
		}
	}
	if failed {
		return &exitError{code: 1}
	}
	return nil
}

func printDiscovered(out interface{ Write([]byte) (int, error) }, c discoveredConnector) {
	fmt.Fprintf(out, "connector %s\n", c.Connector)
	if c.Error != "" {
		fmt.Fprintf(out, "  cannot be reached: %s\n\n", c.Error)
		return
	}
	width := len("TOOL")
	for _, d := range c.Tools {
		width = max(width, len(d.Tool))
	}
	fmt.Fprintf(out, "  %-*s  %-8s  %-8s  %s\n", width, "TOOL", "CLAIMS", "POLICY", "WHY")
	var paste []discovered
	for _, d := range c.Tools {
		pol := string(d.Policy)
		if pol == "" {
			pol = "-"
		}
		note := d.How + "; claim: " + d.Because
		if d.Understated {
			note = "MILDER THAN CLAIMED (" + d.How + "); claim: " + d.Because
		}
		fmt.Fprintf(out, "  %-*s  %-8s  %-8s  %s\n", width, printable(d.Tool, ""), d.Suggests, pol, note)
		if d.Understated || d.How == "not offered" {
			paste = append(paste, d)
		}
	}
	if len(paste) > 0 {
		fmt.Fprintf(out, "  to declare these with the effect their annotations claim, add them to the tools of connector %s:\n", c.Connector)
		for _, d := range paste {
			fmt.Fprintf(out, "      - {name: %s, effect: %s}\n", printable(d.Tool, ""), d.Suggests)
		}
	}
	fmt.Fprintln(out)
}
