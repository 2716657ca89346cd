package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/egress"
)

func newEgressCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "egress",
		Short: "The sandbox's outbound network rules",
		Long: `The rules for what a sandboxed command may reach: an allowlist of hosts, *.domain, public
IPs and CIDRs (each with an optional :port), the never-allowed ranges (loopback, private,
link-local and metadata, ...) and this host's own addresses, the ports (80 and 443, and those
entries name), and the modes SANDBOX_EGRESS=allowlist|open. See docs/egress.md.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newEgressCheckCmd())
	return cmd
}

type egressCheckOptions struct {
	env       envOptions
	allowlist string
	mode      string
	resolve   []string
	noResolve bool
	json      bool
}

func newEgressCheckCmd() *cobra.Command {
	o := &egressCheckOptions{}
	cmd := &cobra.Command{
		Use:   `check [--allowlist "h1,*.d2,203.0.113.0/24"] [--mode allowlist|open] TARGET [--json]`,
		Short: "Judge one target as the egress proxy would: allow or deny, and why",
		Long: `Judge one target, a URL or host[:port], as the egress proxy would: the host is normalised
(127.1, 0x7f.1, 2130706433 and [::ffff:127.0.0.1] are all 127.0.0.1), a name is resolved and
every address it resolves to is checked, and never-allowed addresses and this host's own (its
interfaces' addresses, now) are refused whatever the list says. A target with a port other than
80 and 443 is allowed only if an entry names that port (host:8443); a target without a port is
judged by its host alone.

The list is --allowlist if given, else SANDBOX_EGRESS_ALLOWLIST, else the default list; the mode
is --mode if given, else SANDBOX_EGRESS (an unknown value is reported and counts as allowlist).
In allowlist mode an unlisted name is refused without being resolved.

--resolve HOST:ADDR[,ADDR...] pins a name's addresses for this check instead of asking DNS
(repeatable). curl's HOST:PORT:ADDR form is accepted too; it applies only when the target's
port is PORT. IPv6 addresses are written in brackets. --no-resolve judges names without
resolving them: a listed name is allowed as a name, any other is denied.

The exit status is 0 whenever a decision was reached (the decision is in the output, and an
unparsable target is a deny with reason invalid_target) and non-zero only for usage errors and
invalid lists.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.allowlist, "allowlist", "", "the allowlist, entries separated by commas or spaces (default: SANDBOX_EGRESS_ALLOWLIST, else the default list)")
	f.StringVar(&o.mode, "mode", "", "allowlist or open (default: SANDBOX_EGRESS, else allowlist)")
	f.StringArrayVar(&o.resolve, "resolve", nil, "HOST:ADDR[,ADDR...] or HOST:PORT:ADDR[,ADDR...]: use these addresses for HOST instead of DNS (repeatable)")
	f.BoolVar(&o.noResolve, "no-resolve", false, "judge names without resolving them")
	f.BoolVar(&o.json, "json", false, `print JSON: {"decision":"allow|deny","host":"...","reason":"...",...}`)
	o.env.register(cmd)
	return cmd
}

