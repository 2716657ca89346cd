package secret

import (
	"fmt"
	"log/slog"
)

// Placeholder is what a Secret prints as, whichever way it is printed, encoded or logged.
const Placeholder = "[protected]"

// Secret holds a sensitive value. Printing or logging it in any way (String, GoString, Format
// with every verb, MarshalJSON, MarshalText, slog's LogValue) gives Placeholder, never the
// value; Reveal gives the value. The zero Secret holds the empty string.
//
// The value sits behind a pointer so that a reflection-based printer that walks into a struct
// holding a Secret in an unexported field (fmt's %+v does) finds an address, not the value.
// Secrets are immutable and safe to share between goroutines.
type Secret struct {
	v *string
}

// New returns a Secret holding value.
func New(value string) Secret { return Secret{v: &value} }

// Reveal returns the value. Call it only where the value leaves Warden on purpose: into a
// process's environment or an upstream's credential header.
func (s Secret) Reveal() string {
	if s.v == nil {
		return ""
	}
	return *s.v
}

// String returns Placeholder.
func (Secret) String() string { return Placeholder }

// GoString returns Placeholder, for %#v.
func (Secret) GoString() string { return Placeholder }

// Format writes Placeholder for every verb and flag, so that %x or %q cannot reach the value.
func (Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(Placeholder)) }

// MarshalJSON returns Placeholder as a JSON string.
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + Placeholder + `"`), nil }

// MarshalText returns Placeholder.
func (Secret) MarshalText() ([]byte, error) { return []byte(Placeholder), nil }

// LogValue returns Placeholder, so that slog never sees the value.
func (Secret) LogValue() slog.Value { return slog.StringValue(Placeholder) }

var (
	_ fmt.Stringer   = Secret{}
	_ fmt.GoStringer = Secret{}
	_ fmt.Formatter  = Secret{}
	_ slog.LogValuer = Secret{}
)

// Type is the kind of a protected value, as a producer declares it. It is part of the
// value's handle, so that the model knows what a handle stands for.
type Type string

// The five types a declaration may carry.
const (
	TypeCredential Type = "credential"
	TypeSecret     Type = "secret"
	TypeToken      Type = "token"
	TypePassword   Type = "password"
	TypePrivateKey Type = "private-key"
)

// Valid reports whether t is one of the five types.
func (t Type) Valid() bool {
	switch t {
	case TypeCredential, TypeSecret, TypeToken, TypePassword, TypePrivateKey:
		return true
	}
	return false
}
