package transport

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// acceptAll accepts from ln until it fails and hands each connection on.
func acceptAll(ln net.Listener) <-chan net.Conn {
	accepted := make(chan net.Conn, 16)
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	return accepted
}

// next returns the next connection accepted.
func next(t *testing.T, accepted <-chan net.Conn) net.Conn {
	t.Helper()
	select {
	case c := <-accepted:
		t.Cleanup(func() { c.Close() })
		return c
	case <-time.After(serverTestWait):
		t.Fatal("no connection accepted")
		return nil
	}
}

// limitedListener listens on loopback with LimitConnections(max), logging
// to log, and accepts in the background.
func limitedListener(t *testing.T, max int, log io.Writer) (string, <-chan net.Conn) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := LimitConnections(inner, max, slog.New(slog.NewTextHandler(log, nil)))
	ln.maxWaiting = 0 // no one reads these connections: refuse at once rather than wait
	accepted := acceptAll(ln)
	t.Cleanup(func() {
		ln.Close()
		for range accepted {
		}
	})
	return inner.Addr().String(), accepted
}

const refusalBody = `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"too many connections (at most 2); try again later"}}`

// carries checks that bytes written on w arrive on r: both are open.
func carries(t *testing.T, w, r net.Conn) {
	t.Helper()
	if _, err := w.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(r, got); err != nil || string(got) != "ping" {
		t.Fatalf("read %q, %v", got, err)
	}
}

// closedQuietly reports whether the peer closed c without sending a byte.
func closedQuietly(c net.Conn) bool {
	got, err := io.ReadAll(c)
	return len(got) == 0 && err == nil
}

// refusedWith503 sends a request head on a new connection and checks the
// answer is the refusal, with Retry-After, before the close.
func refusedWith503(t *testing.T, addr string) {
	t.Helper()
	is := is.New(t)
	c := dialRaw(t, addr)
	_, err := io.WriteString(c, "GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n")
	is.NoErr(err)
	br := bufio.NewReader(c)
	resp, got := transporttest.ReadResponse(t, br)
	is.Equal(resp.StatusCode, http.StatusServiceUnavailable)
	is.True(resp.Close)
	is.Equal(resp.Header.Get("Retry-After"), "1")
	is.Equal(resp.Header.Get("Content-Type"), "application/json")
	is.True(strings.HasPrefix(got, refusalBody[:strings.Index(refusalBody, "(at most")])) // refusalBody with this test's limit
	is.True(strings.HasSuffix(got, "); try again later\"}}"))
	is.True(transporttest.ClosedByPeer(br))
	c.Close() // the refusal waits for it
}

// At the limit a new connection takes the place of the one silent
// longest; one whose client has sent bytes is never closed for it.
func TestLimitConnectionsMakesRoomFromTheLongestIdle(t *testing.T) {
	is := is.New(t)
	var logs transporttest.SyncBuffer
	addr, accepted := limitedListener(t, 2, &logs)
	a := dialRaw(t, addr)
	sa := next(t, accepted)
	b := dialRaw(t, addr)
	sb := next(t, accepted)
	carries(t, b, sb) // b has spoken: busy from now on

	c := dialRaw(t, addr) // the limit: a, silent since its accept, makes room
	sc := next(t, accepted)
	is.True(closedQuietly(a))
	carries(t, sc, c)
	carries(t, b, sb) // untouched
	_ = sa

	d := dialRaw(t, addr) // c has only been written to: it is the idle one now
	sd := next(t, accepted)
	is.True(closedQuietly(c))
	carries(t, d, sd)
	carries(t, b, sb)
	is.Equal(strings.Count(logs.String(), "refusing one silent since its accept"), 1) // one line for the lot

	refusedWith503(t, addr) // b and d are busy: no room
}

// Bytes the kernel holds for a connection no one has read yet are a
// request arriving: it is not idle, and a newcomer is refused instead.
func TestLimitConnectionsKeepsAConnectionWithUnreadBytes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("unread bytes are counted on Linux")
	}
	is := is.New(t)
	addr, accepted := limitedListener(t, 2, io.Discard)
	a := dialRaw(t, addr)
	sa := next(t, accepted).(*limitedConn)
	b := dialRaw(t, addr)
	sb := next(t, accepted)
	carries(t, b, sb)
	_, err := io.WriteString(a, "GET / HTTP/1.1\r\n") // not read by the server
	is.NoErr(err)
	deadline := time.Now().Add(serverTestWait)
	for unreadBytes(sa.Conn) == 0 { // loopback hands the bytes over at once; this waits for the kernel, not for time
		if time.Now().After(deadline) {
			t.Fatal("the bytes never arrived")
		}
		runtime.Gosched()
	}
	refusedWith503(t, addr)
	got := make([]byte, 16)
	n, err := io.ReadFull(sa, got)
	is.NoErr(err)
	is.Equal(string(got[:n]), "GET / HTTP/1.1\r\n") // a's request is whole
}

