package transport

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// rawIO makes the read(2) and write(2) calls of one non-blocking
// descriptor that the runtime polls with syscall.RawSyscall, inside the
// poller's callbacks (syscall.RawConn's Read and Write): what the
// standard library's reads and writes do, less the runtime's system-call
// bookkeeping. That bookkeeping wakes the runtime's monitor thread
// whenever a goroutine enters a system call while the process was idle,
// which for a gateway waiting between calls is every read and write of a
// call; the monitor then wakes every 20 µs until the process is idle
// again, two context switches each time. On the 2-core machine of
// BENCHMARKS.md that was a fifth to a third of serve's CPU per call.
//
// Neither call can block: the descriptor is non-blocking, and EAGAIN hands
// the wait to the poller, with the descriptor's deadlines. The copy a
// call makes is bounded by the kernel's buffer, so the thread is held no
// longer than a memmove of that size.
type rawIO struct {
	rc syscall.RawConn

	rmu   sync.Mutex // one read at a time; guards the fields below it
	rp    []byte
	rpool bufferPool // what rp is taken from for each attempt, if set
	rn    int
	rerr  syscall.Errno
	readF func(uintptr) bool

	wmu    sync.Mutex // one write at a time; guards the fields below it
	wp     []byte
	wn     int
	werr   syscall.Errno
	wshort bool // write(2) wrote nothing and gave no error
	writeF func(uintptr) bool
}

// newRawIO returns c's raw reads and writes, or nil when c's descriptor is
// not a non-blocking pipe or socket (a terminal, a regular file, a
// blocking pipe): the kinds the runtime polls.
func newRawIO(c syscall.Conn) *rawIO {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	polled := false
	if err := rc.Control(func(fd uintptr) {
		var st syscall.Stat_t
		if syscall.Fstat(int(fd), &st) != nil {
			return
		}
		if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFIFO && kind != syscall.S_IFSOCK {
			return
		}
		flags, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		polled = errno == 0 && flags&syscall.O_NONBLOCK != 0
	}); err != nil || !polled {
		return nil
	}
	r := &rawIO{rc: rc}
	r.readF = r.read
	r.writeF = r.write
	return r
}

// read is the poller's read callback: false asks it to wait. It reads
// into r.rp or, with r.rpool set, into a buffer taken from the pool for
// the attempt, left in r.rp when bytes were read and else given back.
func (r *rawIO) read(fd uintptr) bool {
	p := r.rp
	if r.rpool != nil {
		p = r.rpool.takeBuffer()
	}
	for {
		n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if errno == syscall.EINTR {
			continue
		}
		if r.rpool != nil {
			if errno == 0 && n > 0 {
				r.rp = p
			} else {
				r.rpool.giveBuffer(p)
			}
		}
		switch errno {
		case 0:
			r.rn = int(n)
			return true
		case syscall.EAGAIN:
			return false
		default:
			r.rerr = errno
			return true
		}
	}
}

// write is the poller's write callback: false asks it to wait.
func (r *rawIO) write(fd uintptr) bool {
	for len(r.wp) > 0 {
		n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&r.wp[0])), uintptr(len(r.wp)))
		switch {
		case errno == 0 && n == 0:
			r.wshort = true
			return true
		case errno == 0:
			r.wn += int(n)
			r.wp = r.wp[n:]
		case errno == syscall.EINTR:
		case errno == syscall.EAGAIN:
			return false
		default:
			r.werr = errno
			return true
		}
	}
	return true
}

// readRaw reads into p, which is not empty, or, when pool is not nil, into
// a buffer taken from it only while read(2) is made, returned as p (nil
// unless n > 0). pollErr is the poller's error (the descriptor was closed,
// or its deadline passed), err read(2)'s. n is 0 with neither at the end
// of the input.
func (r *rawIO) readRaw(p []byte, pool bufferPool) (buf []byte, n int, pollErr, err error) {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	r.rp, r.rpool, r.rn, r.rerr = p, pool, 0, 0
	pollErr = r.rc.Read(r.readF)
	buf, n, errno := r.rp, r.rn, r.rerr
	r.rp, r.rpool = nil, nil
	if errno != 0 {
		err = errno
	}
	return buf, n, pollErr, err
}

// writeRaw writes all of p, which is not empty, in as many calls as it
// takes; n is what it wrote. pollErr is the poller's error (the
// descriptor was closed, or its deadline passed), err write(2)'s.
func (r *rawIO) writeRaw(p []byte) (n int, pollErr, err error) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.wp, r.wn, r.werr, r.wshort = p, 0, 0, false
	pollErr = r.rc.Write(r.writeF)
	n, errno := r.wn, r.werr
	r.wp = nil
	switch {
	case errno != 0:
		err = errno
	case r.wshort:
		err = io.ErrUnexpectedEOF
	}
	return n, pollErr, err
}

// rawErrors words a descriptor's errors as its package does.
type rawErrors interface {
	// pollError wraps the poller's error of op ("read" or "write").
	pollError(op string, err error) error
	// callError wraps read(2)'s or write(2)'s.
	callError(op string, err error) error
}

// readFor reads into p as an io.Reader does, its errors worded by e.
func (r *rawIO) readFor(e rawErrors, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	_, n, pollErr, err := r.readRaw(p, nil)
	return n, readError(e, n, pollErr, err)
}

// readLazyFor reads as readFor does, into a buffer taken from pool only
// while read(2) is made: a read that waits for bytes holds none. buf,
// pool's, holds the n bytes read (nil when n is 0); it is the caller's to
// give back.
func (r *rawIO) readLazyFor(e rawErrors, pool bufferPool) (buf []byte, n int, err error) {
	buf, n, pollErr, err := r.readRaw(nil, pool)
	if err = readError(e, n, pollErr, err); err != nil {
		return nil, 0, err
	}
	return buf[:n], n, nil
}

