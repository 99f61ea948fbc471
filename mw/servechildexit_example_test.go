package mw_test

import (
	"errors"
	"fmt"

	"github.com/mcp-stdio/mcp-stdio/mw"
)

// A child that exited on its own is told with its status, the lines of
// its stderr and the advice for their cause; readiness says it on one
// line.
func ExampleNewChildExitError() {
	err := mw.NewChildExitError("during its handshake", errors.New("exit status 127"), "sh: 1: uvx: not found")
	fmt.Println(err)
	fmt.Println(mw.ChildErrorLine(err))
	// Output:
	// the server process exited during its handshake (exit status 127). Its stderr:
	// sh: 1: uvx: not found
	// Likely cause: a command, package or file the server needs was not found: check the command after -- (the program, its package name, its arguments) and PATH in serve's environment.
	// the server process exited during its handshake (exit status 127); likely cause: a command, package or file the server needs was not found: check the command after -- (the program, its package name, its arguments) and PATH in serve's environment
}
