package mw

import (
	"errors"
	"regexp"
)

// A child that fails is told with what it wrote on stderr that explains
// it (at most a short excerpt: the lines around the first one that looks
// like an error), and, where the cause is one a user often meets, what to
// do: to the clients it failed and in the log. This is policy about what
// a user is told, shared by every face of serve (the HTTP answers, the
// log, readiness), so it lives here and not with one presentation.

// startCauses are the causes of a failed start recognised in a child's
// stderr, the first that matches winning, and the advice for each. It is
// never written.
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

// StartAdvice returns what to do about the failure a child's stderr
// tells, "" when it names no cause it recognises: a missing module or
// script, a denied permission, a missing command, package or file.
func StartAdvice(stderr string) string {
	for _, c := range startCauses {
		if c.re.MatchString(stderr) {
			return c.advice
		}
	}
	return ""
}

// ChildExitError is a child's exit on its own, as clients and the log are
// told it: what happened, then the stderr lines that explain it and the
// advice for their cause ([StartAdvice]).
type ChildExitError struct {
	// Summary is one line: "the server process exited … (exit status 1)".
	Summary string
	// Stderr is the excerpt of the child's stderr; "" for nothing.
	Stderr string
	// Advice is StartAdvice(Stderr); "" for none.
	Advice string
}

// NewChildExitError returns the error that says a child exited on its own — what
// ("during its handshake", or ""), status (how it ended: nil for exit
// status 0) — with its stderr excerpt and the advice for it.
func NewChildExitError(what string, status error, stderr string) *ChildExitError {
	e := &ChildExitError{Summary: "the server process exited"}
	if what != "" {
		e.Summary += " " + what
	}
	if status != nil {
		e.Summary += " (" + status.Error() + ")"
	}
	e.Stderr = stderr
	e.Advice = StartAdvice(stderr)
	return e
}

func (e *ChildExitError) Error() string {
	if e.Stderr == "" {
		return e.Summary + "; it wrote nothing on stderr"
	}
	msg := e.Summary + ". Its stderr:\n" + e.Stderr
	if e.Advice != "" {
		msg += "\nLikely cause: " + e.Advice + "."
	}
	return msg
}

// OneLine says it on one line, without the stderr lines: for readiness,
// which probes read.
func (e *ChildExitError) OneLine() error {
	if e.Advice != "" {
		return errors.New(e.Summary + "; likely cause: " + e.Advice)
	}
	return errors.New(e.Summary)
}

// ChildErrorLine returns err on one line: a [*ChildExitError] in it
// without the child's stderr ([ChildExitError.OneLine]); any other error
// as it is.
func ChildErrorLine(err error) error {
	var e *ChildExitError
	if errors.As(err, &e) {
		return e.OneLine()
	}
	return err
}
