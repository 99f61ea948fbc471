package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// HTTP1Server serves HTTP/1.1 (and HTTP/1.0) requests with a Handler, as
// the subset of http.Server that serve uses, made so that a connection
// between two requests holds no buffer: it waits in a one-byte read of
// its own, on a goroutine that has served nothing (a small stack), and
// takes from pools a 4 KiB reader only while a request is read, and a
// 4 KiB writer (with 2 KiB for the start of the body) only while an answer
// is written, up to each flush. Ten thousand keep-alive clients then cost
// a few kilobytes each, not the twenty or so of http.Server. A request
// that begins is served by a goroutine that has served one before, when
// one is free, so that it does not pay a new goroutine's stack growth. On
// Linux a TCP or Unix connection is read and written with system calls
// that skip the runtime's bookkeeping (see [NewStdio]); ConnState is still
// given the connection the listener returned.
//
// Requests are parsed by http.ReadRequest. What it serves:
//
//   - keep-alive, with requests a client pipelines answered in order;
//     chunked and Content-Length request bodies; Expect: 100-continue
//     (the 100 goes out on the handler's first read of the body; a
//     handler that answers without reading it gets its connection closed
//     after the answer); any other Expect gets 417;
//   - answers with Content-Length when the handler ends before writing
//     2 KiB and has not flushed, chunked otherwise (close-delimited for
//     HTTP/1.0 clients); no body for HEAD, 1xx, 204 and 304; a Date
//     header, and a Content-Type sniffed from the first bytes when the
//     handler set none; informational (1xx) answers written as they are
//     sent; no trailers;
//   - Flush (and FlushError), and read and write deadlines, for
//     http.ResponseController; no Hijack, no HTTP/2;
//   - the request's context ends when its handler returns, when the
//     client closes its end (noticed once the body has been read), and
//     on Close;
//   - what a handler leaves of the request body is read, up to 256 KiB,
//     before the answer's header goes out, so that the connection can
//     carry the next request; beyond, the answer says Connection: close;
//   - an answer that says Connection: close, or one to a request that
//     does (or to an HTTP/1.0 request without keep-alive), closes the
//     connection after it; so does every answer once Shutdown has begun.
//
// A request head that cannot be read gets a short plain-text answer and
// its connection is closed: 431 past MaxHeaderBytes, 505 for a version
// other than HTTP/1.x, 501 for a transfer coding other than chunked, 400
// for anything else malformed (a missing Host in HTTP/1.1 among them); a
// connection that ends or times out within a head is closed without one.
// A handler that panics has its connection closed (its panic is logged,
// except http.ErrAbortHandler); nothing else is affected.
//
// ConnState is called as http.Server calls it (StateNew at accept,
// StateActive once a request head has been read, StateIdle after its
// answer, StateClosed), and ConnContext at accept, so that
// [LimitedListener] works under it as it does under http.Server.
//
// Set the fields before Serve; they are not to be changed afterwards.
type HTTP1Server struct {
	// Handler answers every request; required.
	Handler http.Handler
	// ConnState, when set, is told of each connection's changes of state.
	ConnState func(net.Conn, http.ConnState)
	// ConnContext, when set, returns the context of a new connection's
	// requests, from ctx (which carries http.LocalAddrContextKey).
	ConnContext func(ctx context.Context, c net.Conn) context.Context
	// ReadHeaderTimeout bounds the reading of a request head, from the
	// accept for a connection's first one, from its first byte for the
	// next ones; past it the connection is closed. 0 means no bound.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a connection that has waited this long for its
	// next request. 0 means no bound.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request head (its line and header fields);
	// 0 means http.DefaultMaxHeaderBytes. A longer head gets 431.
	MaxHeaderBytes int
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger

	initOnce sync.Once
	log      *slog.Logger
	readers  sync.Pool // *bufio.Reader of h1BufferSize
	aheads   sync.Pool // *[h1BufferSize]byte, for reads ahead
	outs     sync.Pool // *h1out
	done     chan struct{}
	doneOnce sync.Once
	connGone chan struct{} // a connection closed (one pending signal at most)
	work     chan *h1conn  // a connection whose request has begun, to a waiting worker

	shuttingDown atomic.Bool

	mu         sync.Mutex
	listeners  map[*net.Listener]struct{}
	conns      map[*h1conn]struct{}
	onShutdown []func()
}

