package transport

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// startHTTP1 serves srv on a loopback listener until the test ends, and
// returns its address.
func startHTTP1(t *testing.T, srv *HTTP1Server) string {
	t.Helper()
	return startHTTP1With(t, srv, nil)
}

// startHTTP1With is startHTTP1 on the listener wrap returns (nil: the
// loopback listener itself).
func startHTTP1With(t *testing.T, srv *HTTP1Server, wrap func(net.Listener) net.Listener) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		ln = wrap(ln)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v, not http.ErrServerClosed", err)
		}
	})
	return ln.Addr().String()
}

// eachReadPath runs f once for each way HTTP1Server reads its
// connections, with start serving srv and returning its address: "served",
// the connections as the listener gives them (read through rawIO on
// Linux outside the race detector, else one byte ahead), and on Linux
// "lazy", through rawIO whatever the build.
func eachReadPath(t *testing.T, f func(t *testing.T, start func(*HTTP1Server) string)) {
	t.Run("served", func(t *testing.T) {
		f(t, func(srv *HTTP1Server) string { return startHTTP1(t, srv) })
	})
	if lazyReadsHere {
		t.Run("lazy", func(t *testing.T) {
			f(t, func(srv *HTTP1Server) string { return startHTTP1With(t, srv, lazyListener) })
		})
	}
}

// echoHandler answers with the method, the path and the body's length and
// digest.
func echoHandler(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		w.Header().Set("Connection", "close")
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, "%s %s %d %x", r.Method, r.URL.Path, len(body), sha256.Sum256(body))
}

// echoed is what echoHandler answers to a request.
func echoed(method, path string, body []byte) string {
	return fmt.Sprintf("%s %s %d %x", method, path, len(body), sha256.Sum256(body))
}

// connStates records the states ConnState reports, in order.
type connStates struct {
	mu     sync.Mutex
	states []http.ConnState
	closed chan struct{}
	idle   chan struct{} // a value for each StateIdle
}

func newConnStates() *connStates {
	return &connStates{closed: make(chan struct{}, 16), idle: make(chan struct{}, 64)}
}

func (s *connStates) record(_ net.Conn, st http.ConnState) {
	s.mu.Lock()
	s.states = append(s.states, st)
	s.mu.Unlock()
	switch st {
	case http.StateClosed:
		s.closed <- struct{}{}
	case http.StateIdle:
		s.idle <- struct{}{}
	}
}

func (s *connStates) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for i, st := range s.states {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(st.String())
	}
	return b.String()
}

