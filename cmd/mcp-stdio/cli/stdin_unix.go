//go:build unix

package cli

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pollableStdin returns a reader for stdin that the Go runtime's network
// poller waits on, and a function that undoes the change and must be
// called once reading is over; when stdin is not a pipe or socket it
// returns stdin itself and a no-op.
//
// A blocking read of stdin holds an OS thread, so every message read wakes
// that thread and hands the message to another one. Read through the
// poller, a message is picked up by whichever thread is already awake, and
// the reader can be interrupted (a read deadline ends it; see
// pipeline.Relay). Terminals and regular files are left alone, and so is a
// socket that is also stdout (inetd style): O_NONBLOCK belongs to the open
// file, which stdout would then share without expecting it.
func pollableStdin(f *os.File) (io.Reader, func()) {
	pf, restore := pollable(f, os.Stdout)
	if pf == nil {
		return f, restore
	}
	return pf, restore
}

// pollableStdout is pollableStdin for stdout, f: a writer the poller waits
// on while the pipe or socket is full, and through which
// transport.DirectWriter can write without the runtime's system-call
// bookkeeping (which the os package's writes to stdout cannot skip). A
// socket that is also stdin is left alone. The writer is not descriptor
// 1, so a write to a pipe whose reader has gone fails with EPIPE instead
// of raising SIGPIPE: its writer must stop on a write error.
func pollableStdout(f *os.File) (io.Writer, func()) {
	pf, restore := pollable(f, os.Stdin)
	if pf == nil {
		return f, restore
	}
	return pf, restore
}

// pollable returns a non-blocking duplicate of f, which the poller waits
// on, and the function that closes it and leaves f blocking again; nil and
// a no-op when f is not a pipe or socket, or is a socket that is also
// other.
func pollable(f, other *os.File) (*os.File, func()) {
	fd := int(f.Fd())
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return nil, func() {}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
	case unix.S_IFSOCK:
		var out unix.Stat_t
		if unix.Fstat(int(other.Fd()), &out) == nil && out.Dev == st.Dev && out.Ino == st.Ino {
			return nil, func() {}
		}
	default:
		return nil, func() {}
	}
	// A duplicate descriptor, so that closing the pollable File (or the
	// garbage collector doing it) never closes f's.
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, func() {}
	}
	if unix.SetNonblock(dup, true) != nil {
		_ = unix.Close(dup)
		return nil, func() {}
	}
	// os.NewFile sees O_NONBLOCK and registers the descriptor with the
	// poller.
	pf := os.NewFile(uintptr(dup), f.Name())
	return pf, func() {
		_ = pf.Close()
		// Leave f blocking, as it was found: the open file may outlive
		// this process (a shell's pipeline).
		_ = unix.SetNonblock(fd, false)
	}
}