// Sizes and bounds of [HTTP1Server].
const (
	// h1BufferSize is the size of the pooled reader and writer.
	h1BufferSize = 4 << 10
	// h1HeadSlack is how far past MaxHeaderBytes the head's reader may
	// read ahead (http.Server allows as much).
	h1HeadSlack = 4 << 10
	// h1PreBody is how much of an answer's body waits for its end, to be
	// sent with a Content-Length.
	h1PreBody = 2 << 10
	// h1DrainMax is how much of a request body a handler left unread is
	// read to keep its connection.
	h1DrainMax = 256 << 10
	// h1DrainWait bounds that reading when ReadHeaderTimeout does not.
	h1DrainWait = 10 * time.Second
	// h1LingerWait bounds the wait, after an answer, for a client still
	// sending a body the server will not read, before its connection is
	// closed: closing with its bytes unread would reset the connection and
	// could lose the answer.
	h1LingerWait = 500 * time.Millisecond
	// h1WorkerIdle is how long a goroutine that has served a request
	// waits for another connection's before it ends.
	h1WorkerIdle = 10 * time.Second
	// h1ErrorWriteWait bounds the writing of an answer to a head that
	// could not be read.
	h1ErrorWriteWait = 5 * time.Second
)

func (s *HTTP1Server) init() {
	s.initOnce.Do(func() {
		s.log = orDiscard(s.Logger)
		s.done = make(chan struct{})
		s.connGone = make(chan struct{}, 1)
		s.work = make(chan *h1conn)
		s.listeners = make(map[*net.Listener]struct{})
		s.conns = make(map[*h1conn]struct{})
	})
}

// headLimit returns how many bytes a request head may take, read-ahead
// included.
func (s *HTTP1Server) headLimit() int64 {
	n := s.MaxHeaderBytes
	if n <= 0 {
		n = http.DefaultMaxHeaderBytes
	}
	return int64(n) + h1HeadSlack
}

// Serve accepts connections on ln and serves them until Shutdown or Close,
// after which it returns http.ErrServerClosed; it returns ln's error
// otherwise. A failed accept (out of file descriptors, say) is retried,
// after a wait growing to a second. ln is closed when Serve returns.
func (s *HTTP1Server) Serve(ln net.Listener) error {
	s.init()
	if !s.trackListener(&ln, true) {
		return http.ErrServerClosed
	}
	defer s.trackListener(&ln, false)
	base := context.Background()
	var wait time.Duration
	for {
		rwc, err := ln.Accept()
		if err != nil {
			if s.shuttingDown.Load() {
				return http.ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			wait = min(max(2*wait, 5*time.Millisecond), time.Second)
			s.log.Warn("accepting a connection failed; retrying (if it says too many open files, raise the file-descriptor limit or lower --max-connections)", "err", err, "retry_in", wait)
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-s.done:
				t.Stop()
				return http.ErrServerClosed
			}
			continue
		}
		wait = 0
		s.startConn(base, rwc)
	}
}

// trackListener adds or removes ln; adding fails once the server is shut
// down.
func (s *HTTP1Server) trackListener(ln *net.Listener, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		if _, ok := s.listeners[ln]; ok {
			delete(s.listeners, ln)
			_ = (*ln).Close()
		}
		return true
	}
	if s.shuttingDown.Load() {
		_ = (*ln).Close()
		return false
	}
	s.listeners[ln] = struct{}{}
	return true
}

