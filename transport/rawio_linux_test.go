package transport

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// tcpPair returns the two ends of a loopback TCP connection, each read and
// written through rawIO.
func tcpPair(t testing.TB) (client, server net.Conn) {
	t.Helper()
	is := is.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			c = nil
		}
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	is.NoErr(err)
	s := <-accepted
	is.True(s != nil)
	rc, rs := newRawConn(c), newRawConn(s)
	is.True(rc != nil && rs != nil) // TCP connections are polled, so they are wrapped
	t.Cleanup(func() { rc.Close(); rs.Close() })
	return rc, rs
}

// pipePair returns the two ends of os.Pipe, each read and written through
// rawIO.
func pipePair(t *testing.T) (r, w *rawFile) {
	t.Helper()
	is := is.New(t)
	pr, pw, err := os.Pipe()
	is.NoErr(err)
	r, w = newRawFile(pr), newRawFile(pw)
	is.True(r != nil && w != nil) // os.Pipe's ends are polled, so they are wrapped
	t.Cleanup(func() { pr.Close(); pw.Close() })
	return r, w
}

// TestRawIOCarriesEveryByte sends 8 MiB each way at once, more than the
// kernel's buffers hold, so that writes are partial and wait for room, and
// reads wait for data: every byte arrives, in order.
func TestRawIOCarriesEveryByte(t *testing.T) {
	payload := make([]byte, 8<<20)
	_, _ = rand.Read(payload)
	check := func(t *testing.T, a io.Writer, b io.Reader) {
		is := is.New(t)
		got := make(chan []byte, 1)
		go func() {
			buf, _ := io.ReadAll(io.LimitReader(b, int64(len(payload))))
			got <- buf
		}()
		n, err := a.Write(payload)
		is.NoErr(err)
		is.Equal(n, len(payload))
		is.True(bytes.Equal(<-got, payload))
	}
	t.Run("tcp", func(t *testing.T) {
		c, s := tcpPair(t)
		var wg sync.WaitGroup
		wg.Go(func() { check(t, c, s) })
		wg.Go(func() { check(t, s, c) })
		wg.Wait()
	})
	t.Run("pipe", func(t *testing.T) {
		r, w := pipePair(t)
		check(t, w, r)
	})
}

