// Package cli is the mcp-stdio command line: flags, environment variables,
// exit codes and the wiring from them to the pipelines. It lives outside
// package main so that the golden transcripts and the CLI tests drive the
// very code the binary runs, in-process, with the network and the clock
// replaced through [Options].
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
)

// Options carries what the binary takes from its build and what tests
// replace.
type Options struct {
	// Version is printed by --version and reported as clientInfo/serverInfo.
	Version string
	// HTTPClient, when set, sends the relay's HTTP requests instead of a
	// client built from the flags (tests point it at an in-process server).
	HTTPClient *http.Client
	// OwnProcess says the command runs as a process of its own on the
	// process's standard streams (run sets it for os.Stdin; in-process
	// callers leave it unset). The commands then tune the process: see
	// tuneStdioProcess and tuneServeProcess.
	OwnProcess bool
	// Rand, when set, is serve's source of the random part of the ids it
	// mints toward its children (pipeline.ServeConfig.Rand) instead of
	// crypto/rand: transcript tests give a fixed one.
	Rand io.Reader
}

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1 // a runtime failure
	ExitUsage   = 2 // bad flags or arguments
)

// ExitError carries an exit code out of a command. A nil Err means the
// reason has already been printed.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// usageError reports bad command-line input (exit 2).
func usageError(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// ExitCode maps a command's error to the process exit code: 0 for nil, the
// code of an *ExitError, else 1.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitFailure
}

// newLogger returns the stderr logger every command uses: key=value
// lines, or with --log-format json one JSON object per line (log/slog's
// handlers: time, level, msg, then the record's fields).
func newLogger(w io.Writer, level slog.Level, format logFormat) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == logJSON {
		return slog.New(slog.NewJSONHandler(w, opts)).With("app", "mcp-stdio")
	}
	return slog.New(slog.NewTextHandler(w, opts)).With("app", "mcp-stdio")
}

// logFormat is the --log-format flag: text (the default) or json.
type logFormat string

const (
	logText logFormat = "text"
	logJSON logFormat = "json"
)

func (f *logFormat) String() string {
	if *f == "" {
		return string(logText)
	}
	return string(*f)
}

func (f *logFormat) Set(v string) error {
	switch logFormat(v) {
	case logText, logJSON:
		*f = logFormat(v)
		return nil
	}
	return errors.New("want text or json")
}

// Help is the help command: mcp-stdio help [relay|serve] prints the help
// of the relay (the default) or of serve on stdout.
func Help(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer, opt Options) error {
	switch {
	case len(args) == 0, len(args) == 1 && args[0] == "relay":
		return Relay(ctx, []string{"--help"}, getenv, stdin, stdout, stderr, opt)
	case len(args) == 1 && args[0] == "serve":
		return Serve(ctx, []string{"--help"}, getenv, stdin, stdout, stderr, opt)
	}
	return usageError("help: no help on %q; try 'mcp-stdio help' or 'mcp-stdio help serve'", strings.Join(args, " "))
}