// One connection carries requests one after another and requests written
// at once (pipelined), answered in order; ConnState follows it as
// http.Server's does.
func TestHTTP1ServerKeepAliveAndPipelining(t *testing.T) {
	eachReadPath(t, func(t *testing.T, start func(*HTTP1Server) string) {
		is := is.New(t)
		states := newConnStates()
		addr := start(&HTTP1Server{Handler: http.HandlerFunc(echoHandler), ConnState: states.record})
		c := dialRaw(t, addr)
		br := bufio.NewReader(c)
		resp, body := rawGet(t, c, br, "/one")
		is.Equal(resp.StatusCode, http.StatusOK)
		is.Equal(body, echoed("GET", "/one", nil))
		is.True(!resp.Close)

		_, err := io.WriteString(c, "GET /two HTTP/1.1\r\nHost: a\r\n\r\n"+
			"POST /three HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"+
			"POST /four HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
		is.NoErr(err)
		for _, want := range []string{echoed("GET", "/two", nil), echoed("POST", "/three", []byte("hello")), echoed("POST", "/four", []byte("abc"))} {
			_, body = transporttest.ReadResponse(t, br)
			is.Equal(body, want)
		}
		resp, body = rawGet(t, c, br, "/five")
		is.Equal(body, echoed("GET", "/five", nil))
		// Closed only once the server has gone idle after its fifth
		// answer: a close that reaches the read ahead of a request in
		// flight ends the connection without StateIdle.
		for range 5 {
			<-states.idle
		}
		c.Close()
		<-states.closed
		is.Equal(states.String(), "new active idle active idle active idle active idle active idle closed")
	})
}

// A head that comes in pieces, and heads longer than the buffer a read
// ahead takes, are read whole.
func TestHTTP1ServerHeadsInPiecesAndLong(t *testing.T) {
	eachReadPath(t, func(t *testing.T, start func(*HTTP1Server) string) {
		is := is.New(t)
		addr := start(&HTTP1Server{Handler: http.HandlerFunc(echoHandler)})
		c := dialRaw(t, addr)
		br := bufio.NewReader(c)
		for _, piece := range []string{"PO", "ST /pieces HTTP/1.1\r\nHo", "st: a\r\nContent-Length: 5\r\n", "\r\nhel", "lo"} {
			_, err := io.WriteString(c, piece)
			is.NoErr(err)
		}
		_, body := transporttest.ReadResponse(t, br)
		is.Equal(body, echoed("POST", "/pieces", []byte("hello")))

		long := "GET /long HTTP/1.1\r\nHost: a\r\nX-Long: " + strings.Repeat("x", 3*h1BufferSize) + "\r\n\r\n"
		_, err := io.WriteString(c, long+long)
		is.NoErr(err)
		for range 2 {
			_, body = transporttest.ReadResponse(t, br)
			is.Equal(body, echoed("GET", "/long", nil))
		}
	})
}

// Go's HTTP client, 50 at once on keep-alive connections, with bodies from
// none to 1 MiB, of known and unknown length: every answer is the echo of
// its request, and connections are reused.
func TestHTTP1ServerGoClients(t *testing.T) {
	eachReadPath(t, func(t *testing.T, start func(*HTTP1Server) string) {
		is := is.New(t)
		addr := start(&HTTP1Server{Handler: http.HandlerFunc(echoHandler)})
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 50}}
		defer client.CloseIdleConnections()
		var reused atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 50)
		for g := range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 8 {
					size := (g*8 + i) * (1 << 20) / 400 // 0 .. 1 MiB
					body := bytes.Repeat([]byte{byte('a' + g%26)}, size)
					var rd io.Reader = bytes.NewReader(body)
					if i%2 == 1 {
						rd = io.MultiReader(rd) // unknown length: chunked
					}
					trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
						if info.Reused {
							reused.Add(1)
						}
					}}
					req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "POST", "http://"+addr+"/echo", rd)
					resp, err := client.Do(req)
					if err != nil {
						errs <- err
						return
					}
					got, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || string(got) != echoed("POST", "/echo", body) {
						errs <- fmt.Errorf("size %d: %v %q", size, err, got)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		is.True(reused.Load() > 0)
	})
}

// Expect: 100-continue: the 100 goes out when the handler reads the body;
// a handler that answers without reading gets no 100 sent and the
// connection closed after its answer; any other expectation gets 417.
func TestHTTP1ServerExpectContinue(t *testing.T) {
	eachReadPath(t, func(t *testing.T, start func(*HTTP1Server) string) {
		is := is.New(t)
		addr := start(&HTTP1Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/refuse" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			echoHandler(w, r)
		})})

		c := dialRaw(t, addr)
		br := bufio.NewReader(c)
		_, err := io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
		is.NoErr(err)
		line, err := br.ReadString('\n')
		is.NoErr(err)
		is.Equal(line, "HTTP/1.1 100 Continue\r\n")
		line, _ = br.ReadString('\n')
		is.Equal(line, "\r\n")
		_, err = io.WriteString(c, "hello")
		is.NoErr(err)
		resp, body := transporttest.ReadResponse(t, br)
		is.Equal(resp.StatusCode, http.StatusOK)
		is.Equal(body, echoed("POST", "/echo", []byte("hello")))
		is.True(!resp.Close)

		_, err = io.WriteString(c, "POST /refuse HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
		is.NoErr(err)
		resp, _ = transporttest.ReadResponse(t, br) // not a 100: the answer
		is.Equal(resp.StatusCode, http.StatusUnauthorized)
		is.True(resp.Close)
		is.True(transporttest.ClosedByPeer(br))

		c = dialRaw(t, addr)
		br = bufio.NewReader(c)
		_, err = io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: a\r\nExpect: something-else\r\nContent-Length: 5\r\n\r\nhello")
		is.NoErr(err)
		resp, _ = transporttest.ReadResponse(t, br)
		is.Equal(resp.StatusCode, http.StatusExpectationFailed)
		is.True(resp.Close)
	})
}

