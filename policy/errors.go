package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Pos is a place in a policy document: 1-based line and column. The zero Pos means "no place"
// (a built-in default, or a policy built in code).
type Pos struct {
	Line, Col int
	// Doc is 0 for the policy file, and i+1 for the place in the i-th object overlaid on it
	// (see ParseOverlay).
	Doc int
}

// IsValid reports whether p names a place.
func (p Pos) IsValid() bool { return p.Line > 0 }

// Node carries the positions of a decoded YAML mapping: where it starts, and where the value of
// each key it held starts. Every config struct embeds one.
type Node struct {
	// Pos is where the mapping starts.
	Pos Pos
	// Keys maps each key present in the document to the position of its value.
	Keys map[string]Pos
}

// At returns the position of key's value, or of the mapping when the key was not written.
func (n Node) At(key string) Pos {
	if p, ok := n.Keys[key]; ok {
		return p
	}
	return n.Pos
}

// Has reports whether key was written in the document.
func (n Node) Has(key string) bool {
	_, ok := n.Keys[key]
	return ok
}

// Error is one problem found in a policy document, at a place.
type Error struct {
	File string
	Pos  Pos
	Msg  string
	// Object names the overlaid object the problem is in (Doc.Source), when Pos.Doc is not 0;
	// Pointer is the JSON pointer (RFC 6901) of the value in it ("" for the object itself).
	Object, Pointer string
}

func (e *Error) Error() string {
	if e.Pos.Doc > 0 {
		if e.Pointer == "" {
			return e.Object + ": " + e.Msg
		}
		return e.Object + ": " + e.Pointer + ": " + e.Msg
	}
	file := e.File
	if file == "" {
		file = "<policy>"
	}
	if !e.Pos.IsValid() {
		return file + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d:%d: %s", file, e.Pos.Line, e.Pos.Col, e.Msg)
}

// ErrorList is every problem found in a document, in document order. Load returns all of them
// at once rather than stopping at the first.
type ErrorList []*Error

func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find each Error.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// ErrInvalid is matched (with errors.Is) by every ErrorList.
var ErrInvalid = errors.New("invalid policy")

// Is makes errors.Is(err, ErrInvalid) true for an ErrorList.
func (l ErrorList) Is(target error) bool { return target == ErrInvalid }

// problems collects errors and warnings while a document is decoded and compiled.
type problems struct {
	file     string
	errs     ErrorList
	warnings ErrorList
	// docs are the objects overlaid on the file, to name a place in one (Pos.Doc).
	docs []*overlaid
}

func (p *problems) errorf(at Pos, format string, args ...any) {
	p.errs = append(p.errs, p.at(at, fmt.Sprintf(format, args...)))
}

func (p *problems) warnf(at Pos, format string, args ...any) {
	p.warnings = append(p.warnings, p.at(at, fmt.Sprintf(format, args...)))
}

// at is a problem at a place, of the file or of an overlaid object.
func (p *problems) at(pos Pos, msg string) *Error {
	e := &Error{File: p.file, Pos: pos, Msg: msg}
	if pos.Doc > 0 && pos.Doc <= len(p.docs) {
		d := p.docs[pos.Doc-1]
		e.File, e.Object, e.Pointer = d.Source, d.Source, d.pointer(pos)
	}
	return e
}

// sorted returns the errors in document order, each message once per place.
func sortErrors(l ErrorList) ErrorList {
	slices.SortStableFunc(l, func(a, b *Error) int {
		if a.Pos.Doc != b.Pos.Doc {
			return a.Pos.Doc - b.Pos.Doc
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line - b.Pos.Line
		}
		return a.Pos.Col - b.Pos.Col
	})
	return slices.CompactFunc(l, func(a, b *Error) bool { return *a == *b })
}
