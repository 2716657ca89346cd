// Package boundary holds Warden's hard blocks (requirements A2 and A7): BURROW's stored
// document of rules, its field-by-field validation, and a compiled, immutable [Set] that
// answers "which enabled rules block this operation on this path, or this command?".
//
// # The document
//
// The document is BURROW's, as is:
//
//	{"version":1,"hardBlocks":[{"id":"no-keys","enabled":true,"type":"path",
//	  "pattern":"/home/*/.ssh/**","match":"glob","operations":["read","write"],
//	  "reason":"keys stay put"}]}
//
// [Parse] reads it strictly and reports every problem at once, each naming its field
// ("hardBlocks[3].match"). [Load] is for stored data and never fails: data that does not parse
// or validate gives a Set that blocks every action (boundary_config_invalid). BURROW falls back
// to no rules there; Warden never does.
//
// # Path rules
//
// A path rule applies to the operations it lists; the path checked is absolute and already
// resolved through symbolic links by the caller (CheckPath cleans it lexically once more).
// A leading "~/" in an exact, prefix or glob pattern is the session's home ([Options.Home]).
//
//   - exact: the path equals the pattern (the pattern is cleaned with filepath.Clean).
//   - prefix: the path starts with the pattern, as a string, as BURROW does: "/srv/data" also
//     covers "/srv/database". Write "/srv/data/" for the directory's contents. The pattern is
//     cleaned, keeping a trailing slash.
//   - glob: Warden's glob dialect is doublestar's (github.com/bmatcuk/doublestar/v4), not
//     path.Match's and not Cedar's: "*" and "?" never cross "/", "/**/" is zero or more
//     directories, so "/x/**/*.key" matches "/x/a.key" as well as "/x/a/b/c.key", and
//     "/x/**" matches "/x" itself; "{a,b}" alternatives and "[a-z]" classes work as there.
//     A glob must be able to match an absolute path: "*.env" cannot ("*" stops at "/"),
//     so it is refused; write "**/*.env".
//   - regex: Go's RE2 syntax, unanchored unless the pattern anchors itself (^, $).
//   - contains: the path contains the pattern as a substring.
//
// A recursive effect (rm -r, a recursive copy: the whole tree under the path) matches a rule
// when the rule could match the path or anything below it: an exact pattern equal to the path
// or under path+"/"; a prefix that the path starts with, or that starts with path+"/"; a glob
// that could match the path or a path below it (checked segment by segment). A regex or
// contains rule is checked against the path text only: what lies below is not known, so
// "contains secret" does not block rm -r of a directory holding a file named secret. Write
// such rules as globs or prefixes when the tree matters.
//
// # Command rules
//
// A command rule applies when a command runs (operation execute). It matches the raw command
// text, or any simple command in normalised form (the program's base name, then its
// arguments, joined by single spaces: [CommandText]), so a rule "rm -rf /" catches
// `/bin/rm -rf /`. Command globs are not path globs: "*" matches any run of characters,
// "/" and spaces included, "?" one character, and "\" makes the next character literal;
// there are no classes or alternatives.
//
// # The index
//
// [Compile] builds, per operation, an index whose cost grows slowly with the number of rules:
// exact patterns in a map; prefixes in a radix tree walked once along the path; globs
// bucketed by a literal they require (a literal prefix in the same radix tree, a whole
// literal path segment in a map looked up per path segment, a literal suffix in a radix tree
// walked from the end, or an inner literal), with doublestar run only on candidates;
// contains patterns in an Aho-Corasick automaton that reads the path once; regexes compiled
// once and prefiltered the same way by the literal they must begin with or contain. Rules
// with no usable literal go to short fallback lists. A check that matches nothing allocates
// nothing.
package boundary