// Beyond the cap with nothing idle, a connection gets an immediate 503 and
// is closed; those within are not disturbed, and closing one makes room.
// A flood of refusals is logged once.
func TestLimitConnectionsRefusesWhenNoneIsIdle(t *testing.T) {
	is := is.New(t)
	var logs transporttest.SyncBuffer
	addr, accepted := limitedListener(t, 2, &logs)
	a := dialRaw(t, addr)
	sa := next(t, accepted)
	b := dialRaw(t, addr)
	sb := next(t, accepted)
	carries(t, a, sa)
	carries(t, b, sb)

	for range 6 {
		refusedWith503(t, addr)
	}
	carries(t, a, sa) // the connections within the cap still carry bytes
	carries(t, sb, b)
	is.Equal(strings.Count(logs.String(), "refusing connections"), 1) // one line for the flood
	is.True(strings.Contains(logs.String(), "max=2"))

	sa.Close() // makes room at once
	d := dialRaw(t, addr)
	sd := next(t, accepted)
	carries(t, d, sd)
}

// expired is an after for a LimitedListener whose waits for a slot are
// over as soon as they begin.
func expired(time.Duration) <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}

// limitedServer serves handler on loopback through LimitConnections(max),
// wired to a server of kind as serve wires it, and returns the listener.
func limitedServer(t *testing.T, kind string, max int, handler http.HandlerFunc, tune func(*LimitedListener)) *LimitedListener {
	t.Helper()
	ln := LimitConnections(listenFor(t, kind), max, nil)
	if tune != nil {
		tune(ln)
	}
	serveLimited(t, kind, ln, handler)
	return ln
}

// listenFor returns a loopback listener for a server of kind: one whose
// connections read lazily for serverHTTP1Lazy.
func listenFor(t *testing.T, kind string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if kind == serverHTTP1Lazy {
		return lazyListener(ln)
	}
	return ln
}

// Kinds of servers the LimitConnections tests run under: serve's own,
// the same reading its connections lazily whatever the build (see
// eachReadPath; limitedServer's only), and the standard library's.
const (
	serverHTTP1     = "server=http1"
	serverHTTP1Lazy = "server=http1-lazy"
	serverNetHTTP   = "server=net-http"
)

// underEachServer runs test once under each kind of server.
func underEachServer(t *testing.T, test func(t *testing.T, kind string)) {
	kinds := []string{serverHTTP1, serverNetHTTP}
	if lazyReadsHere {
		kinds = append(kinds, serverHTTP1Lazy)
	}
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) { test(t, kind) })
	}
}

// serveLimited serves handler on ln with a server of kind, wired as serve
// wires it (ConnState, ConnContext and ln's Handler around handler), until
// the test ends.
func serveLimited(t testing.TB, kind string, ln *LimitedListener, handler http.Handler) {
	t.Helper()
	t.Cleanup(serveLimitedUntil(t, kind, ln, handler))
}

// serveLimitedUntil is serveLimited until the function it returns is
// called.
func serveLimitedUntil(t testing.TB, kind string, ln *LimitedListener, handler http.Handler) func() {
	t.Helper()
	var serve func(net.Listener) error
	var stop func() error
	switch kind {
	case serverHTTP1, serverHTTP1Lazy:
		srv := &HTTP1Server{Handler: ln.Handler(handler), ConnState: ln.ConnState, ConnContext: ln.ConnContext}
		serve, stop = srv.Serve, srv.Close
	case serverNetHTTP:
		srv := &http.Server{Handler: ln.Handler(handler), ConnState: ln.ConnState, ConnContext: ln.ConnContext}
		serve, stop = srv.Serve, srv.Close
	default:
		t.Fatalf("no server %q", kind)
	}
	served := make(chan error, 1)
	go func() { served <- serve(ln) }()
	return func() {
		_ = stop()
		<-served
	}
}

// waitUntil waits until cond holds: for the server's goroutines to reach a
// state, not for time to pass.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(serverTestWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
		runtime.Gosched()
	}
}

