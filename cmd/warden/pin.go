package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/policy"
)

type pinOptions struct {
	tenant     string
	connectors []string
	accept     []string
	dryRun     bool
	sandbox    sandboxFlags
}

func newPinCmd(root *rootOptions) *cobra.Command {
	o := &pinOptions{}
	cmd := &cobra.Command{
		Use:   "pin [-c FILE] [--tenant T] [--connector ID ...] [--accept TOOL ...] [--dry-run]",
		Short: "Pin connectors' tool definitions by digest in the policy file",
		Long: `Connect to each connector's upstream (every connector with an upstream, or those named with
--connector), compute the digest of each tool's definition (its name, description and input
schema) and write it under the connector's pins in the policy file. While warden serve runs
with a pin, a tool whose upstream definition no longer has the pinned digest is withheld from
every session: an upstream cannot rewrite a tool after a person approved it.

Without --accept it pins every tool of the policy that has no pin yet, and reports (but does
not change) the tools whose definition changed since they were pinned. --accept TOOL is a
person's acceptance of such a change, after reviewing it: it replaces that tool's pin,
printing the old and new digests and the new description; with --accept, only the tools it
names change. The upstream is reached with the credentials a session of --tenant would use
(default: the owner's tenant, or the only tenant).

The file is edited in place: its comments and layout are kept. --dry-run prints what would
change and writes nothing. A running warden serve applies the new pins when it reloads the
policy (SIGHUP) or restarts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd, root) },
	}
	f := cmd.Flags()
	o.sandbox.register(cmd)
	f.StringVar(&o.tenant, "tenant", "", "the tenant whose credentials reach the upstreams (default: the owner's tenant, or the only one)")
	f.StringArrayVar(&o.connectors, "connector", nil, "a connector to pin (repeatable; default: every connector with an upstream)")
	f.StringArrayVar(&o.accept, "accept", nil, "a tool whose changed definition a person accepts: its pin is replaced (repeatable)")
	f.BoolVar(&o.dryRun, "dry-run", false, "print what would change, and write nothing")
	return cmd
}

func (o *pinOptions) run(cmd *cobra.Command, root *rootOptions) error {
	out := cmd.OutOrStdout()
	path := root.config
	if path == "" {
		path = defaultConfig
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && root.config == "" {
		return fmt.Errorf("warden pin writes into the policy file, and there is no ./%s: give the file with -c", defaultConfig)
	}
	if err != nil {
		return fmt.Errorf("read policy: %w", err)
	}
	p, err := parsePolicy(path, data)
	var list policy.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			fmt.Fprintln(cmd.ErrOrStderr(), e)
		}
		return &exitError{code: 1}
	}
	if err != nil {
		return err
	}
	servers, err := o.selected(p)
	if err != nil {
		return err
	}
	if len(servers) == 0 {
		fmt.Fprintf(out, "%s: no connector has an upstream; there is nothing to pin\n", path)
		return nil
	}
	tenant, err := o.tenantOf(p)
	if err != nil {
		return err
	}
	env := p.Env(os.LookupEnv)
	accept := map[string]bool{}
	for _, name := range o.accept {
		accept[name] = false // true once found
	}

	sb, err := o.sandbox.catalog(cmd.Context())
	if err != nil {
		return err
	}
	changes := map[string]map[string]string{}
	var pinned, accepted, pending, failed int
	for _, srv := range servers {
		cat, err := gateway.Catalog(cmd.Context(), env, tenant, srv.ID, sb)
		if err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", srv.ID, err)
			failed++
			continue
		}
		prefix := "mcp__" + srv.ID + "__"
		var outside int
		for _, remote := range slices.Sorted(maps.Keys(cat)) {
			name := prefix + remote
			if t, ok := p.Tool(name); !ok || t.Server != srv {
				outside++ // not a tool of the policy (withheld, or not declared): nothing to pin
				continue
			}
			def := cat[remote]
			digest := gateway.PinDigest(def)
			old, has := srv.Pins[name]
			_, named := accept[name]
			if named {
				accept[name] = true
			}
			set := func() {
				if changes[srv.ID] == nil {
					changes[srv.ID] = map[string]string{}
				}
				changes[srv.ID][name] = digest
			}
			switch {
			case has && old == digest:
				if named {
					fmt.Fprintf(out, "%s: already pinned at its current definition (%s)\n", name, digest)
				}
			case !has && (len(accept) == 0 || named):
				set()
				pinned++
				fmt.Fprintf(out, "%s: pinned %s\n", name, digest)
			case !has:
				fmt.Fprintf(out, "%s: not pinned yet (warden pin without --accept pins it)\n", name)
			case named:
				set()
				accepted++
				fmt.Fprintf(out, "%s: accepted the changed definition\n  old: %s\n  new: %s\n", name, old, digest)
				describeTool(out, def)
			default:
				pending++
				fmt.Fprintf(out, "%s: CHANGED upstream since it was pinned; it is withheld until a person accepts it\n  pinned: %s\n  now:    %s\n",
					name, old, digest)
				describeTool(out, def)
				fmt.Fprintf(out, "  accept it, once reviewed, with: warden pin -c %s --accept %s\n", path, name)
			}
		}
		for _, t := range srv.Tools {
			if !t.Pattern && cat[strings.TrimPrefix(t.Name, prefix)] == nil {
				fmt.Fprintf(out, "%s: the upstream does not list it\n", t.Name)
			}
		}
		if outside > 0 {
			fmt.Fprintf(out, "%s: tools the upstream lists that the policy does not offer (withheld, or not declared), not pinned: %d\n", srv.ID, outside)
		}
	}
	var missing []string
	for _, name := range o.accept {
		if !accept[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "--accept: no upstream lists %s; nothing was written\n", strings.Join(missing, ", "))
		return &exitError{code: 1}
	}

	if len(changes) == 0 {
		fmt.Fprintf(out, "%s: nothing to change\n", path)
	} else if err := o.write(out, path, data, changes, pinned, accepted); err != nil {
		return err
	}
	if pending > 0 {
		fmt.Fprintf(out, "pinned tools that changed upstream, withheld until accepted: %d\n", pending)
	}
	if failed > 0 {
		return &exitError{code: 1}
	}
	return nil
}

// write puts the changed pins into the policy file (unless this is a dry run), after checking
// the document that results.
func (o *pinOptions) write(out io.Writer, path string, data []byte, changes map[string]map[string]string, pinned, accepted int) error {
	edited, reencoded, err := policy.SetPins(data, changes)
	if err != nil {
		return err
	}
	if _, err := policy.Parse(path, edited); err != nil {
		return fmt.Errorf("the policy with its new pins does not load, so it was not written:\n%w", err)
	}
	summary := fmt.Sprintf("newly pinned %d, accepted %d", pinned, accepted)
	if o.dryRun {
		fmt.Fprintf(out, "dry run: %s would be written (%s); nothing was written\n", path, summary)
		return nil
	}
	if err := writeFileAtomic(path, edited); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s: %s\n", path, summary)
	if reencoded {
		fmt.Fprintln(out, "note: the file could not be edited in place, so it was written out again: its comments are kept, but blank lines and line breaks in long text may not be")
	}
	fmt.Fprintln(out, "a running warden serve applies the pins when it reloads the policy (SIGHUP) or restarts")
	return nil
}

// selected are the connectors to pin: those named with --connector, else those of the tools
// named with --accept, else every connector with an upstream; in policy order.
func (o *pinOptions) selected(p *policy.Policy) ([]*policy.Server, error) {
	ids := map[string]bool{}
	for _, id := range o.connectors {
		srv, ok := p.Server(id)
		switch {
		case !ok || srv.Kind != policy.KindConnector:
			return nil, fmt.Errorf("--connector %s: the policy has no such connector", id)
		case srv.Upstream == nil:
			return nil, fmt.Errorf("--connector %s: the connector has no upstream, so Warden never sees its tool definitions", id)
		}
		ids[id] = true
	}
	for _, name := range o.accept {
		t, ok := p.Tool(name)
		if !ok || t.Server.Kind != policy.KindConnector || t.Name == name && t.Pattern {
			return nil, fmt.Errorf("--accept %s: the policy has no such connector tool", name)
		}
		if t.Server.Upstream == nil {
			return nil, fmt.Errorf("--accept %s: connector %s has no upstream", name, t.Server.ID)
		}
		if len(o.connectors) == 0 {
			ids[t.Server.ID] = true
		}
	}
	var out []*policy.Server
	for srv := range p.Servers() {
		if srv.Kind == policy.KindConnector && srv.Upstream != nil && (len(ids) == 0 || ids[srv.ID]) {
			out = append(out, srv)
		}
	}
	return out, nil
}

// tenantOf is the tenant whose credentials reach the upstreams: --tenant, else the owner's,
// else the only one ("" when there is none to choose: the upstreams are reached without
// credentials).
func (o *pinOptions) tenantOf(p *policy.Policy) (string, error) {
	if o.tenant != "" {
		if _, ok := p.Tenant(o.tenant); !ok {
			return "", fmt.Errorf("--tenant %s: the policy has no such tenant", o.tenant)
		}
		return o.tenant, nil
	}
	var all []*policy.Tenant
	for t := range p.Tenants() {
		if t.Owner {
			return t.ID, nil
		}
		all = append(all, t)
	}
	if len(all) == 1 {
		return all[0].ID, nil
	}
	return "", nil
}

// describeTool prints what a person reviews: the description and input schema the upstream
// now gives. Both come from the upstream, so nothing in them may control the terminal.
func describeTool(out io.Writer, def *mcp.Tool) {
	fmt.Fprintf(out, "  description: %s\n", printable(def.Description, "    "))
	if b, err := json.Marshal(def.InputSchema); err == nil {
		fmt.Fprintf(out, "  input schema: %s\n", printable(string(b), "    "))
	}
}

// printable shows text from an upstream safely: control and bidirectional-formatting
// characters are written as escapes, and each line after the first is indented.
func printable(s, indent string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString("\n" + indent)
		case r == '\t':
			b.WriteRune(r)
		case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// writeFileAtomic replaces a file's content (the file a link points to, for a link) in one
// step, keeping its mode.
func writeFileAtomic(path string, data []byte) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(real), "."+filepath.Base(real)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // (gone once renamed)
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(fi.Mode().Perm()); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), real); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