// TestRawIOWritesAreWhole has writers share one connection: each Write
// arrives whole, never interleaved with another's, as the net package
// promises.
func TestRawIOWritesAreWhole(t *testing.T) {
	is := is.New(t)
	c, s := tcpPair(t)
	const writers, records, size = 4, 200, 64 << 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rec := bytes.Repeat([]byte{byte('a' + w)}, size)
			for range records {
				if _, err := c.Write(rec); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	rec := make([]byte, size)
	for range writers * records {
		_, err := io.ReadFull(s, rec)
		is.NoErr(err)
		is.True(bytes.Count(rec, rec[:1]) == size) // one writer's record, whole
	}
	wg.Wait()
}

// TestRawIOEndsAsTheStandardLibraryDoes checks each way a read or write
// ends: the errors are those of the net and os packages, so that callers'
// errors.Is checks hold.
func TestRawIOEndsAsTheStandardLibraryDoes(t *testing.T) {
	t.Run("peer closes: EOF", func(t *testing.T) {
		is := is.New(t)
		c, s := tcpPair(t)
		_, err := c.Write([]byte("last"))
		is.NoErr(err)
		is.NoErr(c.Close())
		got, err := io.ReadAll(s)
		is.NoErr(err) // ReadAll ends at io.EOF
		is.Equal(string(got), "last")
	})
	t.Run("deadline", func(t *testing.T) {
		is := is.New(t)
		c, s := tcpPair(t)
		is.NoErr(s.SetReadDeadline(time.Now().Add(-time.Second)))
		_, err := s.Read(make([]byte, 1))
		is.True(errors.Is(err, os.ErrDeadlineExceeded))
		var ne net.Error
		is.True(errors.As(err, &ne) && ne.Timeout())
		_, plain := s.(*rawConn).Conn.Read(make([]byte, 1))
		is.Equal(err.Error(), plain.Error()) // word for word the net package's
		is.NoErr(c.SetWriteDeadline(time.Now().Add(-time.Second)))
		_, err = c.Write([]byte("x"))
		_, plain = c.(*rawConn).Conn.Write([]byte("x"))
		is.True(errors.Is(err, os.ErrDeadlineExceeded))
		is.Equal(err.Error(), plain.Error())
	})
	t.Run("closed", func(t *testing.T) {
		is := is.New(t)
		_, s := tcpPair(t)
		is.NoErr(s.Close())
		_, err := s.Read(make([]byte, 1))
		_, plain := s.(*rawConn).Conn.Read(make([]byte, 1))
		is.True(errors.Is(err, net.ErrClosed))
		is.Equal(err.Error(), plain.Error())
		_, err = s.Write([]byte("x"))
		_, plain = s.(*rawConn).Conn.Write([]byte("x"))
		is.True(errors.Is(err, net.ErrClosed))
		is.Equal(err.Error(), plain.Error())
	})
	t.Run("pipe: deadline, then closed", func(t *testing.T) {
		is := is.New(t)
		r, w := pipePair(t)
		is.NoErr(r.SetReadDeadline(time.Now().Add(-time.Second)))
		_, err := r.Read(make([]byte, 1))
		_, plain := r.File.Read(make([]byte, 1))
		is.True(errors.Is(err, os.ErrDeadlineExceeded))
		is.Equal(err.Error(), plain.Error()) // word for word the os package's
		is.NoErr(w.Close())
		_, err = w.Write([]byte("x"))
		_, plain = w.File.Write([]byte("x"))
		is.True(errors.Is(err, os.ErrClosed))
		is.Equal(err.Error(), plain.Error())
	})
	t.Run("deadline while waiting", func(t *testing.T) {
		is := is.New(t)
		_, s := tcpPair(t)
		is.NoErr(s.SetReadDeadline(time.Now().Add(20 * time.Millisecond)))
		_, err := s.Read(make([]byte, 1))
		is.True(errors.Is(err, os.ErrDeadlineExceeded))
	})
	t.Run("closed while reading", func(t *testing.T) {
		is := is.New(t)
		_, s := tcpPair(t)
		done := make(chan error, 1)
		go func() {
			_, err := s.Read(make([]byte, 1))
			done <- err
		}()
		// The read is either waiting or not begun: both end with ErrClosed.
		is.NoErr(s.Close())
		is.True(errors.Is(<-done, net.ErrClosed))
	})
	t.Run("reset by peer", func(t *testing.T) {
		is := is.New(t)
		c, s := tcpPair(t)
		is.NoErr(c.(*rawConn).Conn.(*net.TCPConn).SetLinger(0))
		is.NoErr(c.Close()) // RST
		_, err := s.Read(make([]byte, 1))
		is.True(errors.Is(err, syscall.ECONNRESET))
		var op *net.OpError
		is.True(errors.As(err, &op) && op.Op == "read")
	})
	t.Run("pipe: EOF, then closed", func(t *testing.T) {
		is := is.New(t)
		r, w := pipePair(t)
		_, err := w.Write([]byte("x"))
		is.NoErr(err)
		is.NoErr(w.Close())
		got, err := io.ReadAll(r)
		is.NoErr(err)
		is.Equal(string(got), "x")
		is.NoErr(r.Close())
		_, err = r.Read(make([]byte, 1))
		is.True(errors.Is(err, os.ErrClosed))
	})
	t.Run("pipe: no reader", func(t *testing.T) {
		is := is.New(t)
		r, w := pipePair(t)
		is.NoErr(r.Close())
		_, err := w.Write([]byte("x")) // SIGPIPE is the runtime's to ignore
		is.True(errors.Is(err, syscall.EPIPE))
		var pe *os.PathError
		is.True(errors.As(err, &pe) && pe.Op == "write")
	})
}

// TestRawConnForwardsWhatCallersAskOf checks the methods callers find on a
// TCP connection by assertion: CloseWrite and SyscallConn.
func TestRawConnForwardsWhatCallersAskOf(t *testing.T) {
	is := is.New(t)
	c, s := tcpPair(t)
	_, err := c.Write([]byte("hello"))
	is.NoErr(err)
	rc, err := s.(syscall.Conn).SyscallConn()
	is.NoErr(err)
	// The poller calls back once the bytes are in s's kernel buffer.
	is.NoErr(rc.Read(func(uintptr) bool { return unreadBytes(s) > 0 }))
	is.Equal(unreadBytes(s), 5) // SyscallConn reaches the descriptor
	is.NoErr(c.(interface{ CloseWrite() error }).CloseWrite())
	got, err := io.ReadAll(s)
	is.NoErr(err)
	is.Equal(string(got), "hello") // the half close reached s as its EOF
	_, err = s.Write([]byte("back"))
	is.NoErr(err)
	buf := make([]byte, 4)
	_, err = io.ReadFull(c, buf)
	is.NoErr(err)
	is.Equal(string(buf), "back") // and c can still read
}

// TestRawIOLeavesBlockingDescriptorsAlone: a descriptor the runtime does
// not poll (a blocking pipe, a regular file) keeps the standard library's
// reads and writes, which may block a thread.
func TestRawIOLeavesBlockingDescriptorsAlone(t *testing.T) {
	is := is.New(t)
	var fds [2]int
	is.NoErr(syscall.Pipe2(fds[:], syscall.O_CLOEXEC))
	r, w := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	defer r.Close()
	defer w.Close()
	is.True(newRawFile(r) == nil)
	is.True(rawReader(r) == io.Reader(r))
	f, err := os.OpenFile(t.TempDir()+"/file", os.O_CREATE|os.O_RDWR|syscall.O_NONBLOCK, 0o600)
	is.NoErr(err)
	defer f.Close()
	is.True(newRawFile(f) == nil) // non-blocking, but a file: not polled
	is.True(rawWriter(f) == io.Writer(f))
	var b bytes.Buffer
	is.True(rawWriter(&b) == io.Writer(&b))
	is.True(rawWriter(os.Stdout) == io.Writer(os.Stdout)) // EPIPE there is SIGPIPE
}

// TestRawIOIsOffUnderTheRaceDetector: rawIO's system calls bypass the
// annotations through which the race detector sees a write to a
// descriptor happen before its read, so race builds keep the standard
// library's.
func TestRawIOIsOffUnderTheRaceDetector(t *testing.T) {
	is := is.New(t)
	pr, pw, err := os.Pipe()
	is.NoErr(err)
	defer pr.Close()
	defer pw.Close()
	_, wrapped := rawReader(pr).(*rawFile)
	is.Equal(wrapped, !raceEnabled)
	c, _ := tcpPair(t)
	plain := c.(*rawConn).Conn
	_, wrapped = rawConnOf(plain).(*rawConn)
	is.Equal(wrapped, !raceEnabled)
}

// processCPU returns the CPU time the process has used, all its threads.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRawIOPingPong measures a one-byte round trip through a child
// process (cat) over two pipes, this process idle while the child echoes,
// as a gateway is between a request written to its server and the answer:
// through rawIO (raw=true) and through the os package, with the CPU time
// this process spent a round trip (cpu-ns/op; the child's is not counted).
func BenchmarkRawIOPingPong(b *testing.B) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		b.Skip("needs cat")
	}
	for _, raw := range []bool{false, true} {
		b.Run("raw="+strconv.FormatBool(raw), func(b *testing.B) {
			is := is.New(b)
			toChild, childStdin, err := pipeForChild(false)
			is.NoErr(err)
			fromChild, childStdout, err := pipeForChild(true)
			is.NoErr(err)
			cmd := exec.Command(cat)
			cmd.Stdin, cmd.Stdout = childStdin, childStdout
			is.NoErr(cmd.Start())
			childStdin.Close()
			childStdout.Close()
			var in io.Reader = fromChild
			var out io.Writer = toChild
			if raw {
				in, out = newRawFile(fromChild), newRawFile(toChild)
			}
			// As in serve, a goroutine of its own reads what the child
			// writes and hands it to the one that wrote the request.
			echoes := make(chan byte)
			go func() {
				defer close(echoes)
				buf := make([]byte, 1)
				for {
					if _, err := in.Read(buf); err != nil {
						return
					}
					echoes <- buf[0]
				}
			}()
			buf := make([]byte, 1)
			before := processCPU(b)
			for b.Loop() {
				if _, err := out.Write(buf); err != nil {
					b.Fatal(err)
				}
				<-echoes
			}
			b.ReportMetric(float64(processCPU(b)-before)/float64(b.N), "cpu-ns/op")
			toChild.Close()
			for range echoes {
			}
			is.NoErr(cmd.Wait())
			fromChild.Close()
		})
	}
}

