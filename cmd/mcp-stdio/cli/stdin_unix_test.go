//go:build unix

package cli

import (
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
	"golang.org/x/sys/unix"
)

// rawPipe returns a pipe whose read end is in blocking mode, as a process
// finds its stdin (os.Pipe would make it non-blocking). pipe2 is not on
// every Unix (macOS lacks it), so the descriptors are marked close-on-exec
// under the fork lock, as os.Pipe does there.
func rawPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var p [2]int
	syscall.ForkLock.RLock()
	err := unix.Pipe(p[:])
	if err == nil {
		unix.CloseOnExec(p[0])
		unix.CloseOnExec(p[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(p[0]), "stdin"), os.NewFile(uintptr(p[1]), "writer")
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	return r, w
}

func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fl&unix.O_NONBLOCK != 0
}

// A pipe stdin is read through the poller (a read deadline works), and the
// restore function leaves the original descriptor open and blocking.
func TestPollableStdinPipe(t *testing.T) {
	is := is.New(t)
	r, w := rawPipe(t)
	in, restore := pollableStdin(r)
	is.True(in != io.Reader(r))
	is.True(nonblocking(t, r))

	_, err := w.WriteString("one\n")
	is.NoErr(err)
	buf := make([]byte, 16)
	n, err := in.Read(buf)
	is.NoErr(err)
	is.Equal(string(buf[:n]), "one\n")

	dl, ok := in.(interface{ SetReadDeadline(time.Time) error })
	is.True(ok)
	is.NoErr(dl.SetReadDeadline(time.Now()))
	_, err = in.Read(buf)
	is.True(errors.Is(err, os.ErrDeadlineExceeded)) // the poller, not a blocked thread

	restore()
	is.True(!nonblocking(t, r))
	_, err = w.WriteString("two\n")
	is.NoErr(err)
	n, err = r.Read(buf) // descriptor 0's stand-in is still open
	is.NoErr(err)
	is.Equal(string(buf[:n]), "two\n")
}

// A regular file (or a terminal), as stdin or as stdout, is returned
// unchanged.
func TestPollableRegularFile(t *testing.T) {
	is := is.New(t)
	f, err := os.CreateTemp(t.TempDir(), "stdio")
	is.NoErr(err)
	defer f.Close()
	in, restoreIn := pollableStdin(f)
	defer restoreIn()
	is.Equal(in, io.Reader(f))
	out, restoreOut := pollableStdout(f)
	defer restoreOut()
	is.Equal(out, io.Writer(f))
	is.True(!nonblocking(t, f))
}

// A pipe stdout is written through the poller, and a write after its
// reader has gone fails with EPIPE (the duplicate is not descriptor 1, so
// no SIGPIPE); the restore function leaves the original descriptor open
// and blocking.
func TestPollableStdoutPipe(t *testing.T) {
	is := is.New(t)
	r, w := rawPipe(t)
	out, restore := pollableStdout(w)
	is.True(out != io.Writer(w))
	is.True(nonblocking(t, w))

	_, err := io.WriteString(out, "one\n")
	is.NoErr(err)
	buf := make([]byte, 16)
	n, err := r.Read(buf)
	is.NoErr(err)
	is.Equal(string(buf[:n]), "one\n")

	restore()
	is.True(!nonblocking(t, w))
	_, err = w.WriteString("two\n") // descriptor 1's stand-in is still open
	is.NoErr(err)
	n, err = r.Read(buf)
	is.NoErr(err)
	is.Equal(string(buf[:n]), "two\n")

	out, restore = pollableStdout(w)
	defer restore()
	is.NoErr(r.Close())
	_, err = io.WriteString(out, "three\n")
	is.True(errors.Is(err, syscall.EPIPE))
}

// directStdout writes a pipe stdout through its duplicate and, once the
// reader has gone, calls gone with errHostStoppedReading at the EPIPE;
// with gone nil it leaves the error to the writer's user.
func TestDirectStdoutEndsOnBrokenPipe(t *testing.T) {
	for _, hooked := range []bool{true, false} {
		is := is.New(t)
		r, w := rawPipe(t)
		var cause error
		var gone func(error)
		if hooked {
			gone = func(err error) { cause = err }
		}
		out, restore := directStdout(w, gone)
		is.True(out != io.Writer(w))

		_, err := io.WriteString(out, "one\n")
		is.NoErr(err)
		buf := make([]byte, 16)
		n, err := r.Read(buf)
		is.NoErr(err)
		is.Equal(string(buf[:n]), "one\n")
		is.NoErr(cause)

		is.NoErr(r.Close())
		_, err = io.WriteString(out, "two\n")
		is.True(errors.Is(err, syscall.EPIPE))
		if hooked {
			is.True(errors.Is(cause, errHostStoppedReading))
		}
		restore()
		is.True(!nonblocking(t, w))
	}
}
