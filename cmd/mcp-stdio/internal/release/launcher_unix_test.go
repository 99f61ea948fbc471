//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

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

// When the launcher's own parent dies without a word (npm's exec, killed:
// it passes no signal on), the launcher ends the binary as a SIGTERM
// would, and ends with it. The parent here is a shell running the
// launcher in the foreground, killed with SIGKILL.
func TestLauncherEndsTheBinaryWhenItsParentDies(t *testing.T) {
	is := is.New(t)
	launcher := installFake(t, releaseTargets(), true)
	sh := exec.Command("/bin/sh", "-c", `"$0" "$1"; echo "the shell lived on"`, nodeBinary(t), launcher)
	sh.Env = append(os.Environ(), fakeEnv+"=wait")
	stdin, err := sh.StdinPipe() // held open: the binary ends by the signal only
	is.NoErr(err)
	defer stdin.Close()
	stdout, err := sh.StdoutPipe()
	is.NoErr(err)
	is.NoErr(sh.Start())
	out := lines(stdout)
	is.Equal(nextLine(t, out, "the binary's first line"), "ready\n")
	is.NoErr(sh.Process.Kill())
	defer sh.Wait() // not before the reads: it closes the pipe
	is.Equal(nextLine(t, out, "the binary's answer"), "got terminated\n")
	select { // everything holding stdout is gone: the launcher ended too
	case _, open := <-out:
		is.True(!open) // nothing more
	case <-time.After(launcherWait):
		t.Fatalf("stdout still open %v after the binary's answer", launcherWait)
	}
}