// pipeForChild returns a pipe whose one end this process keeps (polled)
// and whose other end a child gets: ours reads when read is true.
func pipeForChild(read bool) (ours, childs *os.File, err error) {
	r, w, err := os.Pipe()
	if read {
		return r, w, err
	}
	return w, r, err
}

// countingPool is a bufferPool that counts the buffers it lends, and says
// on gave each time one comes back.
type countingPool struct {
	mu    sync.Mutex
	taken int
	given int
	gave  chan struct{}
}

func newCountingPool() *countingPool { return &countingPool{gave: make(chan struct{}, 16)} }

func (p *countingPool) takeBuffer() []byte {
	p.mu.Lock()
	p.taken++
	p.mu.Unlock()
	return make([]byte, 4<<10)
}

func (p *countingPool) giveBuffer([]byte) {
	p.mu.Lock()
	p.given++
	p.mu.Unlock()
	p.gave <- struct{}{}
}

// out reports how many buffers are lent.
func (p *countingPool) out() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.taken - p.given
}

// A lazy read holds no buffer while it waits: the attempt that finds
// nothing gives its buffer back before the read waits, and the bytes that
// come later arrive, all of what was sent, in a buffer taken for them.
// The end of the input and the errors give back the buffer too, with the
// errors Read gives.
func TestRawIOLazyReadHoldsNoBufferWhileItWaits(t *testing.T) {
	is := is.New(t)
	client, server := tcpPair(t)
	lr := server.(*rawConn)
	is.True(lr.readsLazily())

	pool := newCountingPool()
	type read struct {
		buf []byte
		n   int
		err error
	}
	done := make(chan read, 1)
	go func() {
		buf, n, err := lr.readLazy(pool)
		done <- read{buf, n, err}
	}()
	<-pool.gave // the first attempt found nothing, gave its buffer back and waits
	is.Equal(pool.out(), 0)
	head := "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}"
	_, err := io.WriteString(client, head)
	is.NoErr(err)
	got := <-done
	is.NoErr(got.err)
	is.Equal(string(got.buf), head) // what was sent, in one read
	is.Equal(got.n, len(head))
	is.Equal(pool.out(), 1) // the caller's, to give back

	// At the end of the input: nothing read, nothing lent.
	is.NoErr(client.(*rawConn).CloseWrite())
	buf, n, err := lr.readLazy(pool)
	is.True(buf == nil && n == 0)
	is.Equal(err, io.EOF)
	is.Equal(pool.out(), 1)

	// A deadline, and a closed connection: Read's errors.
	_, _, lazyErr := func() ([]byte, int, error) {
		_ = server.SetReadDeadline(time.Now().Add(-time.Second))
		defer server.SetReadDeadline(time.Time{})
		return lr.readLazy(pool)
	}()
	_, readErr := func() (int, error) {
		_ = server.SetReadDeadline(time.Now().Add(-time.Second))
		defer server.SetReadDeadline(time.Time{})
		return server.Read(make([]byte, 1))
	}()
	is.True(errors.Is(lazyErr, os.ErrDeadlineExceeded))
	is.Equal(lazyErr.Error(), readErr.Error())
	server.Close()
	_, _, lazyErr = lr.readLazy(pool)
	_, readErr = server.Read(make([]byte, 1))
	is.True(errors.Is(lazyErr, net.ErrClosed))
	is.Equal(lazyErr.Error(), readErr.Error())
	is.Equal(pool.out(), 1)
}

// DirectReader and DirectWriter wrap a non-blocking pipe's ends, outside
// the race detector, and leave stdout as it is.
func TestDirectReaderAndWriter(t *testing.T) {
	is := is.New(t)
	r, w, err := os.Pipe()
	is.NoErr(err)
	defer r.Close()
	defer w.Close()
	in, out := DirectReader(r), DirectWriter(w)
	_, inRaw := in.(*rawFile)
	_, outRaw := out.(*rawFile)
	is.Equal(inRaw, !raceEnabled)
	is.Equal(outRaw, !raceEnabled)
	is.Equal(DirectWriter(os.Stdout), io.Writer(os.Stdout))
}
