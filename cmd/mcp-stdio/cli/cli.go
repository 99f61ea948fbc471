// Package cli is the mcp-stdio command line: flags, environment variables,
// exit codes and the wiring from them to the pipelines. It lives outside
// package main so that the golden transcripts and the CLI tests drive the
// very code the binary runs, in-process, with the network and the clock
// replaced through [Options].
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
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

// setUsage makes fs quiet while parsing — the flag package would print the
// whole usage on stderr for --help as well as for a mistake — and returns
// the function that prints the usage text and the flag defaults on w.
func setUsage(fs *flag.FlagSet, text string) func(w io.Writer) {
	fs.Usage = func() {}
	return func(w io.Writer) {
		out := fs.Output()
		fs.SetOutput(w)
		fmt.Fprint(w, text)
		fs.PrintDefaults()
		fs.SetOutput(out)
	}
}

// parseError is what a command returns when its flags do not parse: help
// was asked for (usage on stdout, exit 0), or the flag package has already
// said what is wrong on stderr (a hint follows, exit 2).
func parseError(err error, fs *flag.FlagSet, usage func(io.Writer), stdout, stderr io.Writer) error {
	if errors.Is(err, flag.ErrHelp) {
		usage(stdout)
		return nil
	}
	fmt.Fprintf(stderr, "run '%s --help' for usage\n", fs.Name())
	return &ExitError{Code: ExitUsage}
}

// newLogger returns the stderr logger every command uses.
func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})).With("app", "mcp-stdio")
}

// seconds is a duration flag given in (possibly fractional) seconds, as the
// Python tool takes them.
type seconds float64

func (s *seconds) String() string { return strconv.FormatFloat(float64(*s), 'g', -1, 64) }

func (s *seconds) Set(v string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f < 0 || f != f || f > 1e9 {
		return fmt.Errorf("want a non-negative number of seconds, got %q", v)
	}
	*s = seconds(f)
	return nil
}

func (s seconds) duration() time.Duration { return time.Duration(float64(s) * float64(time.Second)) }

// durationOrOff maps 0 to "no limit" (a negative duration for the relay).
func (s seconds) durationOrOff() time.Duration {
	if s == 0 {
		return -1
	}
	return s.duration()
}