// How an answer's body is framed: Content-Length when the handler ends
// within 2 KiB without flushing (none for HEAD's body, 204 and 304),
// chunked otherwise, close-delimited for HTTP/1.0; a declared length is
// kept, and a write past it fails.
func TestHTTP1ServerAnswerFraming(t *testing.T) {
	is := is.New(t)
	long := strings.Repeat("x", 5000)
	overflow := make(chan error, 1)
	addr := startHTTP1(t, &HTTP1Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/short":
			_, _ = io.WriteString(w, "short")
		case "/long":
			_, _ = io.WriteString(w, long)
		case "/flushed":
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, "flushed")
		case "/204":
			w.WriteHeader(http.StatusNoContent)
		case "/304":
			w.WriteHeader(http.StatusNotModified)
		case "/declared":
			w.Header().Set("Content-Length", "4")
			_, _ = io.WriteString(w, "four")
			_, err := io.WriteString(w, "more")
			overflow <- err
		}
	})})
	c := dialRaw(t, addr)
	br := bufio.NewReader(c)
	for _, tc := range []struct {
		method, path  string
		length        int64
		chunked       bool
		body          string
		status        int
		headerLengthS string
	}{
		{"GET", "/short", 5, false, "short", 200, "5"},
		{"GET", "/long", -1, true, long, 200, ""},
		{"GET", "/flushed", -1, true, "flushed", 200, ""},
		{"GET", "/204", 0, false, "", 204, ""},
		{"GET", "/304", 0, false, "", 304, ""},
		{"GET", "/declared", 4, false, "four", 200, "4"},
		{"HEAD", "/short", 5, false, "", 200, "5"},
	} {
		_, err := io.WriteString(c, tc.method+" "+tc.path+" HTTP/1.1\r\nHost: a\r\n\r\n")
		is.NoErr(err)
		req, _ := http.NewRequest(tc.method, tc.path, nil)
		resp, err := http.ReadResponse(br, req)
		is.NoErr(err)
		body, err := io.ReadAll(resp.Body)
		is.NoErr(err)
		is.Equal(resp.StatusCode, tc.status)
		is.Equal(string(body), tc.body)
		is.Equal(resp.Header.Get("Content-Length"), tc.headerLengthS) // tc.path
		is.Equal(len(resp.TransferEncoding) > 0, tc.chunked)          // tc.path
		is.True(resp.Header.Get("Date") != "")
		is.True(!resp.Close)
	}
	is.Equal(<-overflow, http.ErrContentLength)

	c10 := dialRaw(t, addr) // HTTP/1.0: closed after, the long body delimited by the close
	_, err := io.WriteString(c10, "GET /long HTTP/1.0\r\n\r\n")
	is.NoErr(err)
	all, err := io.ReadAll(c10)
	is.NoErr(err)
	is.True(bytes.HasPrefix(all, []byte("HTTP/1.0 200 OK\r\n")))
	is.True(bytes.HasSuffix(all, []byte("\r\n\r\n"+long)))
	is.True(!bytes.Contains(all, []byte("Content-Length")))

	c10 = dialRaw(t, addr) // HTTP/1.0 with keep-alive and a short answer: kept
	br10 := bufio.NewReader(c10)
	for range 2 {
		_, err = io.WriteString(c10, "GET /short HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
		is.NoErr(err)
		resp, body := transporttest.ReadResponse(t, br10)
		is.Equal(body, "short")
		is.Equal(resp.Header.Get("Connection"), "keep-alive")
	}
}

// A client's Connection: close, and a handler's, close the connection
// after the answer, which says so.
func TestHTTP1ServerConnectionClose(t *testing.T) {
	eachReadPath(t, func(t *testing.T, start func(*HTTP1Server) string) {
		is := is.New(t)
		addr := start(&HTTP1Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/bye" {
				w.Header().Set("Connection", "close")
			}
			_, _ = io.WriteString(w, "ok")
		})})
		for _, req := range []string{
			"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
			"GET /bye HTTP/1.1\r\nHost: a\r\n\r\n",
		} {
			c := dialRaw(t, addr)
			br := bufio.NewReader(c)
			_, err := io.WriteString(c, req)
			is.NoErr(err)
			resp, body := transporttest.ReadResponse(t, br)
			is.Equal(body, "ok")
			is.True(resp.Close)
			is.True(transporttest.ClosedByPeer(br))
		}
	})
}

