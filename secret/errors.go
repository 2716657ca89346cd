package secret

import (
	"errors"
	"strconv"
	"strings"
)

// Errors, matched with errors.Is. No message holds a protected value: a MalformedError quotes
// nothing from inside a declaration, and what the others quote (a handle, a variable name, a
// managed reference's issuer) is redacted of the registry's known values.
var (
	// ErrMalformed: a result used a declaration key ($wardenSensitive, $burrowSensitive,
	// $wardenManaged, $burrowManaged) in any form but a well-formed envelope. The caller
	// withholds the whole result. The error is a *MalformedError.
	ErrMalformed = errors.New("malformed protected-value declaration")
	// ErrLimit: a result declared more values, or more bytes of values, than the registry's
	// Options allow. The caller withholds the whole result.
	ErrLimit = errors.New("too many protected values")

	// ErrInvalidName: a binding's variable name is not an environment variable name.
	ErrInvalidName = errors.New("not a valid environment variable name")
	// ErrUnknownHandle: the string is not a handle of this registry's current values: not a
	// handle at all, or one forgotten at the end of a turn.
	ErrUnknownHandle = errors.New("unknown protected handle")
	// ErrForeignHandle: the handle was issued by another registry (another session or turn).
	ErrForeignHandle = errors.New("protected handle of another registry")
	// ErrManagedHandle: Resolve was given a managed reference, which only ResolveManaged,
	// with its authorisation and provider, may resolve.
	ErrManagedHandle = errors.New("managed reference needs ResolveManaged")

	// ErrNotManaged: ResolveManaged was given the handle of a plain value.
	ErrNotManaged = errors.New("not a managed reference")
	// ErrUnsupportedIssuer: the reference's issuer is not in Options.Issuers.
	ErrUnsupportedIssuer = errors.New("unsupported managed-reference issuer")
	// ErrUnsupportedVersion: the issuer is supported but not the reference's version.
	ErrUnsupportedVersion = errors.New("unsupported managed-reference version")
	// ErrExpired: the reference's lifetime ended at or before now.
	ErrExpired = errors.New("managed reference expired")
	// ErrScopeMismatch: the reference's agent, session or conversation is not exactly the
	// registry's.
	ErrScopeMismatch = errors.New("managed reference of another scope")
	// ErrNotAuthorized: the Authorizer refused, failed, or was nil.
	ErrNotAuthorized = errors.New("managed reference not authorised")
	// ErrNoProvider: no provider of the reference's name was given.
	ErrNoProvider = errors.New("no provider for managed reference")
	// ErrProviderFailed: the provider could not fetch the value.
	ErrProviderFailed = errors.New("managed reference provider failed")
)

// MalformedError says where in a result a declaration is malformed and why. Path is a JSON
// pointer (RFC 6901) to the offending object or member. Reason never quotes anything from
// inside the declaration: the value may sit in any of its fields.
type MalformedError struct {
	Path   string
	Reason string
}

// Error says where and why, quoting nothing from inside the declaration.
func (e *MalformedError) Error() string {
	path := e.Path
	if path == "" {
		path = "/" // the pointer "" is the whole document; "/" reads better in a message
	}
	return "malformed protected-value declaration at " + path + ": " + e.Reason
}

// Is makes errors.Is(err, ErrMalformed) true.
func (e *MalformedError) Is(target error) bool { return target == ErrMalformed }

// BindingError is a protectedBindings entry that cannot be resolved. Name and Handle are
// what the request gave, redacted of the registry's known values (a caller that passed a raw
// value where a handle belongs finds the value's handle here, not the value).
type BindingError struct {
	Name   string
	Handle string
	Err    error
}

// Error names the binding and says what is wrong with it.
func (e *BindingError) Error() string {
	var b strings.Builder
	b.WriteString("binding ")
	b.WriteString(quoteShort(e.Name))
	if e.Handle != "" {
		b.WriteString(" to ")
		b.WriteString(quoteShort(e.Handle))
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the sentinel: ErrInvalidName, ErrUnknownHandle, ErrForeignHandle or
// ErrManagedHandle.
func (e *BindingError) Unwrap() error { return e.Err }

// quoteShort quotes s for a message, cut to a length a person can read.
func quoteShort(s string) string {
	const max = 80
	if len(s) > max {
		s = s[:max] + "…"
	}
	return strconv.Quote(s)
}

// redactedError carries err with a message redacted of a registry's known values.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
