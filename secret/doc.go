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
// variables (protectedBindings) and Registry.Resolve gives the values for that process only;
// Warden's gateway gives a sandboxed process placeholders instead, which its egress proxy
// turns into the values only toward the hosts their source allows (ProtectFrom records the
// source, Source tells it), so redaction is the second line there, not the first.
// Every text the model sees goes through Registry.Redact (or RedactValue, or RedactTexts for
// texts read one after another), which replaces the known values, and runs of them, in the
// encodings below.
//
// A managed reference ($wardenManaged, $burrowManaged) becomes a handle too but holds no
// value: Registry.ResolveManaged checks its issuer and version, its lifetime, that its agent,
// session and conversation are exactly the registry's, and current authorisation, and only
// then asks its provider for the value. Resolve refuses managed handles.
//
// # Sessions of one tenant
//
// Registries made with the same Shared (Options.Shared; Warden's gateway makes one a tenant)
// redact each other's values: a value protected in one session is redacted in all of them. A
// registry writes its own handle for a value it holds, and Redacted ("protected://redacted")
// for a value only others hold; Redacted resolves to nothing, and a handle of another registry
// is refused (ErrForeignHandle), so a session never learns or binds another's value. Values
// live in memory only, while a registry holds them and for SharedOptions.Lifetime after
// (default a day), within SharedOptions' limits (2,048 values, 256 KiB): to make room the
// values no registry holds are forgotten, least recently used first; when every value is held,
// Protect fails with ErrLimit and the result is withheld. A registry made without a Shared
// gets one of its own, forgotten with it.
//
// # What Redact finds
//
// A value of 8 bytes or more (separators aside, see below) is found whole and by any run of
// it that stands for enough of it: at least 8 characters (7 bytes' worth for base64, whose
// characters split bytes), carrying at least 40 bits by the alphabet they use (8 characters of
// letters and digits or of both cases, 9 of one case, 10 hex digits, 13 decimal digits), with
// at least 5 different characters. The rule keeps ids, digests, numbers and words from
// matching a value's run by chance; a run of a random key counts from 8. A value made only of
// hex digits is looked for from 11 of them. These are found, for the whole
// value and for its runs:
//
//   - the value as it is, and reversed;
//   - base64, standard and URL-safe, padded or not, at any alignment (the value anywhere in
//     what was encoded);
//   - base32, standard and extended hex alphabets, upper or lower case, padded or not, and
//     base64 of base64: decoded from a run of base64 characters as an encoder writes it (from
//     the run's first character; base32 whose first five bytes are text, base64 of base64
//     whose first nine are base64), the value anywhere inside;
//   - hex, lower or upper case, with or without separators, with 0x or \x prefixes, and the
//     hex of the value's UTF-16, big- and little-endian (for values of valid UTF-8);
//   - escapes, decoded: %XX (every byte or some, a query's + as a space), \uXXXX (with
//     surrogate pairs), \xXX and JSON's \" \\ \/ \n \t \r \b \f, HTML references (&#NN; and
//     &#xHH;, with or without ';', and the named references of ASCII punctuation), fullwidth
//     forms of ASCII (U+FF01..U+FF5E), and zero-width characters (U+200B..U+200D, U+2060,
//     U+FEFF) between the characters;
//   - any of these with whitespace, ':', ',' or '-' anywhere in them (wrapped base64 or hex,
//     a value spaced out, a hex dump): Redact compares texts without these separators, so they
//     do not count towards the 8 characters either.
//
// Where a run is found, the whole run in the text is replaced, separators and escapes
// included. Of overlapping finds the leftmost wins, then the longest; what is left of the
// other is replaced too, by its own handle (a value's run is never left half shown). A
// registry's own handles in a text are kept whole, even where a value occurs inside one.
// Values shorter than that (from MinRedactLen, 4 bytes, to 7 without separators, or 10 hex
// digits) are found whole only, with their JSON, URL, base64 and hex encodings, as Redact has
// always found them; shorter ones are not looked for.
// Numbers are redacted too, as JSON prints them: a PIN in a number field becomes a string
// holding the handle.
//
// What this is not: data-loss prevention. Not found: a value transformed in other ways
// (encrypted, compressed, spelled out, every other character, base85), encodings nested
// deeper than base64 of base64, base32 or base64 of base64 not written from the start of a run
// of its characters, hex of a value longer than 1 KiB or base64 of one longer than 8 KiB
// (MaxEncodedLen; the value itself always is), a run made only of characters that more than 8
// values share (a common prefix is no one value's secret), and a value reached by a process
// that was given it. Once a process receives a value, that process can use it.
//
// # How it is found, and what it costs
//
// Each value's forms (the value, reversed, its base64 at each alignment) are needles, indexed
// by their 5-byte grams; hex forms, and values of hex digits, by 8-byte grams. A first pass
// over a text (AVX-512 on amd64, Go elsewhere) drops the separators and marks runs of hex
// digits, runs of base64 characters and the bytes that start escapes. The compacted text is
// probed at every fourth position, where any run of 8 bytes holds a gram, through a filter
// of three bits a gram that stops about 99% of the probes at one load (sixteen probes a step,
// with gathers, on AVX-512); the rest are looked up exactly and extended byte by byte, then
// judged as above. Runs of hex digits of 16 or more are probed for hex forms at every eighth
// position of the compacted text, the windows picked from masks of it with bit operations
// (AVX-512) rather than run by run; the runs of base64 characters to judge are found with
// sums over the masks, and those whose first quanta look like base32 or base64 of base64 are
// decoded and scanned; a text with an escape that stands for a byte of a value is scanned
// again decoded. Redact takes time linear in
// the text. With a thousand values, a text that holds none of them is scanned without an
// allocation and returned without a copy, at about 1.2 to 3 GB/s of one core on amd64 with
// AVX-512 (git logs full of digests the slowest, prose the fastest) and 0.3 to 0.6 GB/s in
// Go alone (purego). Measured by BenchmarkRedactClean on a shared two-core virtual machine
// of a Turin-class (Zen 5) processor in a quiet hour, the median of five runs of
//
//	go test -run XXX -bench RedactClean -benchtime 200x ./secret
//
// in cpu-MB/s: prose 3061, code 1515, json 1417, logs 1723, gitlog 1215 (the lowest of the
// five 1160), base64 1320, mixed 1500; with -tags purego (-benchtime 40x, three runs) 628,
// 528, 491, 362, 343, 487, 338. On this kind of machine single runs move by a third either way
// when it is loaded; compare builds side by side (BenchmarkScanRuns runs the scan before and
// after its last change alternately in one process). The index is immutable, so Redact
// takes no lock; a new value grows it (a copy of its filters and the indexing of that
// value), a forgotten one rebuilds it.
//
// # Other decisions
//
//   - A handle names its type ("protected://password/..."), so the model knows what it holds,
//     and the registry that issued it, so that a handle of another session is reported as
//     such; the rest is 128 random bits. It never contains or derives from the value.
//   - Envelopes are strict: exactly the listed members, no "label". A malformed envelope
//     fails the whole Protect call (ErrMalformed) and keeps none of its handles: the handles
//     are staged and only committed when the whole result was well formed.
//   - The same value declared twice with the same type keeps one handle.
//
// Secrets never print: Secret formats, encodes and logs as Placeholder; a Registry and a
// Shared print and log as their counts. Values are held in memory only, and Forget drops a
// registry's at the end of a turn.
package secret