// Heads that cannot be served get a plain answer and a close: 431 past
// MaxHeaderBytes, 400 for a malformed line or a missing Host, 505 for
// HTTP/2's preface, 501 for a transfer coding other than chunked.
func TestHTTP1ServerRefusesBadHeads(t *testing.T) {
	is := is.New(t)
	addr := startHTTP1(t, &HTTP1Server{Handler: http.HandlerFunc(echoHandler), MaxHeaderBytes: 1 << 10})
	for _, tc := range []struct {
		head   string
		status int
	}{
		{"GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("x", 8<<10) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge},
		{"GET / HTTP/1.1 extra\r\nHost: a\r\n\r\n", http.StatusBadRequest},
		{"GET\x00 / HTTP/1.1\r\nHost: a\r\n\r\n", http.StatusBadRequest},
		{"GET / HTTP/1.1\r\n\r\n", http.StatusBadRequest},
		{"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", http.StatusBadRequest},
		{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", http.StatusHTTPVersionNotSupported},
		{"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", http.StatusNotImplemented},
	} {
		c := dialRaw(t, addr)
		br := bufio.NewReader(c)
		_, err := io.WriteString(c, tc.head)
		is.NoErr(err)
		resp, _ := transporttest.ReadResponse(t, br)
		is.Equal(resp.StatusCode, tc.status) // tc.head
		is.True(resp.Close)
		is.True(transporttest.ClosedByPeer(br))
	}
}

// A head that does not arrive within ReadHeaderTimeout, and a connection
// that carries no request for IdleTimeout, are closed; with no
// IdleTimeout a connection waits as long as its client.
func TestHTTP1ServerTimeouts(t *testing.T) {
	eachReadPath(t, func(t *testing.T, start func(*HTTP1Server) string) {
		is := is.New(t)
		addr := start(&HTTP1Server{Handler: http.HandlerFunc(echoHandler), ReadHeaderTimeout: 100 * time.Millisecond, IdleTimeout: 200 * time.Millisecond})
		slow := dialRaw(t, addr)
		_, err := io.WriteString(slow, "GET / HTTP/1.1\r\nHo")
		is.NoErr(err)
		began := time.Now()
		got, err := io.ReadAll(slow) // until the server closes it (dialRaw's deadline bounds the wait)
		is.NoErr(err)
		is.Equal(string(got), "")
		is.True(time.Since(began) >= 50*time.Millisecond)

		idle := dialRaw(t, addr)
		br := bufio.NewReader(idle)
		_, _ = rawGet(t, idle, br, "/")
		answered := time.Now()
		is.True(transporttest.ClosedByPeer(br))
		is.True(time.Since(answered) >= 150*time.Millisecond)

		states := newConnStates()
		addr = start(&HTTP1Server{Handler: http.HandlerFunc(echoHandler), ConnState: states.record})
		kept := dialRaw(t, addr)
		br = bufio.NewReader(kept)
		_, _ = rawGet(t, kept, br, "/")
		_ = kept.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err = br.ReadByte()
		var ne net.Error
		is.True(errors.As(err, &ne) && ne.Timeout()) // still open: the client's read timed out
		_ = kept.SetReadDeadline(time.Now().Add(serverTestWait))
		_, body := rawGet(t, kept, br, "/again")
		is.Equal(body, echoed("GET", "/again", nil))
	})
}

// A client that goes away ends its request's context: for a request
// without a body, and for one whose body was read.
func TestHTTP1ServerClientGoneEndsTheRequest(t *testing.T) {
	eachReadPath(t, func(t *testing.T, start func(*HTTP1Server) string) {
		is := is.New(t)
		inHandler := make(chan struct{}, 1)
		ended := make(chan error, 1)
		addr := start(&HTTP1Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadAll(r.Body)
			inHandler <- struct{}{}
			select {
			case <-r.Context().Done():
				ended <- r.Context().Err()
			case <-time.After(serverTestWait):
				ended <- errors.New("the context never ended")
			}
		})})
		for _, req := range []string{
			"GET /wait HTTP/1.1\r\nHost: a\r\n\r\n",
			"POST /wait HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
		} {
			c := dialRaw(t, addr)
			_, err := io.WriteString(c, req)
			is.NoErr(err)
			<-inHandler
			c.Close()
			is.Equal(<-ended, context.Canceled)
		}
	})
}

