package secret

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The declaration keys. Warden's own names, and BURROW's, accepted alike.
const (
	KeySensitive       = "$wardenSensitive"
	KeySensitiveBurrow = "$burrowSensitive"
	KeyManaged         = "$wardenManaged"
	KeyManagedBurrow   = "$burrowManaged"
)

var declarationKeys = [...]string{KeySensitive, KeySensitiveBurrow, KeyManaged, KeyManagedBurrow}

// Protect walks a decoded JSON value (map[string]any, []any, string, float64, json.Number,
// bool, nil) and returns it with every envelope replaced by its handle (P1), and with every
// other string (keys too) redacted of the registry's values, those of this result included.
// The input is never modified; the output shares the parts that did not change.
//
// A value envelope is an object with exactly one member, $wardenSensitive or
// $burrowSensitive, whose value is an object with exactly two members: "type", one of the
// five Types, and "value", a string. No "label" or other member is allowed: the stricter the
// form, the sooner a producer's mistake shows. The same value declared twice with the same
// type gets the same handle.
//
// A managed envelope is an object with exactly one member, $wardenManaged or $burrowManaged,
// whose value is an object with exactly the members issuer, version, expires (RFC 3339),
// agent, session, conversation, provider and ref, each a non-empty string. It becomes a
// handle of kind "managed" holding no value; see ResolveManaged. Its issuer, version, scope
// and lifetime are checked when it is used, not here.
//
// Any other use of a declaration key is malformed: a declaration object with other members,
// a member missing, extra, of the wrong type, or an unknown type; and an object key that
// contains a declaration key without being one (an envelope serialised into a key). Then
// Protect returns a *MalformedError (errors.Is ErrMalformed) with the place as a JSON
// pointer; the caller must withhold the whole result, and no handle made by this call is
// kept. String values that mention a declaration key are ordinary text: documentation does.
//
// A declaration that would take the registry past its Options' limits fails with ErrLimit,
// and a Go value of another type with an error; the result is withheld in both cases too.
func (r *Registry) Protect(v any) (any, error) { return r.ProtectFrom("", v) }

// ProtectFrom is Protect for a value that source produced (a server's id, such as a
// connector's): each new handle remembers it, and Source tells it, so that a protected value
// is only ever sent where its source says it may go.
func (r *Registry) ProtectFrom(source string, v any) (any, error) {
	r.st.mu.Lock()
	w := protectWalk{s: r.stage()}
	w.s.source = source
	out, _, err := w.walk(v)
	if err != nil {
		r.st.mu.Unlock()
		var me *MalformedError
		if errors.As(err, &me) {
			me.Path = r.Redact(me.Path) // the path is made of the result's keys
		}
		return nil, err // the staged entries are dropped with w
	}
	if err := w.s.commit(false); err != nil {
		r.st.mu.Unlock()
		return nil, fmt.Errorf("protect: %w", err) // the Shared is full of values in use
	}
	r.st.mu.Unlock()
	return r.RedactValue(out), nil
}

