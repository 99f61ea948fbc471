package pipeline

import (
	"errors"
	"regexp"
)

// A child that fails is told with what it wrote on stderr that explains
// it (transport.Child.StderrExcerpt: at most 2 KiB, the lines around the
// first one that looks like an error), and, where the cause is one a
// user often meets, what to do.

// startCauses are the causes of a failed start that serve recognises in a
// child's stderr, the first that matches winning, and the advice for
// each.
var startCauses = []struct {
	re     *regexp.Regexp
	advice string
}{
	{
		regexp.MustCompile(`(?i)cannot find module|module_not_found|err_module_not_found|modulenotfounderror|no module named|cannot find package`),
		"a module or script the server loads is missing: check the path after -- (relative paths are taken from serve's working directory) and install the server's dependencies",
	},
	{
		regexp.MustCompile(`(?i)permission denied|eacces|eperm|operation not permitted`),
		"the server was denied access to a file, directory or port: check the permissions of the user serve runs as",
	},
	{
		regexp.MustCompile(`(?i)command not found|: not found\b|executable file not found|no such file or directory|enoent|npm (err!|error) 404|is not in this registry`),
		"a command, package or file the server needs was not found: check the command after -- (the program, its package name, its arguments) and PATH in serve's environment",
	},
}

// startAdvice returns what to do about the failure stderr tells, "" when
// it names no cause serve recognises.
func startAdvice(stderr string) string {
	for _, c := range startCauses {
		if c.re.MatchString(stderr) {
			return c.advice
		}
	}
	return ""
}

// exitCause says that c exited on its own (what, e.g. "during its
// handshake"), with its exit status, its stderr excerpt and the advice
// for it.
func (c *child) exitCause(what string) *exitError {
	e := &exitError{summary: "the server process exited"}
	if what != "" {
		e.summary += " " + what
	}
	if status := c.Err(); status != nil {
		e.summary += " (" + status.Error() + ")"
	}
	e.stderr = c.StderrExcerpt()
	e.advice = startAdvice(e.stderr)
	return e
}

// exitError is a child's exit on its own, as clients and the log are told
// it: what happened, then the stderr lines that explain it and the advice
// for their cause.
type exitError struct {
	summary string // one line: "the server process exited … (exit status 1)"
	stderr  string // transport.Child.StderrExcerpt; "" for nothing
	advice  string // startAdvice; "" for none
}

func (e *exitError) Error() string {
	if e.stderr == "" {
		return e.summary + "; it wrote nothing on stderr"
	}
	msg := e.summary + ". Its stderr:\n" + e.stderr
	if e.advice != "" {
		msg += "\nLikely cause: " + e.advice + "."
	}
	return msg
}

// oneLine says it on one line, without the stderr lines: for readiness,
// which probes read.
func (e *exitError) oneLine() error {
	if e.advice != "" {
		return errors.New(e.summary + "; likely cause: " + e.advice)
	}
	return errors.New(e.summary)
}

// readinessError is err as Ready tells it: on one line, without a child's
// stderr.
func readinessError(err error) error {
	var e *exitError
	if errors.As(err, &e) {
		return e.oneLine()
	}
	return err
}