// A handler that panics has its connection closed and the panic logged
// in one record; another connection's request in flight is answered, and
// the server goes on; http.ErrAbortHandler is not logged.
func TestHTTP1ServerHandlerPanic(t *testing.T) {
	is := is.New(t)
	var logs transporttest.SyncBuffer
	inHandler := make(chan struct{}, 1)
	release := make(chan struct{})
	addr := startHTTP1(t, &HTTP1Server{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/panic":
				_, _ = io.WriteString(w, "partial")
				panic("boom")
			case "/abort":
				panic(http.ErrAbortHandler)
			case "/slow":
				inHandler <- struct{}{}
				<-release
			}
			_, _ = io.WriteString(w, "ok")
		}),
	})
	slow := dialRaw(t, addr)
	_, err := io.WriteString(slow, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
	is.NoErr(err)
	<-inHandler
	for _, path := range []string{"/panic", "/abort"} {
		c := dialRaw(t, addr)
		_, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: a\r\n\r\n")
		is.NoErr(err)
		got, err := io.ReadAll(c)
		is.NoErr(err)
		is.Equal(len(got), 0) // closed without an answer: nothing was flushed
	}
	close(release)
	_, body := transporttest.ReadResponse(t, bufio.NewReader(slow))
	is.Equal(body, "ok")
	c := dialRaw(t, addr)
	_, body = rawGet(t, c, bufio.NewReader(c), "/")
	is.Equal(body, "ok")
	is.Equal(strings.Count(logs.String(), "panicked"), 1)
	is.True(strings.Contains(logs.String(), "boom"))
}

// Shutdown closes the listener and the idle connections at once, waits
// for a streaming answer to end, then returns; RegisterOnShutdown's
// functions run once the listener is closed; a Shutdown whose context
// ends first returns its error.
func TestHTTP1ServerShutdown(t *testing.T) {
	is := is.New(t)
	streaming := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := &HTTP1Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			_, _ = io.WriteString(w, "data: 1\n\n")
			w.(http.Flusher).Flush()
			streaming <- struct{}{}
			<-release
			_, _ = io.WriteString(w, "data: 2\n\n")
			return
		}
		_, _ = io.WriteString(w, "ok")
	})}
	listenerClosed := make(chan struct{}, 2) // a signal per Shutdown
	srv.RegisterOnShutdown(func() { listenerClosed <- struct{}{} })
	addr := startHTTP1(t, srv)

	idle := dialRaw(t, addr)
	ibr := bufio.NewReader(idle)
	_, _ = rawGet(t, idle, ibr, "/")
	stream := dialRaw(t, addr)
	_, err := io.WriteString(stream, "GET /stream HTTP/1.1\r\nHost: a\r\n\r\n")
	is.NoErr(err)
	sbr := bufio.NewReader(stream)
	resp, err := http.ReadResponse(sbr, nil)
	is.NoErr(err)
	<-streaming

	expired, cancel := context.WithCancel(context.Background())
	cancel()
	is.Equal(srv.Shutdown(expired), context.Canceled) // the stream is still open
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()
	<-listenerClosed
	is.True(transporttest.ClosedByPeer(ibr)) // the idle one at once
	_, err = net.DialTimeout("tcp", addr, serverTestWait)
	is.True(err != nil) // no new connection
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned under a streaming answer: %v", err)
	default:
	}
	close(release)
	body, err := io.ReadAll(resp.Body)
	is.NoErr(err)
	is.Equal(string(body), "data: 1\n\ndata: 2\n\n")
	is.NoErr(<-shut)
	is.True(transporttest.ClosedByPeer(sbr))
}

// Close ends the requests in flight: their contexts end (the body read)
// and the connection is closed.
func TestHTTP1ServerClose(t *testing.T) {
	is := is.New(t)
	inHandler := make(chan struct{}, 1)
	ended := make(chan struct{})
	srv := &HTTP1Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inHandler <- struct{}{}
		<-r.Context().Done()
		close(ended)
	})}
	addr := startHTTP1(t, srv)
	c := dialRaw(t, addr)
	_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	is.NoErr(err)
	<-inHandler
	is.NoErr(srv.Close())
	<-ended
	got, err := io.ReadAll(c)
	is.NoErr(err)
	is.Equal(len(got), 0)
}

