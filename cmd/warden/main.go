// Command warden is the Warden CLI: validate a policy, print and explain the tool surface of
// any session, and generate the permissions page.
//
// Every command takes -c/--config FILE; without it Warden reads ./warden.yaml, and without that
// the built-in quickstart policy.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/wardenhq/warden/sandbox"
)

func main() {
	// Descriptors the parent left open without close-on-exec pass into every program this one
	// starts (connectors, commands): close them there.
	sandbox.CloseInherited()
	err := newRootCmd().Execute()
	if err != nil {
		os.Exit(exitCode(err, os.Stderr))
	}
}

// exitCode is the status a command's error ends warden with, after saying why on stderr
// where the command has not already.
func exitCode(err error, stderr io.Writer) int {
	var ex *exitError
	if errors.As(err, &ex) {
		return ex.code
	}
	fmt.Fprintln(stderr, "warden:", err)
	var ue *usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// exitError ends the command with a status after its output has already been written.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// usageError is a command line a command cannot run as written: exit status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return &usageError{fmt.Errorf(format, args...)} }
