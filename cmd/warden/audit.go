package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
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
and end. Times are RFC 3339. Use --after ID to continue from an event. A filter no event can
match (an unknown --kind or --decision, a time that is not RFC 3339) is a usage error.`,
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
					return usagef("%s %q: want an RFC 3339 time, such as 2026-11-30T12:00:00Z", tf.flag, tf.value)
				}
				*tf.dst = t
			}
			// An unknown kind or decision would print nothing, which reads as "no such events".
			var fe *audit.FilterError
			if err := o.filter.Check(); errors.As(err, &fe) {
				return usagef("--%s %q: want one of %s", fe.Field, fe.Value, strings.Join(fe.Allowed, ", "))
			}
			if o.filter.Limit < 0 {
				return usagef("--limit %d: want a number of events from 1, or 0 for all", o.filter.Limit)
			}
			if o.filter.AfterID < 0 {
				return usagef("--after %d: want an event id (a whole number from 0)", o.filter.AfterID)
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
	f.StringVar(&o.filter.Harness, "harness", "", "only the decisions judged for this agent runtime (claude-code, ...) through POST /api/v1/review")
	f.StringVar(&o.since, "since", "", "only events at or after this time (RFC 3339)")
	f.StringVar(&o.until, "until", "", "only events before this time (RFC 3339)")
	f.Int64Var(&o.filter.AfterID, "after", 0, "only events after this id")
	f.IntVar(&o.filter.Limit, "limit", 0, "at most this many events (0: all)")
	o.store.register(cmd)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	cmd.AddCommand(newAuditVerifyCmd())
	return cmd
}

func newAuditVerifyCmd() *cobra.Command {
	var (
		store storeOptions
		file  string
	)
	cmd := &cobra.Command{
		Use:   "verify [--db FILE | --postgres URL | --file EXPORT]",
		Short: "Prove that the audit trail was not changed: recompute every tenant's hash chain",
		Long: `Recompute every tenant's hash chain of the audit trail, from the store or from an export
(--file, JSON lines as "warden audit" writes them), and, from a store, check every signed
checkpoint against the instances' recorded keys and the chain. On a clean trail it prints
"ok: N events in M tenant chains" and exits 0. Otherwise it names the first event that does
not match (its id and tenant) and why: its content changed, an event before it is missing,
events are out of order, it has no hash, or a checkpoint does not match; and exits 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file != "" && (store.db != "" || store.postgres != "") {
				return usagef("--file %q: give a store (--db, --postgres) or an export (--file), not both", file)
			}
			var (
				sum audit.VerifySummary
				err error
			)
			if file != "" {
				f, ferr := os.Open(file)
				if ferr != nil {
					return ferr
				}
				defer f.Close()
				sum, err = audit.VerifyJSONL(f)
			} else {
				db, _, oerr := store.open(cmd.Context())
				if oerr != nil {
					return oerr
				}
				defer db.Close()
				sum, err = audit.VerifyLog(cmd.Context(), db)
			}
			var ce *audit.ChainError
			if errors.As(err, &ce) {
				fmt.Fprintf(cmd.OutOrStdout(), "TAMPERED: event %d (tenant %q): %s: %s\n", ce.ID, ce.Tenant, ce.Reason, ce.Detail)
				return &exitError{code: 1}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ok: %d events in %d tenant chains", sum.Chained, sum.Chains)
			if file == "" {
				fmt.Fprintf(cmd.OutOrStdout(), ", %d signed checkpoints checked", sum.Checkpoints)
			}
			if sum.Unchained > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "; %d earlier events were recorded before the chain existed and cannot be checked", sum.Unchained)
			}
			fmt.Fprintln(cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "verify this export (JSON lines) instead of a store; checkpoints are in the store only")
	store.register(cmd)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	return cmd
}
