//go:build unix

package main

import (
	"bytes"
	"strings"
	"syscall"
	"testing"

	"github.com/matryer/is"
)

// A binary that dies of a signal makes the launcher die of the same one,
// as a shell or a host would see it had the binary run on its own.
func TestLauncherDiesOfTheBinarysSignal(t *testing.T) {
	for name, sig := range map[string]syscall.Signal{"TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "KILL": syscall.SIGKILL} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			launcher := installFake(t, releaseTargets(), true)
			cmd := launcherCommand(t, launcher, "die:"+name)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdin, err := cmd.StdinPipe() // held open: the binary ends by its signal only
			is.NoErr(err)
			defer stdin.Close()
			is.NoErr(cmd.Start())
			ws := waitFor(t, cmd).Sys().(syscall.WaitStatus)
			is.True(ws.Signaled()) // died of a signal, not by exiting
			is.Equal(ws.Signal(), sig)
			is.Equal(stderr.String(), "")
		})
	}
}

// SIGINT, SIGTERM and SIGHUP sent to the launcher (by a host ending its
// server, or a terminal) reach the binary, and the launcher exits as the
// binary then does.
func TestLauncherPassesSignalsOn(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			is := is.New(t)
			launcher := installFake(t, releaseTargets(), true)
			cmd := launcherCommand(t, launcher, "wait")
			stdin, err := cmd.StdinPipe() // closed when the test ends, which ends the binary
			is.NoErr(err)
			defer stdin.Close()
			stdout, err := cmd.StdoutPipe()
			is.NoErr(err)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			is.NoErr(cmd.Start())
			out := lines(stdout)
			is.Equal(nextLine(t, out, "the binary's first line"), "ready\n")
			is.NoErr(cmd.Process.Signal(sig))
			is.Equal(nextLine(t, out, "the binary's answer to the signal"), "got "+sig.String()+"\n")
			is.Equal(waitFor(t, cmd).ExitCode(), 42)
			is.True(!strings.Contains(stderr.String(), "mcp-stdio:")) // the launcher said nothing
		})
	}
}