// startConn takes rwc in: it waits, on a goroutine of its own, for its
// first request.
func (s *HTTP1Server) startConn(base context.Context, rwc net.Conn) {
	c := &h1conn{srv: s, accepted: rwc, rwc: rawConnOf(rwc)}
	ctx := context.WithValue(base, http.LocalAddrContextKey, rwc.LocalAddr())
	if s.ConnContext != nil {
		ctx = s.ConnContext(ctx, rwc)
		if ctx == nil {
			panic("transport: HTTP1Server.ConnContext returned nil")
		}
	}
	c.ctx = ctx
	c.state.Store(h1New)
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	s.setState(c, http.StateNew)
	if s.shuttingDown.Load() { // Close raced the accept
		c.close()
		return
	}
	c.armHeadDeadline() // from the accept, as http.Server does
	c.handedOver = true
	go c.backgroundRead()
}

// setState calls ConnState, if set.
func (s *HTTP1Server) setState(c *h1conn, st http.ConnState) {
	if s.ConnState != nil {
		s.ConnState(c.accepted, st)
	}
}

// RegisterOnShutdown registers f to be called, on a goroutine of its own,
// once Shutdown has closed the listeners.
func (s *HTTP1Server) RegisterOnShutdown(f func()) {
	s.init()
	s.mu.Lock()
	s.onShutdown = append(s.onShutdown, f)
	s.mu.Unlock()
}

// Shutdown stops the server gracefully: it closes the listeners, then the
// connections waiting for a request, then each other one once its answer
// is out (every answer from now on says Connection: close), and returns
// when none is left, or with ctx's error when ctx ends first (then Close
// ends what is left). The requests' contexts are left alone.
func (s *HTTP1Server) Shutdown(ctx context.Context) error {
	s.init()
	s.shuttingDown.Store(true)
	s.doneOnce.Do(func() { close(s.done) })
	s.mu.Lock()
	lnErr := s.closeListenersLocked()
	for _, f := range s.onShutdown {
		go f()
	}
	s.mu.Unlock()
	for {
		if s.closeParked() == 0 {
			return lnErr
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.connGone:
		}
	}
}

// Close closes the listeners and every connection at once; the handlers
// still running see their request's context end (once its body was read)
// and their writes fail.
func (s *HTTP1Server) Close() error {
	s.init()
	s.shuttingDown.Store(true)
	s.doneOnce.Do(func() { close(s.done) })
	s.mu.Lock()
	err := s.closeListenersLocked()
	conns := make([]*h1conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	return err
}

// closeListenersLocked closes the listeners; s.mu is held.
func (s *HTTP1Server) closeListenersLocked() error {
	var err error
	for ln := range s.listeners {
		if cerr := (*ln).Close(); cerr != nil && err == nil && !errors.Is(cerr, net.ErrClosed) {
			err = cerr
		}
	}
	return err
}

// closeParked closes the connections waiting for a request and returns
// how many connections are left.
func (s *HTTP1Server) closeParked() int {
	s.mu.Lock()
	var parked []*h1conn
	for c := range s.conns {
		if st := c.state.Load(); st == h1New || st == h1Idle {
			parked = append(parked, c)
		}
	}
	s.mu.Unlock()
	for _, c := range parked {
		if st := c.state.Load(); (st == h1New || st == h1Idle) && c.state.CompareAndSwap(st, h1Closing) {
			c.close()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// untrack forgets c, closed.
func (s *HTTP1Server) untrack(c *h1conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	select {
	case s.connGone <- struct{}{}:
	default:
	}
}

// getReader returns a pooled reader reading from c.
func (s *HTTP1Server) getReader(c *h1conn) *bufio.Reader {
	if br, ok := s.readers.Get().(*bufio.Reader); ok {
		br.Reset((*h1source)(c))
		return br
	}
	return bufio.NewReaderSize((*h1source)(c), h1BufferSize)
}

// takeBuffer returns a buffer for a read ahead (see bufferPool).
func (s *HTTP1Server) takeBuffer() []byte {
	if b, ok := s.aheads.Get().(*[h1BufferSize]byte); ok {
		return b[:]
	}
	return new([h1BufferSize]byte)[:]
}

// giveBuffer puts back a buffer of takeBuffer's; a shorter slice (the
// one byte a read ahead that cannot read lazily reads) is dropped (see
// bufferPool).
func (s *HTTP1Server) giveBuffer(b []byte) {
	if cap(b) < h1BufferSize {
		return
	}
	s.aheads.Put((*[h1BufferSize]byte)(b[:h1BufferSize]))
}

// putReader puts br back in the pool.
func (s *HTTP1Server) putReader(br *bufio.Reader) {
	br.Reset(nil)
	s.readers.Put(br)
}

// getOut returns a pooled writer writing to c.
func (s *HTTP1Server) getOut(c *h1conn) *h1out {
	o, ok := s.outs.Get().(*h1out)
	if !ok {
		o = &h1out{bw: bufio.NewWriterSize(c.rwc, h1BufferSize), pre: make([]byte, 0, h1PreBody)}
		return o
	}
	o.bw.Reset(c.rwc)
	return o
}

// putOut puts o back in the pool.
func (s *HTTP1Server) putOut(o *h1out) {
	o.bw.Reset(nil)
	o.pre = o.pre[:0]
	s.outs.Put(o)
}

// h1out is what an answer is written through.
type h1out struct {
	bw  *bufio.Writer
	pre []byte // the start of the body, while it may still get a Content-Length
}

// States of an h1conn.
const (
	h1New     int32 = iota // accepted, waiting for its first request
	h1Active               // a request is read or answered
	h1Idle                 // waiting for its next request
	h1Closing              // chosen by Shutdown to be closed
	h1Closed
)

// States of an h1conn's background read.
const (
	bgNone    = iota // none started since the last request began
	bgReading        // under way
	bgDone           // over: bytes are pending, or bgErr says why not
)

// h1conn is a connection of an HTTP1Server.
type h1conn struct {
	srv *HTTP1Server
	// accepted is the connection as the listener returned it, which
	// ConnState is given; rwc is the same, read and written as
	// rawConnOf makes it.
	accepted net.Conn
	rwc      net.Conn
	ctx      context.Context
	state    atomic.Int32

	// Owned by the goroutine serving the connection; handed from one to
	// the next through mu.
	br      *bufio.Reader // nil while the connection waits for a request
	remain  int64         // what the head may still read
	addr    string        // RemoteAddr, once known
	one     [1]byte       // what a read ahead that cannot read lazily reads into
	readErr error         // the connection's last read error while a head was read
	// ahead is what the background read read (a buffer of the aheads
	// pool's, or one), set before it says bgDone; aheadAt how much of it
	// has been read since.
	ahead   []byte
	aheadAt int

	mu         sync.Mutex
	bg         int                // bgNone, bgReading or bgDone
	bgErr      error              // why the background read ended without a byte
	handedOver bool               // the background read serves the next request
	reqCancel  context.CancelFunc // the request in flight, ended if the client goes
}

// h1source is the reader under an h1conn's pooled reader: it yields the
// bytes read ahead first, and no more than the head's limit.
type h1source h1conn

func (src *h1source) Read(p []byte) (int, error) {
	c := (*h1conn)(src)
	if len(p) == 0 {
		return 0, nil
	}
	if c.remain <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > c.remain {
		p = p[:c.remain]
	}
	if c.ahead != nil {
		n := copy(p, c.ahead[c.aheadAt:])
		c.aheadAt += n
		c.remain -= int64(n)
		if c.aheadAt == len(c.ahead) {
			c.srv.giveBuffer(c.ahead)
			c.ahead, c.aheadAt = nil, 0
		}
		return n, nil
	}
	n, err := c.rwc.Read(p)
	c.remain -= int64(n)
	if err != nil {
		c.readErr = err
	}
	return n, err
}

// backgroundRead reads ahead: while a handler runs, to notice the client
// closing its end (which ends the request's context); while the
// connection waits for its next request (handedOver), as that wait, after
// which this goroutine serves the request. Where the connection reads
// lazily (see lazyReader) it reads what has come, the next request's
// head as a rule, into a buffer taken once it has come; elsewhere one
// byte. Either way a connection holds no buffer while it waits.
func (c *h1conn) backgroundRead() {
	buf, n, err := readAhead(c.rwc, &c.one, c.srv)
	c.mu.Lock()
	c.bg = bgDone
	if n > 0 {
		c.ahead, c.aheadAt = buf, 0
	} else {
		c.bgErr = err
	}
	handed := c.handedOver
	cancel := c.reqCancel
	c.mu.Unlock()
	if !handed {
		if n == 0 && cancel != nil {
			cancel() // the client is gone
		}
		return
	}
	if n == 0 {
		c.close() // the client closed, the idle timeout, or Shutdown
		return
	}
	st := c.state.Load()
	if (st != h1New && st != h1Idle) || !c.state.CompareAndSwap(st, h1Active) {
		c.close() // Shutdown took it as it woke
		return
	}
	c.mu.Lock()
	c.handedOver = false
	c.bg = bgNone
	c.mu.Unlock()
	c.armHeadDeadline()
	select {
	case c.srv.work <- c: // to a goroutine whose stack has grown already
		return
	default:
	}
	c.serve()
	c.srv.worker() // this one's has now
}

// worker serves the connections handed to it, each until it waits for a
// request again, and returns once none has come for h1WorkerIdle or the
// server is shut down. Serving on a goroutine whose stack has grown
// spares each request the growth from a new goroutine's small stack.
func (s *HTTP1Server) worker() {
	t := time.NewTimer(h1WorkerIdle)
	defer t.Stop()
	for {
		select {
		case c := <-s.work:
			c.serve()
			t.Reset(h1WorkerIdle)
		case <-t.C:
			return
		case <-s.done:
			return
		}
	}
}

// serve serves requests while their bytes are at hand: the next one's
// first byte is pending or buffered. It returns once the connection waits
// for a request on another goroutine, or is closed.
func (c *h1conn) serve() {
	for c.serveRequest() {
	}
}

// close closes the connection, once, and tells ConnState.
func (c *h1conn) close() {
	for {
		st := c.state.Load()
		if st == h1Closed {
			return
		}
		if c.state.CompareAndSwap(st, h1Closed) {
			break
		}
	}
	_ = c.rwc.Close()
	c.srv.untrack(c)
	c.srv.setState(c, http.StateClosed)
}

// lingerClose closes the connection after the client has stopped
// sending, or h1LingerWait (see lingerRead).
func (c *h1conn) lingerClose() {
	_ = c.rwc.SetReadDeadline(time.Now().Add(h1LingerWait))
	lingerRead(c.rwc)
	c.close()
}

// armHeadDeadline bounds the reading of the request head that has begun.
func (c *h1conn) armHeadDeadline() {
	if d := c.srv.ReadHeaderTimeout; d > 0 {
		_ = c.rwc.SetReadDeadline(time.Now().Add(d))
	}
}

// releaseReader puts the pooled reader back, if held.
func (c *h1conn) releaseReader() {
	if c.br != nil {
		c.srv.putReader(c.br)
		c.br = nil
	}
}

// remoteAddr returns the client's address as a string, computed once.
func (c *h1conn) remoteAddr() string {
	if c.addr == "" {
		if a := c.rwc.RemoteAddr(); a != nil {
			c.addr = a.String()
		}
	}
	return c.addr
}

// serveRequest reads one request and answers it, and reports whether
// the next request is to be served on this goroutine at once.
func (c *h1conn) serveRequest() bool {
	s := c.srv
	if c.br == nil {
		c.br = s.getReader(c)
	}
	c.remain = s.headLimit()
	c.readErr = nil
	req, err := http.ReadRequest(c.br)
	headRead := c.remain != s.headLimit()
	if err == nil {
		c.remain = math.MaxInt64
		if s.ReadHeaderTimeout > 0 {
			_ = c.rwc.SetReadDeadline(time.Time{})
		}
		err = checkRequest(req)
	}
	if headRead || err == nil {
		s.setState(c, http.StateActive)
	}
	if err != nil {
		c.refuseHead(err)
		return false
	}
	return c.answer(req)
}

// h1BadRequest is a request head refused with its status.
type h1BadRequest struct {
	status int
	why    string
}

func (e *h1BadRequest) Error() string { return e.why }

// checkRequest refuses what http.Server refuses of a head that
// http.ReadRequest took.
func checkRequest(req *http.Request) error {
	if req.ProtoMajor != 1 {
		return &h1BadRequest{http.StatusHTTPVersionNotSupported, "unsupported protocol version"}
	}
	if req.ProtoAtLeast(1, 1) && req.Host == "" && req.Method != http.MethodConnect {
		return &h1BadRequest{http.StatusBadRequest, "missing required Host header"}
	}
	if !validHost(req.Host) {
		return &h1BadRequest{http.StatusBadRequest, "malformed Host header"}
	}
	return nil
}

// validHost reports whether h may be a Host header's value: the bytes of
// a host and port (RFC 3986's reg-name, IP literal and port), no spaces
// or controls.
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		b := h[i]
		switch {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case strings.IndexByte("!$%&'()*+,-.:;=[]_~", b) >= 0:
		default:
			return false
		}
	}
	return true
}

// refuseHead answers a head that could not be read, when there is
// something to say, and closes the connection.
func (c *h1conn) refuseHead(err error) {
	c.releaseReader()
	status, why := http.StatusBadRequest, "400 Bad Request"
	var bad *h1BadRequest
	var ne net.Error
	if c.readErr != nil && c.remain > 0 {
		// The head was cut (textproto may report the part it got as
		// malformed): the client left, or took too long.
		err = c.readErr
	}
	switch {
	case c.remain <= 0:
		status, why = http.StatusRequestHeaderFieldsTooLarge, "431 Request Header Fields Too Large"
	case errors.As(err, &bad):
		status, why = bad.status, fmt.Sprintf("%d %s: %s", bad.status, http.StatusText(bad.status), bad.why)
	case strings.Contains(err.Error(), "unsupported transfer encoding"):
		status, why = http.StatusNotImplemented, "501 Not Implemented: unsupported transfer encoding"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.As(err, &ne) && ne.Timeout():
		c.close() // the client left, or took too long: no one to tell
		return
	default:
		var op *net.OpError
		if errors.As(err, &op) { // a reset, say
			c.close()
			return
		}
	}
	c.srv.log.Debug("refused a request head", "remote", c.remoteAddr(), "status", status, "err", err)
	_ = c.rwc.SetWriteDeadline(time.Now().Add(h1ErrorWriteWait))
	_, _ = io.WriteString(c.rwc, "HTTP/1.1 "+why[:3]+" "+http.StatusText(status)+
		"\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"+why)
	if status == http.StatusRequestHeaderFieldsTooLarge {
		c.lingerClose()
		return
	}
	c.close()
}

// answer runs the handler on req and finishes its answer; it reports
// whether the next request is to be served on this goroutine at once.
func (c *h1conn) answer(req *http.Request) (again bool) {
	s := c.srv
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	req = req.WithContext(ctx)
	req.RemoteAddr = c.remoteAddr()
	w := newH1Response(c, req)
	if ex := req.Header.Get("Expect"); ex != "" {
		if !strings.EqualFold(strings.TrimSpace(ex), "100-continue") {
			w.header.Set("Connection", "close")
			http.Error(w, "417 Expectation Failed: unsupported Expect", http.StatusExpectationFailed)
			return c.finish(w)
		}
		if req.ProtoAtLeast(1, 1) && w.body != nil {
			w.body.continueOwed = true
		}
	}
	c.mu.Lock()
	c.reqCancel = cancel
	c.mu.Unlock()
	if w.body == nil {
		c.requestRead()
	}
	panicked := true
	func() {
		defer func() {
			if !panicked {
				return
			}
			if p := recover(); p != nil && p != http.ErrAbortHandler {
				s.log.Error("a request's handler panicked; its connection is closed (this is a bug: report it with the stack below)",
					"remote", c.remoteAddr(), "method", req.Method, "path", req.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			}
		}()
		s.Handler.ServeHTTP(w, req)
		panicked = false
	}()
	if panicked {
		w.abandon()
		c.close()
		c.releaseReader()
		return false
	}
	cancel() // the handler has returned
	return c.finish(w)
}

// requestRead is called once the request, body included, has been read:
// unless the client has sent more already (pipelined), the reader goes
// back to its pool while the handler works, and the read ahead starts.
func (c *h1conn) requestRead() {
	if c.br.Buffered() > 0 {
		return
	}
	c.releaseReader()
	c.startBackgroundRead()
}

// startBackgroundRead starts the read ahead of a request in flight, once
// it has been read: the connection holds nothing else unread.
func (c *h1conn) startBackgroundRead() {
	c.mu.Lock()
	c.bg = bgReading
	c.mu.Unlock()
	go c.backgroundRead()
}

// finish completes w's answer and decides what comes next: the next
// request at once (pipelined, or read ahead), a wait for one (on the
// background read, or a new goroutine: this one's stack has grown), or
// the end of the connection.
func (c *h1conn) finish(w *h1response) bool {
	s := c.srv
	keep := w.finish()
	c.mu.Lock()
	c.reqCancel = nil
	bg, hasPending := c.bg, c.ahead != nil
	c.mu.Unlock()
	if !keep || (bg == bgDone && !hasPending) {
		c.releaseReader()
		if w.unreadBody() {
			c.lingerClose()
		} else {
			c.close()
		}
		return false
	}
	s.setState(c, http.StateIdle)
	buffered := c.br != nil && c.br.Buffered() > 0
	if !buffered {
		c.releaseReader()
	}
	if !c.state.CompareAndSwap(h1Active, h1Idle) {
		c.releaseReader()
		return false // closed under the answer
	}
	if s.shuttingDown.Load() { // Shutdown may have missed it
		if c.state.CompareAndSwap(h1Idle, h1Closing) {
			c.close()
		}
		c.releaseReader()
		return false
	}
	if buffered || hasPending {
		return c.resume()
	}
	if d := s.IdleTimeout; d > 0 {
		_ = c.rwc.SetReadDeadline(time.Now().Add(d))
	} else {
		_ = c.rwc.SetReadDeadline(time.Time{})
	}
	c.mu.Lock()
	c.handedOver = true
	switch c.bg {
	case bgReading: // it waits for the next request
		c.mu.Unlock()
		return false
	case bgDone: // it ended meanwhile
		c.handedOver = false
		hasPending = c.ahead != nil
		c.mu.Unlock()
		if !hasPending {
			c.close()
			return false
		}
		return c.resume()
	}
	c.bg = bgReading
	c.mu.Unlock()
	go c.backgroundRead() // a small stack for the wait
	return false
}

// resume takes an idle connection whose next request is at hand back to
// serve it on this goroutine, and reports whether it could (Shutdown may
// have closed it).
func (c *h1conn) resume() bool {
	if !c.state.CompareAndSwap(h1Idle, h1Active) {
		c.releaseReader()
		return false
	}
	c.mu.Lock()
	c.bg = bgNone
	c.mu.Unlock()
	c.armHeadDeadline()
	return true
}
