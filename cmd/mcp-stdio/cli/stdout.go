package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/mcp-stdio/mcp-stdio/transport"
)

// errHostStoppedReading ends the relay when its stdout's reader has gone.
var errHostStoppedReading = errors.New("the host closed the relay's stdout (broken pipe), so no answer can reach it: stopping (the host's own log says why it stopped reading)")

// directStdout returns the writer for a stdio process's messages on
// stdout, and the function that undoes what it changed, to be called once
// writing is over. When stdout is a pipe or socket (see pollableStdout) it
// is written through a non-blocking duplicate with direct system calls
// (transport.DirectWriter): a write through the os package's stdout would
// wake the runtime's monitor at each message, as a read of stdin would.
//
// On that duplicate a write to a pipe whose reader has gone fails with
// EPIPE instead of raising the SIGPIPE that ends a process writing to
// descriptor 1: the process must stop, as it would have. When gone is not
// nil it is called with errHostStoppedReading at each such failure; nil
// leaves stopping to the writer's user.
func directStdout(stdout io.Writer, gone context.CancelCauseFunc) (io.Writer, func()) {
	f, ok := stdout.(*os.File)
	if !ok {
		return stdout, func() {}
	}
	out, restore := pollableStdout(f)
	if out == io.Writer(f) {
		return stdout, restore
	}
	direct := transport.DirectWriter(out)
	if gone == nil {
		return direct, restore
	}
	return &endOnBrokenPipe{w: direct, gone: gone}, restore
}

// endOnBrokenPipe is a writer that calls gone when a write fails because
// the reader has gone.
type endOnBrokenPipe struct {
	w    io.Writer
	gone context.CancelCauseFunc
}

func (e *endOnBrokenPipe) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		e.gone(errHostStoppedReading)
	}
	return n, err
}
