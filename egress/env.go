package egress

import (
	"errors"
	"fmt"
	"strings"
)

// The operator switches FromEnv reads.
const (
	// EnvMode is "open" (any case) for open mode; unset, empty or "allowlist" (any case) is
	// allowlist mode, and any other value is reported and counts as allowlist.
	EnvMode = "SANDBOX_EGRESS"
	// EnvAllowlist, when non-empty, replaces the default allowlist: entries separated by
	// commas or white space.
	EnvAllowlist = "SANDBOX_EGRESS_ALLOWLIST"
)

// A ModeError reports a mode value that is neither open nor allowlist. The mode is then
// allowlist: a typo never opens the network.
type ModeError struct {
	// Value is the value as given.
	Value string
}

func (e *ModeError) Error() string {
	return fmt.Sprintf("%s=%q is neither open nor allowlist, so the egress mode is allowlist", EnvMode, e.Value)
}

// ParseMode reads a mode: "open" or "allowlist" in any case, "" for the default (allowlist).
// Anything else returns ModeAllowlist and a *ModeError. The comparison is the policy's for
// mode switches (case-insensitive, no trimming), so a policy that tests SANDBOX_EGRESS ==
// allowlist and this package always agree on the mode.
func ParseMode(s string) (Mode, error) {
	switch {
	case s == "" || strings.EqualFold(s, "allowlist"):
		return ModeAllowlist, nil
	case strings.EqualFold(s, "open"):
		return ModeOpen, nil
	}
	return ModeAllowlist, &ModeError{Value: s}
}

// Settings are the egress switches as read from the environment.
type Settings struct {
	// Mode is the mode.
	Mode Mode
	// Allowlist is the list: SANDBOX_EGRESS_ALLOWLIST's when it is set and non-empty, else
	// DefaultAllowlist().
	Allowlist *Allowlist
	// Replaced is true when SANDBOX_EGRESS_ALLOWLIST replaced the default list.
	Replaced bool
}

// Options returns Checker options for s, with the system resolver.
func (s Settings) Options() Options {
	return Options{Mode: s.Mode, Allowlist: s.Allowlist}
}

// FromEnv reads SANDBOX_EGRESS and SANDBOX_EGRESS_ALLOWLIST through lookup (os.LookupEnv, or a
// stand-in). The Settings returned are always usable and fail closed:
//
//   - an unknown SANDBOX_EGRESS value gives allowlist mode and a *ModeError, for the start-up
//     banner to print;
//   - a SANDBOX_EGRESS_ALLOWLIST with a bad entry gives an empty list (nothing is listed) and a
//     ListError naming every bad entry; that is a configuration error, and a server should
//     refuse to start on it.
//
// When both are wrong the error joins both (errors.As finds each).
func FromEnv(lookup func(string) (string, bool)) (Settings, error) {
	var errs []error
	raw, _ := lookup(EnvMode)
	mode, err := ParseMode(raw)
	if err != nil {
		errs = append(errs, err)
	}
	s := Settings{Mode: mode, Allowlist: DefaultAllowlist()}
	if v, ok := lookup(EnvAllowlist); ok && v != "" {
		s.Replaced = true
		list, err := ParseAllowlist(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvAllowlist, err))
			list = &Allowlist{}
		}
		s.Allowlist = list
	}
	return s, errors.Join(errs...)
}
