package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/policy"
)

// defaultConfig is the file read when -c is not given.
const defaultConfig = "warden.yaml"

type rootOptions struct {
	config string
}

func newRootCmd() *cobra.Command {
	opts := &rootOptions{}
	root := &cobra.Command{
		Use:           "warden",
		Short:         "Permissions and execution boundaries for AI agents",
		Long:          "Warden decides which tools each agent session holds, reviews every call, and records why." + envHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return applyEnv(cmd, os.LookupEnv)
		},
	}
	root.PersistentFlags().StringVarP(&opts.config, "config", "c", "",
		"policy file (default ./"+defaultConfig+", else the built-in quickstart policy)")
	root.AddCommand(newCheckCmd(opts), newSurfaceCmd(opts), newReviewCmd(opts), newDocsCmd(opts),
		newServeCmd(opts), newMCPCmd(opts), newTokenCmd(opts), newBoundariesCmd(opts), newAuditCmd(), newApprovalsCmd(), newPinCmd(opts), newDiscoverCmd(opts),
		newEgressCmd(), newExecCmd(), newVersionCmd(), newExportCmd(opts), newImportCmd(opts), newHookCmd(opts))
	root.AddCommand(newInitCmd())
	documentEnv(root)
	return root
}

// policyBytes returns the policy text and the name to report it under.
func (o *rootOptions) policyBytes() (string, []byte, error) {
	if o.config != "" {
		data, err := os.ReadFile(o.config)
		if err != nil {
			return "", nil, fmt.Errorf("read policy: %w", err)
		}
		return o.config, data, nil
	}
	data, err := os.ReadFile(defaultConfig)
	switch {
	case err == nil:
		return defaultConfig, data, nil
	case errors.Is(err, fs.ErrNotExist):
		return examples.QuickstartName, examples.Quickstart, nil
	default:
		return "", nil, fmt.Errorf("read policy: %w", err)
	}
}

// load compiles the policy, printing every problem and failing with status 1 on any.
func (o *rootOptions) load(cmd *cobra.Command) (*policy.Policy, error) {
	name, data, err := o.policyBytes()
	if err != nil {
		return nil, err
	}
	p, err := parsePolicy(name, data)
	var list policy.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			fmt.Fprintln(cmd.ErrOrStderr(), e)
		}
		return nil, &exitError{code: 1}
	}
	return p, err
}

// parsePolicy compiles a policy and checks the hard blocks it writes (package boundary judges
// those): a policy whose rules do not validate is as invalid as one whose YAML does not.
func parsePolicy(name string, data []byte) (*policy.Policy, error) {
	p, err := policy.Parse(name, data)
	if err != nil {
		return nil, err
	}
	if _, err := boundary.FromPolicy(p); err != nil {
		return nil, err
	}
	return p, nil
}