// rawGet sends a GET of path on c and reads its answer.
func rawGet(t *testing.T, c net.Conn, br *bufio.Reader, path string) (*http.Response, string) {
	t.Helper()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	return transporttest.ReadResponse(t, br)
}

// At the limit, a keep-alive connection between requests is never closed
// to make room (its client's next POST may be on the wire), and one with a
// request in flight never is either: the new connection waits for a slot,
// the next answer on the keep-alive connection says Connection: close, and
// once its client has read it and the connection is closed, the waiting
// connection's request is read and answered.
func TestLimitConnectionsNeverClosesAKeepAliveConnectionUnderItsClient(t *testing.T) {
	underEachServer(t, func(t *testing.T, kind string) {
		is := is.New(t)
		release := make(chan struct{})
		inHandler := make(chan struct{}, 1)
		ln := limitedServer(t, kind, 2, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				inHandler <- struct{}{}
				<-release
			}
			_, _ = io.WriteString(w, "ok")
		}, nil)
		addr := ln.Addr().String()

		slow := dialRaw(t, addr) // a request in flight
		_, err := io.WriteString(slow, "GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n")
		is.NoErr(err)
		<-inHandler
		keep := dialRaw(t, addr) // answered, then idle between requests
		kbr := bufio.NewReader(keep)
		resp, body := rawGet(t, keep, kbr, "/")
		is.Equal(resp.StatusCode, http.StatusOK)
		is.Equal(body, "ok")
		is.True(!resp.Close)

		fresh := dialRaw(t, addr) // at the limit: waits, closing no one
		_, err = io.WriteString(fresh, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
		is.NoErr(err)
		waitUntil(t, "the new connection never waited", func() bool { return ln.Waiting() == 1 })
		is.Equal(ln.Open(), 2)

		resp, body = rawGet(t, keep, kbr, "/") // the keep-alive client's next request: answered, and told to close
		is.Equal(resp.StatusCode, http.StatusOK)
		is.Equal(body, "ok")
		is.True(resp.Close)
		is.True(transporttest.ClosedByPeer(kbr))

		resp, body = transporttest.ReadResponse(t, bufio.NewReader(fresh)) // in keep's place
		is.Equal(resp.StatusCode, http.StatusOK)
		is.Equal(body, "ok")
		is.Equal(ln.Waiting(), 0)

		close(release) // the request in flight was never cut
		resp, body = transporttest.ReadResponse(t, bufio.NewReader(slow))
		is.Equal(resp.StatusCode, http.StatusOK)
		is.Equal(body, "ok")
	})
}

