package main

import (
	"strings"
	"testing"
)

// warden audit refuses a filter it cannot apply with a usage error (status 2) naming the flag
// and, for --kind and --decision, the values it may take: an unknown kind used to print
// nothing, which read as "there are no such events".
func TestAuditRefusesBadFilters(t *testing.T) {
	db := newStoreFile(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--kind", "decisions"}, `--kind "decisions": want one of decision, outcome, approval, run, egress, boundaries`},
		{[]string{"--decision", "denied"}, `--decision "denied": want one of allow, ask, deny`},
		{[]string{"--since", "yesterday"}, `--since "yesterday": want an RFC 3339 time`},
		{[]string{"--until", "2026-11-30"}, `--until "2026-11-30": want an RFC 3339 time`},
		{[]string{"--limit", "-1"}, `--limit -1: want a number of events from 1, or 0 for all`},
		{[]string{"--limit", "ten"}, `invalid argument "ten" for "--limit"`},
		{[]string{"--after", "-5"}, `--after -5: want an event id`},
	} {
		stdout, stderr, code := run(t, append([]string{"audit", "--db", db}, tt.args...)...)
		if code != 2 || !strings.Contains(stderr, tt.want) || stdout != "" {
			t.Errorf("audit %v: status %d, stdout %q, stderr %q; want status 2 and %q", tt.args, code, stdout, stderr, tt.want)
		}
	}
	for _, args := range [][]string{{"--kind", "egress"}, {"--decision", "ask", "--kind", "approval"}} {
		if _, stderr, code := run(t, append([]string{"audit", "--db", db}, args...)...); code != 0 {
			t.Errorf("audit %v: status %d: %s", args, code, stderr)
		}
	}
}
