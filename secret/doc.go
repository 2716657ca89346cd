// Package secret keeps protected values away from the model (requirements P1-P5).
//
// Tool results pass through Warden's gateway before the model sees them. A producer marks a
// value as sensitive with an envelope,
//
//	{"$wardenSensitive": {"type": "token", "value": "ghp_..."}}
//
// ($burrowSensitive is accepted too), and Registry.Protect replaces the envelope with an
// opaque handle, "protected://token/<registry id>.<random id>", keeping the value in the
// session's in-memory Registry. A later process request binds handles to environment
// variables (protectedBindings) and Registry.Resolve gives the values for that process only.
// Every text the model sees goes through Registry.Redact (or RedactValue), which replaces
// each known value, and its base64, URL, hex and JSON-escaped forms, with its handle.
//
// A managed reference ($wardenManaged, $burrowManaged) becomes a handle too but holds no
// value: Registry.ResolveManaged checks its issuer and version, its lifetime, that its agent,
// session and conversation are exactly the registry's, and current authorisation, and only
// then asks its provider for the value. Resolve refuses managed handles.
//
// Decisions, where the requirements leave a choice:
//
//   - A handle names its type ("protected://password/..."), so the model knows what it holds,
//     and the registry that issued it, so that a handle of another session is reported as
//     such; the rest is 128 random bits. It never contains or derives from the value.
//   - Envelopes are strict: exactly the listed members, no "label". A malformed envelope
//     fails the whole Protect call (ErrMalformed) and keeps none of its handles: the handles
//     are staged and only committed when the whole result was well formed.
//   - The same value declared twice with the same type keeps one handle.
//   - Values shorter than MinRedactLen (4 bytes) are protected where declared, but Redact does
//     not search for them or their encodings elsewhere.
//   - Redaction is leftmost-longest: of overlapping occurrences the one that starts first
//     wins, and of those the longest. A registry's own handles are kept whole.
//   - Numbers are redacted too, as JSON prints them: a PIN in a number field becomes a string
//     holding the handle.
//
// What this is not: data-loss prevention. A value transformed in any way but the listed
// encodings, split across lines, or reached by a process that was given it, is not found.
// Once a process receives a value, that process can use it.
//
// Secrets never print: Secret formats, encodes and logs as Placeholder. Registries hold values
// in memory only, and Forget drops them all at the end of a turn.
package secret
