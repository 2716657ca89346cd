package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// envOptions are the --env flags that stand in for the host environment.
type envOptions struct {
	pairs   []string
	hostEnv bool
}

func (o *envOptions) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&o.pairs, "env", nil,
		"K=V: a host environment variable, for computing any switch setting (repeatable); when given, the real host environment is not read")
	cmd.Flags().BoolVar(&o.hostEnv, "host-env", false, "read the real host environment too, with --env values taking precedence")
}

// lookup returns the environment to read switches from: the host's, unless --env values stand
// in for it.
func (o *envOptions) lookup(host func(string) (string, bool)) (func(string) (string, bool), error) {
	vals := map[string]string{}
	for _, kv := range o.pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--env %q: want NAME=value", kv)
		}
		vals[k] = v
	}
	if len(vals) == 0 {
		return host, nil
	}
	return func(k string) (string, bool) {
		if v, ok := vals[k]; ok {
			return v, true
		}
		if o.hostEnv {
			return host(k)
		}
		return "", false
	}, nil
}
