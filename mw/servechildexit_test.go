package mw

import (
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// The advice matches the causes users meet most.
func TestStartAdvice(t *testing.T) {
	is := is.New(t)
	for stderr, want := range map[string]string{
		"ModuleNotFoundError: No module named 'mcp'":                 "a module or script",
		"npm error 404 Not Found - GET https://registry.npmjs.org/x": "a command, package or file",
		"sh: 1: uvx: not found":                                      "a command, package or file",
		"Error: EACCES: permission denied, open '/etc/shadow'":       "denied access",
		"panic: runtime error":                                       "",
	} {
		got := StartAdvice(stderr)
		is.True(strings.Contains(got, want) && (want != "") == (got != ""))
	}
}

// A child's exit is told with its status, its stderr and the advice; on
// one line without the stderr.
func TestNewChildExitError(t *testing.T) {
	is := is.New(t)
	e := NewChildExitError("during its handshake", errors.New("exit status 1"), "sh: 1: uvx: not found")
	is.Equal(e.Error(), "the server process exited during its handshake (exit status 1). Its stderr:\nsh: 1: uvx: not found\n"+
		"Likely cause: a command, package or file the server needs was not found: check the command after -- (the program, its package name, its arguments) and PATH in serve's environment.")
	is.Equal(ChildErrorLine(e).Error(), "the server process exited during its handshake (exit status 1); likely cause: a command, package or file the server needs was not found: check the command after -- (the program, its package name, its arguments) and PATH in serve's environment")
	is.Equal(NewChildExitError("", nil, "").Error(), "the server process exited; it wrote nothing on stderr")
	is.Equal(ChildErrorLine(NewChildExitError("", nil, "panic")).Error(), "the server process exited")
	other := errors.New("other")
	is.Equal(ChildErrorLine(other), other)
}
