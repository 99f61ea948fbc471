package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/cli"
)

// version is the program version, set at link time with
// -ldflags "-X main.version=…".
var version = "0.1.0-dev"

// exitCode maps run's error to the process exit code: 0 ok, 1 runtime
// failure, 2 usage.
func exitCode(err error) int { return cli.ExitCode(err) }

// run is the whole program: main only supplies the process's arguments,
// environment and standard streams, so tests drive it in-process. Signals
// arrive as ctx being cancelled. Diagnostics go to stderr; stdout carries
// protocol bytes only.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	// The real standard input means a process of its own, which the
	// command may tune; tests that run commands in-process pass others.
	opt := cli.Options{Version: version, OwnProcess: stdin == io.Reader(os.Stdin)}
	var err error
	switch {
	case len(args) > 0 && args[0] == "serve":
		err = cli.Serve(ctx, args[1:], getenv, stdin, stdout, stderr, opt)
	case len(args) > 0 && args[0] == "help":
		err = cli.Help(ctx, args[1:], getenv, stdin, stdout, stderr, opt)
	case len(args) > 0 && args[0] == cli.ExampleServerCommand:
		err = cli.ExampleServer(ctx, args[1:], getenv, stdin, stdout, stderr, opt)
	case len(args) > 0 && args[0] == cli.SuperviseCommand:
		err = cli.Supervise(ctx, args[1:], getenv, stdin, stdout, stderr, opt)
	default:
		err = cli.Relay(ctx, args, getenv, stdin, stdout, stderr, opt)
	}
	var ee *cli.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.Err == nil) {
		fmt.Fprintf(stderr, "mcp-stdio: %v\n", err)
	}
	return err
}
