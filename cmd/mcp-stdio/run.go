package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/cli"
)

// version is the program version, set at link time with
// -ldflags "-X main.version=…".
var version = "0.1.0-dev"

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // a runtime failure
	exitUsage   = 2 // bad flags or arguments
)

// exitError carries an exit code out of run. Its message, if any, has
// already been printed.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError reports bad command-line input (exit 2).
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return cli.ExitCode(err)
}

// run is the whole program: main only supplies the process's arguments,
// environment and standard streams, so tests drive it in-process. Signals
// arrive as ctx being cancelled. Diagnostics go to stderr; stdout carries
// protocol bytes only.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	var err error
	switch {
	case len(args) > 0 && args[0] == "serve":
		err = runServe(ctx, args[1:], getenv, stdin, stdout, stderr)
	case len(args) > 0 && args[0] == cli.ExampleServerCommand:
		err = cli.ExampleServer(ctx, args[1:], getenv, stdin, stdout, stderr, cli.Options{Version: version})
	default:
		err = cli.Relay(ctx, args, getenv, stdin, stdout, stderr, cli.Options{Version: version})
	}
	if err != nil {
		var ee *exitError
		var ce *cli.ExitError
		switch {
		case errors.As(err, &ee) && ee.err == nil, errors.As(err, &ce) && ce.Err == nil:
		default:
			fmt.Fprintf(stderr, "mcp-stdio: %v\n", err)
		}
	}
	return err
}