func (o *egressCheckOptions) run(cmd *cobra.Command, target string) error {
	if o.noResolve && len(o.resolve) > 0 {
		return errors.New("--resolve and --no-resolve cannot be used together")
	}
	lookup, err := o.env.lookup(os.LookupEnv)
	if err != nil {
		return err
	}
	var opts egress.Options
	if cmd.Flags().Changed("mode") {
		m, err := egress.ParseMode(o.mode)
		if err != nil || o.mode == "" {
			return fmt.Errorf("--mode %q: want allowlist or open", o.mode)
		}
		opts.Mode = m
	} else {
		raw, _ := lookup(egress.EnvMode)
		m, err := egress.ParseMode(raw)
		if err != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "switch:", err)
		}
		opts.Mode = m
	}
	source := "the default list"
	switch {
	case cmd.Flags().Changed("allowlist"):
		source = "--allowlist"
		if opts.Allowlist, err = egress.ParseAllowlist(o.allowlist); err != nil {
			return listErrors(cmd, source, err)
		}
	default:
		if v, ok := lookup(egress.EnvAllowlist); ok && v != "" {
			source = egress.EnvAllowlist
			if opts.Allowlist, err = egress.ParseAllowlist(v); err != nil {
				return listErrors(cmd, source, err)
			}
		}
	}
	opts.NoResolve = o.noResolve
	if len(o.resolve) > 0 {
		pins, err := parsePins(o.resolve)
		if err != nil {
			return err
		}
		var port uint16
		if t, err := egress.ParseTarget(target); err == nil {
			port = t.Port
		}
		opts.Resolver = pins.resolver(port)
	}
	checker := egress.New(opts)
	ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
	defer cancel()
	d := checker.Check(ctx, target)

	out := cmd.OutOrStdout()
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}
	fmt.Fprintf(out, "decision: %s\n", d.Verdict())
	host := d.Host
	if d.Port != 0 {
		host += " (port " + strconv.Itoa(int(d.Port)) + ")"
	}
	fmt.Fprintf(out, "host:     %s\n", host)
	fmt.Fprintf(out, "reason:   %s\n", d.Reason)
	if d.Entry != "" {
		fmt.Fprintf(out, "entry:    %s\n", d.Entry)
	}
	if len(d.Addrs) > 0 {
		as := make([]string, len(d.Addrs))
		for i, a := range d.Addrs {
			as[i] = a.String()
		}
		fmt.Fprintf(out, "connect:  %s\n", strings.Join(as, ", "))
	}
	fmt.Fprintf(out, "detail:   %s\n", d.Detail)
	entries := "entries"
	if checker.Allowlist().Len() == 1 {
		entries = "entry"
	}
	fmt.Fprintf(out, "mode:     %s, %d %s from %s\n", checker.Mode(), checker.Allowlist().Len(), entries, source)
	return nil
}

// listErrors prints one line per bad entry and fails.
func listErrors(cmd *cobra.Command, source string, err error) error {
	var list egress.ListError
	if !errors.As(err, &list) {
		return fmt.Errorf("%s: %w", source, err)
	}
	for _, e := range list {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", source, e)
	}
	return &exitError{code: 1}
}

// pin is one --resolve value: a name's addresses, for one port or (port 0) for any.
type pin struct {
	port  uint16
	addrs []netip.Addr
}

type pins map[string][]pin

// parsePins reads HOST:ADDR[,ADDR...] and curl's HOST:PORT:ADDR[,ADDR...].
func parsePins(values []string) (pins, error) {
	p := pins{}
	for _, v := range values {
		bad := func(why string) error {
			return fmt.Errorf("--resolve %q: %s (want HOST:ADDR[,ADDR...] or HOST:PORT:ADDR[,ADDR...], IPv6 in brackets)", v, why)
		}
		name, rest, ok := strings.Cut(v, ":")
		if !ok || name == "" || rest == "" {
			return nil, bad("no address")
		}
		h, err := egress.ParseHost(name)
		if err != nil || h.IsAddr() {
			return nil, bad("HOST must be a name")
		}
		var port uint16
		if i := strings.IndexByte(rest, ':'); i > 0 && strings.Trim(rest[:i], "0123456789") == "" {
			n, err := strconv.ParseUint(rest[:i], 10, 16)
			if err != nil || n == 0 {
				return nil, bad("PORT must be a number from 1 to 65535")
			}
			port, rest = uint16(n), rest[i+1:]
		}
		var pn pin
		pn.port = port
		for a := range strings.SplitSeq(rest, ",") {
			if strings.Contains(a, ":") && !strings.HasPrefix(a, "[") {
				return nil, bad("IPv6 addresses go in brackets")
			}
			ah, err := egress.ParseHost(a)
			if err != nil || !ah.IsAddr() {
				return nil, bad(fmt.Sprintf("%q is not an IP address", a))
			}
			pn.addrs = append(pn.addrs, ah.Addr())
		}
		p[h.Name()] = append(p[h.Name()], pn)
	}
	return p, nil
}

// resolver answers pinned names from the pins that apply to port, and asks the system
// resolver (fully qualified) for the rest, as curl does.
func (p pins) resolver(port uint16) egress.Resolver {
	m := map[string][]netip.Addr{}
	for name, ps := range p {
		for _, pn := range ps {
			if pn.port == 0 || pn.port == port {
				m[name] = append(m[name], pn.addrs...)
			}
		}
	}
	return pinResolver(m)
}

type pinResolver map[string][]netip.Addr

func (r pinResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if as, ok := r[host]; ok {
		return as, nil
	}
	return net.DefaultResolver.LookupNetIP(ctx, network, host+".")
}