// The race of a keep-alive client's next request with a new connection
// at the limit: whichever the server sees first, the keep-alive request is
// answered (never cut), and the new connection is answered too or, if no
// room came in its wait, gets 503 with Retry-After, never a bare close.
func TestLimitConnectionsKeepAliveRequestRacingANewConnection(t *testing.T) {
	underEachServer(t, func(t *testing.T, kind string) {
		is := is.New(t)
		wait := make(chan time.Time)
		ln := limitedServer(t, kind, 1, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") },
			func(l *LimitedListener) { l.after = func(time.Duration) <-chan time.Time { return wait } })
		addr := ln.Addr().String()
		var answered, refused int
		for range 30 {
			keep := dialRaw(t, addr)
			kbr := bufio.NewReader(keep)
			resp, _ := rawGet(t, keep, kbr, "/")
			is.Equal(resp.StatusCode, http.StatusOK)

			next := make(chan *http.Response, 1)
			go func() {
				// the keep-alive client's next request, at the moment a new
				// connection arrives
				r, _ := rawGet(t, keep, kbr, "/")
				next <- r
			}()
			fresh := dialRaw(t, addr)
			_, err := io.WriteString(fresh, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
			is.NoErr(err)
			r := <-next
			is.Equal(r.StatusCode, http.StatusOK) // answered, whatever the order
			if !r.Close {
				// the server read it before the new connection came: keep stays
				// open; its client leaves, and the waiting one gets the slot
				keep.Close()
			}
			resp, _ = transporttest.ReadResponse(t, bufio.NewReader(fresh))
			switch resp.StatusCode {
			case http.StatusOK:
				answered++
			case http.StatusServiceUnavailable:
				is.Equal(resp.Header.Get("Retry-After"), "1")
				refused++
			default:
				t.Fatalf("new connection: %d", resp.StatusCode)
			}
			keep.Close()
			fresh.Close()
			waitUntil(t, "the connections never closed", func() bool { return ln.Open() == 0 })
		}
		is.Equal(answered+refused, 30)
	})
}

// A connection that waits for a slot and gets none in its wait is
// refused with 503 and Retry-After; while the waiting room is full, a
// further one is not accepted (it stays in the kernel's queue, its request
// unread) until a place frees, and then waits its turn too; those within
// are never disturbed.
func TestLimitConnectionsQueueIsBounded(t *testing.T) {
	underEachServer(t, func(t *testing.T, kind string) {
		is := is.New(t)
		wait := make(chan time.Time)
		release := make(chan struct{})
		inHandler := make(chan struct{}, 1)
		ln := limitedServer(t, kind, 1, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				inHandler <- struct{}{}
				<-release
			}
			_, _ = io.WriteString(w, "ok")
		}, func(l *LimitedListener) {
			l.after = func(time.Duration) <-chan time.Time { return wait }
			l.maxWaiting = 2
		})
		addr := ln.Addr().String()
		busy := dialRaw(t, addr)
		_, err := io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n")
		is.NoErr(err)
		<-inHandler

		var waiting []net.Conn
		for i := range 2 {
			c := dialRaw(t, addr)
			_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
			is.NoErr(err)
			waiting = append(waiting, c)
			waitUntil(t, "no wait", func() bool { return ln.Waiting() == i+1 })
		}
		third := dialRaw(t, addr) // the waiting room is full: left in the kernel's queue
		_, err = io.WriteString(third, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
		is.NoErr(err)
		is.Equal(ln.Waiting(), 2)

		close(wait) // the waits are over: refused, with the answer written before the close
		for _, c := range append(waiting, third) {
			br := bufio.NewReader(c)
			resp, _ := transporttest.ReadResponse(t, br)
			is.Equal(resp.StatusCode, http.StatusServiceUnavailable)
			is.Equal(resp.Header.Get("Retry-After"), "1")
			is.True(transporttest.ClosedByPeer(br))
			c.Close()
		}
		close(release)
		resp, body := transporttest.ReadResponse(t, bufio.NewReader(busy))
		is.Equal(resp.StatusCode, http.StatusOK)
		is.Equal(body, "ok")
	})
}

// The default limit follows the file-descriptor limit, with room kept for
// children, listeners, waiting and refused connections.
func TestConnectionLimit(t *testing.T) {
	is := is.New(t)
	is.Equal(ConnectionLimit(0, 10), DefaultMaxConnections)
	is.Equal(ConnectionLimit(20000, 116), (20000-FDReserve-FDPerChild*116-maxRefusing)*16/17)
	n := ConnectionLimit(1<<20, 116)
	is.True(n+maxWaitingFor(n)+maxRefusing+FDReserve+FDPerChild*116 <= 1<<20) // everything fits
	is.Equal(ConnectionLimit(1024, 116), (512-maxRefusing)*16/17)             // at least half the fds
	is.Equal(ConnectionLimit(40, 0), 16)
	is.True(RaiseFileLimit() >= 0)
}

// While 64 refusals wait for silent clients, the oldest of them makes room
// for a further refusal, so that a client that does send its request
// still reads the 503.
func TestLimitConnectionsBoundsTheRefusals(t *testing.T) {
	is := is.New(t)
	addr, accepted := limitedListener(t, 1, io.Discard)
	busy := dialRaw(t, addr)
	carries(t, busy, next(t, accepted))
	silent := make([]net.Conn, maxRefusing)
	for i := range silent {
		silent[i] = dialRaw(t, addr) // sends nothing: its refusal waits for a request head
	}
	c := dialRaw(t, addr)
	_, err := io.WriteString(c, "GET /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n")
	is.NoErr(err)
	resp, _ := transporttest.ReadResponse(t, bufio.NewReader(c))
	is.Equal(resp.StatusCode, http.StatusServiceUnavailable)
	is.Equal(resp.Header.Get("Retry-After"), "1")
	is.True(closedQuietly(silent[0])) // the oldest silent refusal made room
}

