package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/policy"
)

func newCheckCmd(root *rootOptions) *cobra.Command {
	var envFlags envOptions
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Validate the policy",
		Long: `Validate the policy file. Every problem is printed as file:line:col: message, all of
them at once; the exit status is 0 for a valid policy and 1 for an invalid one. Warnings (a
pattern that matches nothing, say) and switch values a rule does not recognise are printed but
do not fail the check.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			name, data, err := root.policyBytes()
			if err != nil {
				return err
			}
			p, err := parsePolicy(name, data)
			var list policy.ErrorList
			if errors.As(err, &list) {
				for _, e := range list {
					fmt.Fprintln(cmd.OutOrStdout(), e)
				}
				return &exitError{code: 1}
			}
			if err != nil {
				return err
			}
			for _, w := range p.Warnings() {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
			}
			lookup, err := envFlags.lookup(os.LookupEnv)
			if err != nil {
				return err
			}
			for _, r := range p.Env(lookup).Reports() {
				fmt.Fprintln(cmd.ErrOrStderr(), "switch:", r)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: valid (revision %s): %s in %s, %s, %s, %s\n",
				name, p.Revision, things(p.NumTools(), "tool"), things(p.NumServers(), "server"), things(count(p.Roles()), "role"),
				things(count(p.Profiles()), "profile"), things(count(p.Tenants()), "tenant"))
			return nil
		},
	}
	envFlags.register(cmd)
	return cmd
}

// things says n things: "1 server", "2 servers".
func things(n int, thing string) string {
	return fmt.Sprintf("%d %s", n, plural(n, thing, thing+"s"))
}

func count[T any](seq func(func(T) bool)) int {
	n := 0
	for range seq {
		n++
	}
	return n
}
