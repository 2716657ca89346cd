package manage

import (
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// This file holds the types of the management plane's Service as the shared design gives them,
// so that the server's routes compile against them; the Service itself replaces it.

// Source says where an object comes from: the policy file (read-only through the API) or the
// store.
type Source string

// The sources of an object.
const (
	SourcePolicy Source = "policy"
	SourceStore  Source = "store"
)

// Item is an object as the API shows it.
type Item struct {
	Kind     Kind            `json:"kind"`
	ID       string          `json:"id"`
	Tenant   string          `json:"tenant"`
	Source   Source          `json:"source"`
	Revision int64           `json:"revision"` // 0 for source "policy"
	By       string          `json:"updatedBy,omitempty"`
	Updated  *time.Time      `json:"updated,omitempty"`
	Data     json.RawMessage `json:"data"`              // the object, as PUT takes it
	Problem  string          `json:"problem,omitempty"` // a stored object the policy in force refuses (left out)
}

// Problem is one problem of a write that does not validate.
type Problem struct {
	Field   string `json:"field,omitempty"` // JSON pointer into the object written, e.g. "/grant/connectors/0"
	Where   string `json:"where,omitempty"` // a problem elsewhere: "warden.yaml:12:3" or "profile writer /tools/1"
	Message string `json:"message"`
}

// Invalid is the error of a write that does not validate: every problem.
type Invalid []Problem

func (v Invalid) Error() string {
	msgs := make([]string, len(v))
	for i, p := range v {
		msgs[i] = p.Message
		if p.Field != "" {
			msgs[i] = p.Field + ": " + p.Message
		}
	}
	return "invalid: " + strings.Join(msgs, "; ")
}

var (
	// ErrDeclared is matched by a write of an object the policy file declares: change it there.
	ErrDeclared = errors.New("the object is declared in the policy file: change it there")
	// ErrExists is matched by a create (ifRevision 0) of an id that is taken.
	ErrExists = errors.New("an object with that id exists")
)
