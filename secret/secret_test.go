package secret_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/wardenhq/warden/secret"
)

const hunter = "hunter2-Value_0x41"

type holder struct {
	Exported secret.Secret
	hidden   secret.Secret
	Ptr      *secret.Secret
	List     []secret.Secret
	Map      map[string]secret.Secret
}

func newHolder() holder {
	s := secret.New(hunter)
	return holder{Exported: s, hidden: s, Ptr: &s, List: []secret.Secret{s}, Map: map[string]secret.Secret{"k": s}}
}

// notLeaked fails if out holds the value or any simple encoding of it.
func notLeaked(t *testing.T, what, out string) {
	t.Helper()
	for _, f := range []string{hunter, fmt.Sprintf("%x", hunter), fmt.Sprintf("%X", hunter), "hunter2"} {
		if strings.Contains(out, f) {
			t.Errorf("%s leaks the value: %s", what, out)
		}
	}
}

func TestSecretNeverPrints(t *testing.T) {
	s := secret.New(hunter)
	h := newHolder()
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %v", "%10.3s", "%p", "%U", "%t"} {
		for _, arg := range []any{s, &s, h, &h, []secret.Secret{s}, map[secret.Secret]int{s: 1}, struct{ s secret.Secret }{s}} {
			out := fmt.Sprintf(verb, arg)
			notLeaked(t, fmt.Sprintf("Sprintf(%q, %T)", verb, arg), out)
		}
	}
	if got := fmt.Sprintf("%v|%s|%#v|%q", s, s, s, s); got != strings.Repeat(secret.Placeholder+"|", 3)+secret.Placeholder {
		t.Errorf("Sprintf = %q; want the placeholder four times", got)
	}
	for name, out := range map[string]string{
		"String":   s.String(),
		"GoString": s.GoString(),
		"Sprint":   fmt.Sprint(s),
		"Sprintln": fmt.Sprintln(s, &s),
		"Errorf":   fmt.Errorf("wrapped %v: %w", s, fmt.Errorf("%s", s)).Error(),
	} {
		notLeaked(t, name, out)
	}
	if s.Reveal() != hunter {
		t.Errorf("Reveal = %q; want the value", s.Reveal())
	}
	if (secret.Secret{}).Reveal() != "" {
		t.Error("the zero Secret does not reveal the empty string")
	}
}

func TestSecretNeverEncodes(t *testing.T) {
	s := secret.New(hunter)
	h := newHolder()
	for _, v := range []any{s, &s, h, &h, map[string]any{"a": []any{s}}, map[secret.Secret]string{s: "x"}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("Marshal(%T): %v", v, err)
		}
		notLeaked(t, fmt.Sprintf("json.Marshal(%T)", v), string(b))
	}
	b, _ := json.Marshal(s)
	if string(b) != `"`+secret.Placeholder+`"` {
		t.Errorf("json.Marshal = %s", b)
	}
	text, _ := s.MarshalText()
	notLeaked(t, "MarshalText", string(text))
}

func TestSecretNeverLogs(t *testing.T) {
	s := secret.New(hunter)
	h := newHolder()
	for name, newHandler := range map[string]func(*bytes.Buffer) slog.Handler{
		"text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		"json": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		var buf bytes.Buffer
		log := slog.New(newHandler(&buf))
		log.Info("value", "s", s, "p", &s, "holder", h, "hp", &h)
		log.Info("attr", slog.Any("s", s), slog.Group("g", slog.Any("s", s)))
		log.With("s", s).WithGroup("x").Info("with", "list", []secret.Secret{s})
		log.Info("fmt", "s", fmt.Sprint(s))
		notLeaked(t, name+" handler", buf.String())
		if !strings.Contains(buf.String(), secret.Placeholder) {
			t.Errorf("%s handler: no placeholder in %s", name, buf.String())
		}
	}
}

func TestTypeValid(t *testing.T) {
	for _, typ := range []secret.Type{secret.TypeCredential, secret.TypeSecret, secret.TypeToken, secret.TypePassword, secret.TypePrivateKey} {
		if !typ.Valid() {
			t.Errorf("%q is not valid", typ)
		}
	}
	for _, typ := range []secret.Type{"", "Token", "api-key", "private_key", "managed"} {
		if typ.Valid() {
			t.Errorf("%q is valid", typ)
		}
	}
}

func TestRegistryNeverPrints(t *testing.T) {
	r := secret.NewRegistry(testScope)
	r.Add(secret.TypeToken, secret.New(hunter))
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("r", "registry", r, "in", struct{ R *secret.Registry }{r})
	slog.New(slog.NewTextHandler(&buf, nil)).Info("r", "registry", r)
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x"} {
		buf.WriteString(fmt.Sprintf(verb, r))
		buf.WriteString(fmt.Sprintf(verb, struct{ r *secret.Registry }{r}))
	}
	notLeaked(t, "printing a registry", buf.String())
	if got := fmt.Sprint(r); got != "secret.Registry{handles: 1}" {
		t.Errorf("Sprint(registry) = %q", got)
	}
}
