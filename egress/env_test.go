package egress_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/egress"
)

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseMode(t *testing.T) {
	for _, tt := range []struct {
		give string
		want egress.Mode
		bad  bool
	}{
		{"", egress.ModeAllowlist, false},
		{"allowlist", egress.ModeAllowlist, false},
		{"AllowList", egress.ModeAllowlist, false},
		{"open", egress.ModeOpen, false},
		{"OPEN", egress.ModeOpen, false},
		{"oPeN", egress.ModeOpen, false},
		{"opne", egress.ModeAllowlist, true},
		{" open", egress.ModeAllowlist, true},
		{"true", egress.ModeAllowlist, true},
		{"off", egress.ModeAllowlist, true},
	} {
		got, err := egress.ParseMode(tt.give)
		var me *egress.ModeError
		if got != tt.want || errors.As(err, &me) != tt.bad {
			t.Errorf("ParseMode(%q) = %s, %v; want %s, error %v", tt.give, got, err, tt.want, tt.bad)
		}
	}
}

func TestFromEnv(t *testing.T) {
	s, err := egress.FromEnv(env())
	if err != nil || s.Mode != egress.ModeAllowlist || s.Allowlist != egress.DefaultAllowlist() || s.Replaced {
		t.Errorf("empty environment: %+v, %v", s, err)
	}

	s, err = egress.FromEnv(env(egress.EnvMode, "Open", egress.EnvAllowlist, "allowed.test, 203.0.113.0/24"))
	if err != nil || s.Mode != egress.ModeOpen || !s.Replaced || !slices.Equal(s.Allowlist.Entries(), []string{"allowed.test", "203.0.113.0/24"}) {
		t.Errorf("open with a list: %+v, %v", s, err)
	}
	if o := s.Options(); o.Mode != egress.ModeOpen || o.Allowlist != s.Allowlist {
		t.Errorf("Options() = %+v", o)
	}

	s, err = egress.FromEnv(env(egress.EnvMode, "opem", egress.EnvAllowlist, ""))
	var me *egress.ModeError
	if !errors.As(err, &me) || s.Mode != egress.ModeAllowlist || s.Allowlist != egress.DefaultAllowlist() {
		t.Errorf("typo: %+v, %v; want allowlist mode, the default list and a ModeError", s, err)
	}
	if !strings.Contains(err.Error(), `SANDBOX_EGRESS="opem"`) || !strings.Contains(err.Error(), "allowlist") {
		t.Errorf("the banner message %q should name the value and the mode used", err)
	}

	s, err = egress.FromEnv(env(egress.EnvMode, "nope", egress.EnvAllowlist, "github.com,10.0.0.0/8,*"))
	var list egress.ListError
	if !errors.As(err, &list) || len(list) != 2 || !errors.As(err, &me) {
		t.Fatalf("bad list and typo: %v; want both errors", err)
	}
	if s.Allowlist.Len() != 0 || s.Mode != egress.ModeAllowlist {
		t.Errorf("a bad list must fail closed: %v entries, mode %s", s.Allowlist.Entries(), s.Mode)
	}
	if !strings.Contains(err.Error(), "SANDBOX_EGRESS_ALLOWLIST: allowlist entry 2 (\"10.0.0.0/8\")") {
		t.Errorf("error does not name the variable, the entry and its position:\n%v", err)
	}
}
