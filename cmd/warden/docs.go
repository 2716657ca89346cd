package main

import (
	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/permissions"
)

func newDocsCmd(root *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "docs",
		Short: "Print the permissions page (Markdown) generated from the policy",
		Long: `Print the permissions page: per role, the tools given and those not given with the
reason; per profile what it holds and loses; every server's catalog, read table, gates and
withheld tools; every operator switch with its truth rule; and every blocker code.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := root.load(cmd)
			if err != nil {
				return err
			}
			return permissions.Render(cmd.OutOrStdout(), p)
		},
	}
}