// ProtectText is Protect for a text that may be a JSON document, such as an MCP text
// content block. A text that mentions no declaration key, or that is not one JSON value,
// is only redacted. Otherwise it is decoded, protected and encoded again (compactly, numbers
// as they were); errors are Protect's.
func (r *Registry) ProtectText(s string) (string, error) {
	if !mentionsDeclaration(s) {
		return r.Redact(s), nil
	}
	if !json.Valid([]byte(s)) {
		return r.Redact(s), nil
	}
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return r.Redact(s), nil // unreachable: the text is valid JSON
	}
	out, err := r.Protect(v)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return "", fmt.Errorf("encode protected text: %w", err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func mentionsDeclaration(s string) bool {
	if !strings.Contains(s, "$") {
		return false
	}
	for _, k := range declarationKeys {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

// protectWalk replaces envelopes with staged handles; r.st.mu is held.
type protectWalk struct {
	s    *staging
	path []string // JSON pointer tokens of the place being walked
}

// walk returns v with its envelopes replaced, and whether anything changed.
func (w *protectWalk) walk(v any) (any, bool, error) {
	switch x := v.(type) {
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			if strings.IndexByte(k, '$') >= 0 {
				if slices.Contains(declarationKeys[:], k) {
					n := len(w.path)
					h, err := w.envelope(k, x)
					w.path = w.path[:n]
					return h, true, err
				}
				if mentionsDeclaration(k) {
					// The key itself is not in the message: it may hold a serialised value.
					return nil, false, w.malformed("an object key holds a declaration key")
				}
			}
			w.path = append(w.path, k)
			ne, changed, err := w.walk(e)
			if err != nil {
				return nil, false, err
			}
			w.path = w.path[:len(w.path)-1]
			if changed {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = ne
			}
		}
		if out != nil {
			return out, true, nil
		}
	case []any:
		var out []any
		for i, e := range x {
			w.path = append(w.path, strconv.Itoa(i))
			ne, changed, err := w.walk(e)
			if err != nil {
				return nil, false, err
			}
			w.path = w.path[:len(w.path)-1]
			if changed {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = ne
			}
		}
		if out != nil {
			return out, true, nil
		}
	case string, float64, json.Number, bool, nil:
	default:
		return nil, false, fmt.Errorf("protect: %T at %s is not a decoded JSON value", v, w.pointer())
	}
	return v, false, nil
}

// envelope checks the declaration object obj, whose key is key, and returns its handle.
func (w *protectWalk) envelope(key string, obj map[string]any) (string, error) {
	if len(obj) != 1 {
		return "", w.malformed(key + " must be the only member of its object")
	}
	w.path = append(w.path, key)
	inner, ok := obj[key].(map[string]any)
	if !ok {
		return "", w.malformed("the declaration must be an object")
	}
	if key == KeySensitive || key == KeySensitiveBurrow {
		return w.sensitive(inner)
	}
	return w.managed(inner)
}

func (w *protectWalk) sensitive(inner map[string]any) (string, error) {
	typ, err := w.str(inner, "type")
	if err != nil {
		return "", err
	}
	value, err := w.str(inner, "value")
	if err != nil {
		return "", err
	}
	if len(inner) != 2 {
		return "", w.malformed("unexpected member: only type and value are allowed")
	}
	if !Type(typ).Valid() {
		w.path = append(w.path, "type")
		return "", w.malformed("type is not credential, secret, token, password or private-key")
	}
	if w.s.full(len(value)) {
		return "", fmt.Errorf("protect: at %s: %w", w.pointer(), ErrLimit)
	}
	return w.s.plain(Type(typ), value), nil
}

var managedFields = [...]string{"issuer", "version", "expires", "agent", "session", "conversation", "provider", "ref"}

func (w *protectWalk) managed(inner map[string]any) (string, error) {
	var f [len(managedFields)]string
	for i, name := range managedFields {
		s, err := w.str(inner, name)
		if err != nil {
			return "", err
		}
		if s == "" {
			w.path = append(w.path, name)
			return "", w.malformed(name + " is empty")
		}
		f[i] = s
	}
	if len(inner) != len(managedFields) {
		return "", w.malformed("unexpected member: only " + strings.Join(managedFields[:], ", ") + " are allowed")
	}
	expires, err := time.Parse(time.RFC3339, f[2])
	if err != nil {
		w.path = append(w.path, "expires")
		return "", w.malformed("expires is not an RFC 3339 time")
	}
	if w.s.full(0) {
		return "", fmt.Errorf("protect: at %s: %w", w.pointer(), ErrLimit)
	}
	return w.s.managed(Managed{
		Issuer: f[0], Version: f[1], Expires: expires,
		Agent: f[3], Session: f[4], Conversation: f[5],
		Provider: f[6], Ref: f[7],
	}), nil
}

// str returns the string member name of a declaration.
func (w *protectWalk) str(inner map[string]any, name string) (string, error) {
	v, ok := inner[name]
	if !ok {
		return "", w.malformed("missing " + name)
	}
	s, ok := v.(string)
	if !ok {
		w.path = append(w.path, name)
		return "", w.malformed(name + " is not a string")
	}
	return s, nil
}

func (w *protectWalk) malformed(reason string) error {
	return &MalformedError{Path: w.pointer(), Reason: reason}
}

// pointer returns the JSON pointer of the place being walked.
func (w *protectWalk) pointer() string {
	var b strings.Builder
	for _, t := range w.path {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}
