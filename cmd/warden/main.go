// Command warden is the Warden CLI: validate a policy, print and explain the tool surface of
// any session, and generate the permissions page.
//
// Every command takes -c/--config FILE; without it Warden reads ./warden.yaml, and without that
// the built-in quickstart policy.
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	err := newRootCmd().Execute()
	if err == nil {
		return
	}
	var ex *exitError
	if errors.As(err, &ex) {
		os.Exit(ex.code)
	}
	fmt.Fprintln(os.Stderr, "warden:", err)
	os.Exit(1)
}

// exitError ends the command with a status after its output has already been written.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }
