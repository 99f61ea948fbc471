package transport

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// FuzzHTTP1Server gives an HTTP1Server a connection whose client sent
// arbitrary bytes and then closed its writing side (in memory: the fuzzer
// runs fast and opens no socket), and takes everything the server writes
// until it closes the connection: the server must close it — never panic,
// never hang — and what it wrote must parse as HTTP/1.x answers one after
// another (checked unless a request was a HEAD, whose answer's length a
// reader cannot tell without it).
func FuzzHTTP1Server(f *testing.F) {
	for _, seed := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
		"POST /mcp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /flush HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
		"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n",
		"GET /\x00 HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("x", 5000) + "\r\n\r\n",
		"GET / HTTP/1.0\r\n\r\n",
		"GET /big HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
		"HEAD / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\n\r\n",
		"\x16\x03\x01\x00\xa5\x01\x00\x00",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		c := &memConn{in: bytes.NewReader(input), closed: make(chan struct{})}
		ln := &oneConnListener{conn: c, closed: make(chan struct{})}
		srv := &HTTP1Server{Handler: http.HandlerFunc(fuzzHandler), MaxHeaderBytes: 4 << 10}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		select {
		case <-c.closed:
		case <-time.After(5 * time.Second):
			srv.Close()
			<-served
			t.Fatalf("the server neither answered nor closed within 5 s; got %q", c.output())
		}
		srv.Close()
		<-served
		out := c.output()
		if len(out) == 0 {
			return
		}
		if !bytes.HasPrefix(out, []byte("HTTP/1.")) {
			t.Fatalf("not an HTTP answer: %q", out)
		}
		if bytes.Contains(bytes.ToUpper(input), []byte("HEAD")) {
			return
		}
		br := bufio.NewReader(bytes.NewReader(out))
		for {
			if _, err := br.Peek(1); err == io.EOF {
				return
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("an answer does not parse: %v\n%q", err, out)
			}
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				t.Fatalf("an answer's body does not parse: %v\n%q", err, out)
			}
			resp.Body.Close()
		}
	})
}

// memConn is a connection whose client sent in and then closed its
// writing side, and which keeps what the server writes.
type memConn struct {
	in        *bytes.Reader
	mu        sync.Mutex
	out       bytes.Buffer
	closeOnce sync.Once
	closed    chan struct{}
}

func (c *memConn) Read(p []byte) (int, error) {
	return c.open(func() (int, error) { return c.in.Read(p) })
}

func (c *memConn) Write(p []byte) (int, error) {
	return c.open(func() (int, error) { return c.out.Write(p) })
}

// open runs io under the lock while c is open; on a closed c it fails
// as a closed socket does.
func (c *memConn) open(io func() (int, error)) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	return io()
}

func (c *memConn) output() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.out.Bytes())
}

func (c *memConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (c *memConn) CloseWrite() error                { return nil }
func (c *memConn) LocalAddr() net.Addr              { return memAddr{} }
func (c *memConn) RemoteAddr() net.Addr             { return memAddr{} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// memAddr is a memConn's address.
type memAddr struct{}

func (memAddr) Network() string { return "mem" }
func (memAddr) String() string  { return "mem" }

// oneConnListener accepts conn once, then waits until it is closed.
type oneConnListener struct {
	conn      net.Conn
	taken     bool
	closeOnce sync.Once
	closed    chan struct{}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	if !l.taken {
		l.taken = true
		return l.conn, nil
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return memAddr{} }

// fuzzHandler reads the request's body (at most 64 KiB) and answers with
// what it got: flushed first for /flush, long for /big.
func fuzzHandler(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	if err != nil {
		w.Header().Set("Connection", "close")
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch r.URL.Path {
	case "/flush":
		http.NewResponseController(w).Flush()
	case "/big":
		_, _ = io.WriteString(w, strings.Repeat("x", 5000))
	}
	fmt.Fprintf(w, "%s %s %d\n", r.Method, r.URL.Path, len(body))
}
