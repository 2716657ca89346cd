package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every flag of every command can also be set by an environment variable, named after it:
// WARDEN_ and the flag's long name in capitals with dashes as underscores (--addr is
// WARDEN_ADDR, --postgres-schema WARDEN_POSTGRES_SCHEMA). A flag given on the command line wins
// over its variable; a variable whose value the flag would refuse is a usage error that names
// the variable. A database URL with a password need not be on a command line, where every user
// of the host can read it.

// envPrefix starts the name of every flag's environment variable.
const envPrefix = "WARDEN_"

// envName is the environment variable that sets a flag.
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// envSkipped are flags no variable sets: asking for help is not configuration.
func envSkipped(f *pflag.Flag) bool { return f.Name == "help" }

// applyEnv sets each flag of cmd (its own and those it inherits) that the command line left
// unset from its environment variable, if lookup finds one.
func applyEnv(cmd *cobra.Command, lookup func(string) (string, bool)) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || envSkipped(f) {
			return
		}
		name := envName(f.Name)
		v, ok := lookup(name)
		if !ok {
			return
		}
		if serr := cmd.Flags().Set(f.Name, v); serr != nil {
			err = usagef("%s=%q: not a valid value for --%s: %v", name, v, f.Name, serr)
			return
		}
		_ = cmd.Flags().SetAnnotation(f.Name, envAnnotation, []string{name})
	})
	return err
}

// envAnnotation marks a flag set from its environment variable.
const envAnnotation = "warden_env"

// flagOrigin names where a flag's value came from, for an error about it: "--addr", or
// "WARDEN_ADDR" when its variable set it.
func flagOrigin(fs *pflag.FlagSet, name string) string {
	if f := fs.Lookup(name); f != nil {
		if v := f.Annotations[envAnnotation]; len(v) == 1 {
			return v[0]
		}
	}
	return "--" + name
}

// documentEnv adds each flag's variable to its help text, in cmd and every command under it.
func documentEnv(cmd *cobra.Command) {
	note := func(f *pflag.Flag) {
		if envSkipped(f) || strings.Contains(f.Usage, "$"+envName(f.Name)) {
			return
		}
		f.Usage += " [$" + envName(f.Name) + "]"
	}
	cmd.LocalFlags().VisitAll(note)
	cmd.PersistentFlags().VisitAll(note)
	for _, c := range cmd.Commands() {
		documentEnv(c)
	}
}

// envHelp is the paragraph each command's long help ends with.
const envHelp = `

Every flag can also be set by an environment variable: WARDEN_ and the flag's name in capitals,
dashes as underscores (--addr: WARDEN_ADDR, --postgres: WARDEN_POSTGRES). A flag given on the
command line wins over its variable.`