// What http.ResponseController and http.MaxBytesReader need works; a
// write after the handler has returned fails, and touches no other
// connection's answer.
func TestHTTP1ServerResponseWriter(t *testing.T) {
	is := is.New(t)
	leaked := make(chan http.ResponseWriter, 1)
	addr := startHTTP1(t, &HTTP1Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/controller":
			rc := http.NewResponseController(w)
			is.NoErr(rc.SetReadDeadline(time.Now().Add(time.Minute)))
			is.NoErr(rc.SetWriteDeadline(time.Now().Add(time.Minute)))
			_, _ = io.WriteString(w, "a")
			is.NoErr(rc.Flush())
			_, _ = io.WriteString(w, "b")
		case "/capped":
			_, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 3))
			var tooBig *http.MaxBytesError
			is.True(errors.As(err, &tooBig))
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusRequestEntityTooLarge)
		case "/leak":
			_, _ = io.WriteString(w, "first")
			leaked <- w
		default:
			_, _ = io.WriteString(w, strings.Repeat("o", 3000))
		}
	})})
	c := dialRaw(t, addr)
	br := bufio.NewReader(c)
	_, body := rawGet(t, c, br, "/controller")
	is.Equal(body, "ab")
	_, err := io.WriteString(c, "POST /capped HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789")
	is.NoErr(err)
	resp, _ := transporttest.ReadResponse(t, br)
	is.Equal(resp.StatusCode, http.StatusRequestEntityTooLarge)

	c = dialRaw(t, addr)
	br = bufio.NewReader(c)
	_, body = rawGet(t, c, br, "/leak")
	is.Equal(body, "first")
	w := <-leaked
	other := dialRaw(t, addr)
	obr := bufio.NewReader(other)
	_, err = io.WriteString(other, "GET /other HTTP/1.1\r\nHost: a\r\n\r\n")
	is.NoErr(err)
	_, err = io.WriteString(w, "late")
	is.Equal(err, errAnswerOver)
	w.(http.Flusher).Flush()
	_, body = transporttest.ReadResponse(t, obr)
	is.Equal(body, strings.Repeat("o", 3000))
	_, body = rawGet(t, c, br, "/after")
	is.Equal(body, strings.Repeat("o", 3000))
}

// curl, as users run it: a 2 MiB POST that waits for 100 Continue, and
// two requests on one connection.
func TestHTTP1ServerCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	is := is.New(t)
	addr := startHTTP1(t, &HTTP1Server{Handler: http.HandlerFunc(echoHandler)})
	body := bytes.Repeat([]byte("z"), 2<<20)
	cmd := exec.Command(curl, "-sS", "-v", "--data-binary", "@-", "-H", "Expect: 100-continue", "-H", "Content-Type: application/octet-stream",
		"http://"+addr+"/big", "http://"+addr+"/big")
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	is.NoErr(err)
	is.True(strings.Contains(stderr.String(), "HTTP/1.1 100 Continue"))
	is.True(strings.Contains(stderr.String(), "Re-using existing connection"))
	is.Equal(string(out), echoed("POST", "/big", body)+echoed("POST", "/big", body))
	is.True(strings.Contains(stderr.String(), "Content-Length: "+strconv.Itoa(len(body))))
}

// Connections waiting for their next request hold no reader, nor bytes
// read ahead (and no writer: an answer's is given back when it ends),
// however many they are.
func TestHTTP1ServerIdleConnectionsHoldNoBuffer(t *testing.T) {
	eachReadPath(t, func(t *testing.T, start func(*HTTP1Server) string) {
		is := is.New(t)
		srv := &HTTP1Server{Handler: http.HandlerFunc(echoHandler)}
		addr := start(srv)
		for i := range 50 {
			c := dialRaw(t, addr)
			br := bufio.NewReader(c)
			_, err := io.WriteString(c, "POST /"+strconv.Itoa(i)+" HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello")
			is.NoErr(err)
			_, body := transporttest.ReadResponse(t, br)
			is.Equal(body, echoed("POST", "/"+strconv.Itoa(i), []byte("hello")))
		}
		idle := func() (n int, holding int) {
			srv.mu.Lock()
			defer srv.mu.Unlock()
			for c := range srv.conns {
				c.mu.Lock() // the last server goroutine handed the connection over under it
				if c.state.Load() == h1Idle && c.handedOver {
					n++
					if c.br != nil || c.ahead != nil {
						holding++
					}
				}
				c.mu.Unlock()
			}
			return n, holding
		}
		waitUntil(t, "the connections never all waited for a request", func() bool { n, _ := idle(); return n == 50 })
		_, holding := idle()
		is.Equal(holding, 0)
	})
}
