package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/server"
)

type approvalsOptions struct {
	store  storeOptions
	tenant string
	state  string
	asJSON bool
	as     string
}

func newApprovalsCmd() *cobra.Command {
	o := &approvalsOptions{}
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List approval cards and answer them, on the store directly",
		Long: `A call that asks a person waits on a card in the store (--db or --postgres) until it is
answered, its deadline passes, or the call ends. These commands read and answer cards there,
as the REST API's /api/v1/approvals does; an answer wakes the call wherever it waits, in any
warden serve or warden mcp sharing the store.`,
	}
	list := &cobra.Command{
		Use:   "list [--state pending|allowed|denied|expired] [--tenant T] [--json] [--db FILE | --postgres URL]",
		Short: "List cards, newest first: id, tenant, tool, state, deadline or age, reason",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return o.list(cmd) },
	}
	list.Flags().StringVar(&o.state, "state", "", "only cards in this state: pending, allowed, denied or expired")
	list.Flags().BoolVar(&o.asJSON, "json", false, "print them as JSON, as GET /api/v1/approvals does")

	answer := &cobra.Command{
		Use:   "answer ID allow_once|allow_tenant|deny --as NAME [--tenant T] [--db FILE | --postgres URL]",
		Short: "Answer a pending card; the call waiting on it runs or is denied",
		Long: `Answer a pending card as NAME (recorded as its approver, with the channel cli). allow_once
lets this one call run; allow_tenant also lets the same call (tool and arguments) run in the
card's tenant without asking again, until the standing approval is revoked; deny refuses it.
A card that was answered already, expired at its deadline, or whose call ended cannot be
answered: the call can no longer run. With --tenant, only that tenant's cards are found.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return o.answer(cmd, args[0], args[1]) },
	}
	answer.Flags().StringVar(&o.as, "as", "", "who is answering (required): recorded as the card's approver")

	for _, c := range []*cobra.Command{list, answer} {
		c.Flags().StringVar(&o.tenant, "tenant", "", "only this tenant's cards (default: every tenant's)")
		o.store.register(c)
		c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	}
	cmd.AddCommand(list, answer)
	return cmd
}

// list prints the cards the flags select.
func (o *approvalsOptions) list(cmd *cobra.Command) error {
	f := approval.CardFilter{Tenant: o.tenant, State: approval.State(o.state)}
	switch f.State {
	case "", approval.Pending, approval.Allowed, approval.Denied, approval.Expired:
	default:
		return usagef("--state %q: want pending, allowed, denied or expired", o.state)
	}
	db, kind, err := o.store.open(cmd.Context())
	if err != nil {
		return err
	}
	defer db.Close()
	cards, err := db.Cards(cmd.Context(), f)
	if err != nil {
		return fmt.Errorf("list the approval cards in %s: %w", kind, err)
	}
	w := cmd.OutOrStdout()
	if o.asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(server.ApprovalsJSON(cards))
	}
	now := time.Now()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTENANT\tTOOL\tSTATE\tWHEN\tREASON")
	for _, c := range cards {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, c.Tenant, c.Tool, c.State, when(c, now),
			strings.Join(strings.Fields(c.Reason), " "))
	}
	return tw.Flush()
}

// when says how long a pending card has left, or how long ago another left pending.
func when(c *approval.Card, now time.Time) string {
	if c.State == approval.Pending {
		if left := c.Deadline.Sub(now); left > 0 {
			return "due in " + left.Round(time.Second).String()
		}
		return "overdue " + now.Sub(c.Deadline).Round(time.Second).String()
	}
	verb := string(c.State)
	if c.Channel == approval.ChannelCanceled {
		verb = "call ended"
	}
	return verb + " " + now.Sub(c.Answered).Round(time.Second).String() + " ago"
}

// answer records NAME's answer to a pending card through the channel cli.
func (o *approvalsOptions) answer(cmd *cobra.Command, id, word string) error {
	a := approval.Answer(word)
	if !a.Valid() {
		return usagef("answer %q: want allow_once, allow_tenant or deny", word)
	}
	approver := strings.TrimSpace(o.as)
	if approver == "" {
		return usagef("--as NAME is required: who answers is recorded as the card's approver")
	}
	db, kind, err := o.store.open(cmd.Context())
	if err != nil {
		return err
	}
	defer db.Close()
	where := kind
	if o.tenant != "" {
		where = fmt.Sprintf("tenant %s in %s", o.tenant, kind)
	}
	c, err := db.Card(cmd.Context(), o.tenant, id)
	switch {
	case errors.Is(err, approval.ErrNotFound):
		return fmt.Errorf("answer %s: no such approval card in %s", id, where)
	case err != nil:
		return fmt.Errorf("answer %s: read the card in %s: %w", id, kind, err)
	case c.State != approval.Pending:
		return fmt.Errorf("answer %s: %s", id, notPending(c))
	case !time.Now().Before(c.Deadline):
		// Its call was denied at the deadline, or the process it waited in stopped and recovery
		// will expire it: an allow now would let nothing run, and must not look as if it had.
		return fmt.Errorf("answer %s: its deadline passed at %s: the call waiting on it has been denied, or the process it waited in stopped; it can no longer run",
			id, c.Deadline.UTC().Format(time.RFC3339))
	}
	broker := approval.NewBroker(approval.Options{Store: db})
	// The card's digest binds the answer to the call shown above, whatever happens meanwhile.
	done, err := broker.Answer(cmd.Context(), o.tenant, id, a, approver, approval.ChannelCLI, c.Digest)
	switch {
	case errors.Is(err, approval.ErrNotPending):
		// Answered, expired or ended between the read and the answer.
		if now, rerr := db.Card(cmd.Context(), o.tenant, id); rerr == nil {
			return fmt.Errorf("answer %s: %s", id, notPending(now))
		}
		return fmt.Errorf("answer %s: %w", id, err)
	case err != nil && done != nil:
		return fmt.Errorf("answer %s: %w", id, err)
	case err != nil:
		return fmt.Errorf("answer %s in %s: %w", id, kind, err)
	}
	w := cmd.OutOrStdout()
	switch a {
	case approval.AllowOnce:
		fmt.Fprintf(w, "allowed %s once: tenant %s may run this call of %s", done.ID, done.Tenant, done.Tool)
	case approval.AllowTenant:
		fmt.Fprintf(w, "allowed %s for tenant %s: this call of %s runs now, and again without asking", done.ID, done.Tenant, done.Tool)
	default:
		fmt.Fprintf(w, "denied %s: tenant %s's call of %s is refused", done.ID, done.Tenant, done.Tool)
	}
	fmt.Fprintf(w, " (answered by %s through cli, in %s)\n", approver, kind)
	return nil
}

// notPending says why a card that has left pending can no longer be answered, as the REST API
// does: answered already (how and by whom), expired at its deadline, or ended with its call.
func notPending(c *approval.Card) string {
	at := c.Answered.UTC().Format(time.RFC3339)
	switch {
	case c.Channel == approval.ChannelCanceled:
		return fmt.Sprintf("the call this card was for ended at %s (its client went away, its session ended, or its server stopped): it can no longer run, whatever the answer", at)
	case c.State == approval.Expired:
		return fmt.Sprintf("the card expired unanswered at %s and the call was denied: it can no longer run", at)
	}
	how := string(c.Answer)
	if c.Approver != "" {
		how += " by " + c.Approver
	}
	if c.Channel != "" {
		how += " through " + string(c.Channel)
	}
	return fmt.Sprintf("the card was already answered (%s, at %s)", how, at)
}