// readError is the error of a read that returned n, pollErr and err, as an
// io.Reader gives it, worded by e: io.EOF at the end of the input.
func readError(e rawErrors, n int, pollErr, err error) error {
	switch {
	case pollErr != nil:
		return e.pollError("read", pollErr)
	case err != nil:
		return e.callError("read", err)
	case n == 0:
		return io.EOF
	}
	return nil
}

// writeFor writes p as an io.Writer does, its errors worded by e.
func (r *rawIO) writeFor(e rawErrors, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, pollErr, err := r.writeRaw(p)
	switch {
	case pollErr != nil:
		return n, e.pollError("write", pollErr)
	case err != nil:
		return n, e.callError("write", err)
	}
	return n, nil
}

// rawConn is a net.Conn whose Read and Write go through rawIO; its errors
// are the net package's (*net.OpError, wrapping the errno).
type rawConn struct {
	net.Conn
	raw *rawIO
}

// newRawConn returns c with rawIO's reads and writes, or nil when its
// descriptor is not one the runtime polls without blocking.
func newRawConn(c net.Conn) *rawConn {
	if sc, ok := c.(syscall.Conn); ok {
		if raw := newRawIO(sc); raw != nil {
			return &rawConn{Conn: c, raw: raw}
		}
	}
	return nil
}

func (c *rawConn) Read(p []byte) (int, error)  { return c.raw.readFor(c, p) }
func (c *rawConn) Write(p []byte) (int, error) { return c.raw.writeFor(c, p) }

// readsLazily reports that readLazy works (see lazyReader).
func (c *rawConn) readsLazily() bool { return true }

// readLazy reads into a buffer of pool's taken once there is something to
// read (see rawIO.readLazyFor).
func (c *rawConn) readLazy(pool bufferPool) ([]byte, int, error) {
	return c.raw.readLazyFor(c, pool)
}

// pollError is what the net package returns for the poller's error:
// syscall.RawConn gives it as the *net.OpError of a "raw-read" or
// "raw-write", with the same error inside (net.ErrClosed,
// os.ErrDeadlineExceeded).
func (c *rawConn) pollError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		e := *oe
		e.Op = op
		return &e
	}
	return c.callError(op, err)
}

// callError is what the net package returns for read(2)'s or write(2)'s
// error.
func (c *rawConn) callError(op string, err error) error {
	if errno, ok := err.(syscall.Errno); ok {
		err = os.NewSyscallError(op, errno)
	}
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// SyscallConn returns the connection's own, for what reads its state.
func (c *rawConn) SyscallConn() (syscall.RawConn, error) { return c.raw.rc, nil }

// CloseWrite shuts the writing side down where the connection can (TCP,
// Unix).
func (c *rawConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return &net.OpError{Op: "close", Net: c.LocalAddr().Network(), Err: syscall.ENOTSUP}
}

// rawFile is an *os.File whose Read and Write go through rawIO; its
// errors are the os package's (*os.PathError, wrapping the errno).
type rawFile struct {
	*os.File
	raw *rawIO
}

func (f *rawFile) Read(p []byte) (int, error)  { return f.raw.readFor(f, p) }
func (f *rawFile) Write(p []byte) (int, error) { return f.raw.writeFor(f, p) }

// callError is what the os package returns for read(2)'s or write(2)'s
// error.
func (f *rawFile) callError(op string, err error) error {
	return &os.PathError{Op: op, Path: f.Name(), Err: err}
}

// pollError is what the os package returns for the poller's error: its
// deadline, or else the file's closing, which os reports as os.ErrClosed
// (the poller's own error for it is internal).
func (f *rawFile) pollError(op string, err error) error {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		err = os.ErrClosed
	}
	return &os.PathError{Op: op, Path: f.Name(), Err: err}
}

// newRawFile returns f with rawIO's reads and writes, or nil when f is not
// a descriptor the runtime polls without blocking (one end of os.Pipe
// is).
func newRawFile(f *os.File) *rawFile {
	if raw := newRawIO(f); raw != nil {
		return &rawFile{File: f, raw: raw}
	}
	return nil
}

// rawReader returns r with rawIO's reads when r is a net.Conn or an
// *os.File the runtime polls without blocking, else r itself. Under the
// race detector it returns r: rawIO's calls skip the annotations through
// which the detector sees a write to a descriptor happen before the read
// of it.
func rawReader(r io.Reader) io.Reader {
	if raw := rawOf(r, false); raw != nil {
		return raw
	}
	return r
}

// rawWriter is rawReader for writes, but for the process's stdout and
// stderr: the os package's writes to those end the process on a broken
// pipe (SIGPIPE), as a writer to a closed pipeline expects.
func rawWriter(w io.Writer) io.Writer {
	if raw := rawOf(w, true); raw != nil {
		return raw
	}
	return w
}

// rawOf returns v, an *os.File or a net.Conn, read and written through
// rawIO, or nil where rawReader (or rawWriter, when writing) leaves it as
// it is.
func rawOf(v any, writing bool) io.ReadWriter {
	if raceEnabled {
		return nil
	}
	switch v := v.(type) {
	case *os.File:
		if writing && (v == os.Stdout || v == os.Stderr) {
			return nil
		}
		if f := newRawFile(v); f != nil {
			return f
		}
	case *rawConn:
		return v // wrapped already
	case net.Conn:
		if c := newRawConn(v); c != nil {
			return c
		}
	}
	return nil
}

// rawConnOf is rawReader for a connection, both ways.
func rawConnOf(c net.Conn) net.Conn {
	if raw := rawOf(c, false); raw != nil {
		return raw.(*rawConn)
	}
	return c
}