// FuzzHeadScanner feeds arbitrary bytes, split at an arbitrary point, to
// the scanner for the end of a request head: it must find the end exactly
// when the bytes hold an empty line, however they are split.
func FuzzHeadScanner(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1\nHost: x\n\nbody",
		"POST / HTTP/1.1\r\nA: b\r\n\r",
		"\r\n\r\n",
		"a\n\r\r\n",
		"a\r\r\n\n",
		"",
	} {
		f.Add([]byte(s), uint16(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint16) {
		want := bytes.Contains(in, []byte("\n\n")) || bytes.Contains(in, []byte("\n\r\n"))
		var whole headScanner
		if got := whole.feed(in); got != want {
			t.Fatalf("whole %q: %v, want %v", in, got, want)
		}
		i := int(cut) % (len(in) + 1)
		var split headScanner
		first := split.feed(in[:i])
		if got := split.feed(in[i:]); got != want || (first && !want) {
			t.Fatalf("split %q at %d: %v, want %v", in, i, got, want)
		}
		if !readHeadOf(in) && want && len(in) <= refuseHeadMax {
			t.Fatalf("readHead missed the end of %q", in)
		}
	})
}

// readHeadOf runs readHead over in, delivered a byte at a time.
func readHeadOf(in []byte) bool {
	return readHead(&oneByteReader{in})
}

type oneByteReader struct{ b []byte }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	p[0] = r.b[0]
	r.b = r.b[1:]
	return 1, nil
}

// idleLen returns the number of connections idle now.
func (l *LimitedListener) idleLen() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for c := l.idle.head; c != nil; c = c.next {
		n++
	}
	return n
}

// headsLen returns the number of connections sending a request head.
func (l *LimitedListener) headsLen() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for c := l.heads.head; c != nil; c = c.next {
		n++
	}
	return n
}

// Connections trickling a request head (the slow-header attack) hold
// their place for slowHead, not for the server's header timeout: past it,
// with none idle, the one that started longest ago makes room for a new
// connection, whose request is answered.
func TestLimitConnectionsMakesRoomFromASlowHead(t *testing.T) {
	underEachServer(t, func(t *testing.T, kind string) {
		is := is.New(t)
		inner := listenFor(t, kind)
		ln := LimitConnections(inner, 2, nil)
		ln.after = expired
		var clock atomic.Int64 // seconds
		ln.now = func() time.Time { return time.Unix(clock.Load(), 0) }
		serveLimited(t, kind, ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
		addr := inner.Addr().String()
		var slow []net.Conn
		for i := range 2 {
			c := dialRaw(t, addr)
			_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: loc") // and no more
			is.NoErr(err)
			slow = append(slow, c)
			deadline := time.Now().Add(serverTestWait)
			for ln.headsLen() != i+1 { // the server has read what came of the head
				if time.Now().After(deadline) {
					t.Fatal("the head never arrived")
				}
				runtime.Gosched()
			}
		}

		refusedWith503(t, addr) // too soon to call them slow
		clock.Add(int64(slowHead / time.Second))
		fresh := dialRaw(t, addr)
		_, err := io.WriteString(fresh, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
		is.NoErr(err)
		resp, body := transporttest.ReadResponse(t, bufio.NewReader(fresh))
		is.Equal(resp.StatusCode, http.StatusOK)
		is.Equal(body, "ok")
		got, _ := io.ReadAll(slow[0]) // the first slow head was closed, unanswered
		is.Equal(len(got), 0)
	})
}

// At the limit, a connection silent since its accept that makes room for
// a new one is not cut under its client: its request, sent after it was
// chosen, gets the 503 with Retry-After (it was not taken), and the new
// connection is served.
func TestLimitConnectionsRefusesASilentConnectionItMakesRoomOf(t *testing.T) {
	underEachServer(t, func(t *testing.T, kind string) {
		is := is.New(t)
		var logs transporttest.SyncBuffer
		inner := listenFor(t, kind)
		ln := LimitConnections(inner, 1, slog.New(slog.NewTextHandler(&logs, nil)))
		ln.headWait = refuseWait // the refused client's request comes after the new one's answer: not within 0.5 s on a loaded machine
		serveLimited(t, kind, ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
		addr := inner.Addr().String()
		silent := dialRaw(t, addr)
		waitUntil(t, "the silent connection was never accepted", func() bool { return ln.Open() == 1 })

		fresh := dialRaw(t, addr) // takes the silent one's place
		resp, body := rawGet(t, fresh, bufio.NewReader(fresh), "/")
		is.Equal(resp.StatusCode, http.StatusOK)
		is.Equal(body, "ok")

		sbr := bufio.NewReader(silent)
		resp, _ = rawGet(t, silent, sbr, "/") // its client's request, after it was chosen
		is.Equal(resp.StatusCode, http.StatusServiceUnavailable)
		is.Equal(resp.Header.Get("Retry-After"), "1")
		is.True(resp.Close)
		is.True(transporttest.ClosedByPeer(sbr))
		is.True(strings.Contains(logs.String(), "refusing one silent since its accept"))
	})
}
