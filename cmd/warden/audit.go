package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/audit"
)

type auditOptions struct {
	store        storeOptions
	filter       audit.Filter
	since, until string
}

func newAuditCmd() *cobra.Command {
	o := &auditOptions{}
	cmd := &cobra.Command{
		Use:   "audit [--db FILE | --postgres URL] [--tenant T] [--session S] [--tool NAME] [--decision D] [--kind K] [--since TIME] [--until TIME]",
		Short: "Export the audit trail as JSON lines",
		Long: `Print the audit trail, one JSON event per line, oldest first: every decision (with its
blockers, rule ids, approver and spend), every approval answer, every outcome, every run start
and end. Times are RFC 3339. Use --after ID to continue from an event.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, tf := range []struct {
				flag, value string
				dst         *time.Time
			}{{"--since", o.since, &o.filter.Since}, {"--until", o.until, &o.filter.Until}} {
				if tf.value == "" {
					continue
				}
				t, err := time.Parse(time.RFC3339Nano, tf.value)
				if err != nil {
					return fmt.Errorf("%s %q: want an RFC 3339 time", tf.flag, tf.value)
				}
				*tf.dst = t
			}
			db, _, err := o.store.open(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			// Page through, so an export of any size holds a bounded number of events.
			f := o.filter
			limit := f.Limit
			for {
				f.Limit = 1000
				if limit > 0 && limit < f.Limit {
					f.Limit = limit
				}
				events, err := db.Query(cmd.Context(), f)
				if err != nil {
					return err
				}
				if err := audit.WriteJSONL(cmd.OutOrStdout(), events); err != nil {
					return err
				}
				if limit > 0 {
					limit -= len(events)
					if limit <= 0 {
						return nil
					}
				}
				if len(events) < f.Limit {
					return nil
				}
				f.AfterID = events[len(events)-1].ID
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.filter.Tenant, "tenant", "", "only this tenant's events")
	f.StringVar(&o.filter.Session, "session", "", "only this session's events")
	f.StringVar(&o.filter.Tool, "tool", "", "only calls of this tool")
	f.StringVar(&o.filter.Decision, "decision", "", "only this decision: allow, ask or deny")
	f.StringVar(&o.filter.Kind, "kind", "", "only this kind: decision, approval, outcome, run, egress or boundaries")
	f.StringVar(&o.filter.CallID, "call", "", "only the events of one call")
	f.StringVar(&o.since, "since", "", "only events at or after this time (RFC 3339)")
	f.StringVar(&o.until, "until", "", "only events before this time (RFC 3339)")
	f.Int64Var(&o.filter.AfterID, "after", 0, "only events after this id")
	f.IntVar(&o.filter.Limit, "limit", 0, "at most this many events (0: all)")
	o.store.register(cmd)
	return cmd
}
