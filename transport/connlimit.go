package transport

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// DefaultMaxConnections is a default for [LimitConnections]: HTTP
// connections open at once.
const DefaultMaxConnections = 1024

// Bounds of the refusals of [LimitConnections].
const (
	// maxRefusing bounds the connections being refused at once; beyond,
	// a connection is closed as soon as it is accepted, without an answer.
	maxRefusing = 64
	// refuseWait bounds a refusal from accept to close.
	refuseWait = 2 * time.Second
	// refuseHeadMax is how much of a request head a refusal reads before
	// answering anyway.
	refuseHeadMax = 16 << 10
	// refuseDrainMax is how much a refusal reads after answering, while
	// it waits for the client to close its end.
	refuseDrainMax = 256 << 10
)

// LimitConnections returns a listener that accepts from ln and keeps at
// most max connections open at once (max <= 0 means
// [DefaultMaxConnections]); a connection counts from its accept until it
// is closed. Beyond max, a connection is not queued: it is refused at
// once, on a goroutine of its own, with an HTTP/1.1 answer —
//
//	503 Service Unavailable
//	Content-Type: application/json
//	Connection: close
//	Retry-After: 1
//
//	{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"too many connections (at most N); try again later"}}
//
// given once the request's head has arrived (an answer on a connection
// the client has not written to yet could be taken for the close of a
// stale keep-alive connection), after which the connection is closed.
// A refusal takes at most 2 seconds; while 64 are under way, further
// connections are closed at once without an answer. Refusals are logged
// on logger (nil discards them) at most once every 10 seconds, with the
// count of those in between.
//
// Put it under the http.Server that serves the HTTPServer: it bounds the
// file descriptors and memory that connections take, which no handler
// can, since an idle or half-sent connection never reaches one.
func LimitConnections(ln net.Listener, max int, logger *slog.Logger) net.Listener {
	if max <= 0 {
		max = DefaultMaxConnections
	}
	body := frame.ErrorResponse("", frame.CodeGateway, fmt.Sprintf("too many connections (at most %d); try again later", max)).Bytes()
	answer := "HTTP/1.1 503 Service Unavailable\r\n" +
		"Content-Type: application/json\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n" +
		"Connection: close\r\n" +
		"Retry-After: 1\r\n" +
		"\r\n" + string(body)
	return &limitListener{
		Listener: ln,
		max:      int64(max),
		answer:   []byte(answer),
		refusing: make(chan struct{}, maxRefusing),
		log:      orDiscard(logger),
		logs:     rateLog{every: refusalLogEvery},
	}
}

// limitListener is the listener of LimitConnections.
type limitListener struct {
	net.Listener
	max      int64
	open     atomic.Int64
	answer   []byte        // the refusal
	refusing chan struct{} // one token per refusal under way
	log      *slog.Logger
	logs     rateLog
}

// Accept returns the next connection within the limit, refusing those
// beyond it meanwhile.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &limitedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.refuse(c)
	}
}

// refuse refuses c without blocking the accept loop.
func (l *limitListener) refuse(c net.Conn) {
	if ok, unlogged := l.logs.allow(time.Now()); ok {
		l.log.Warn("refusing connections: too many are open", "max", l.max, "refused", unlogged+1)
	}
	select {
	case l.refusing <- struct{}{}:
		go func() {
			defer func() { <-l.refusing }()
			refuseConn(c, l.answer)
		}()
	default:
		c.Close() // too many refusals under way already
	}
}

// refuseConn answers the request on c with answer and closes c, all
// within refuseWait. It reads the request head first and, once it has
// answered, whatever the client still sends until the client closes its
// end: closing with unread bytes would reset the connection, and the
// client might lose the answer.
func refuseConn(c net.Conn, answer []byte) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(refuseWait))
	if !readHead(c) {
		return
	}
	if _, err := c.Write(answer); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, refuseDrainMax))
}

// readHead reads from r up to the end of an HTTP request head, or
// refuseHeadMax bytes of it, and reports whether it got there before the
// input ended or failed.
func readHead(r io.Reader) bool {
	var buf [2048]byte
	var scan headScanner
	for total := 0; total < refuseHeadMax; {
		n, err := r.Read(buf[:])
		total += n
		if scan.feed(buf[:n]) {
			return true
		}
		if err != nil {
			return false
		}
	}
	return true // a head that long: answer anyway
}

// headScanner finds the end of an HTTP/1 request head — the first empty
// line, CRLF CRLF or a bare LF LF (which servers accept too) — in bytes
// fed to it piece by piece.
type headScanner struct {
	state uint8 // 0: inside a line; 1: just after a LF; 2: after LF CR
	done  bool
}

// feed scans p and reports whether the head has ended, in p or before.
func (s *headScanner) feed(p []byte) bool {
	for _, b := range p {
		if s.done {
			break
		}
		switch {
		case b == '\n' && s.state != 0:
			s.done = true
		case b == '\n':
			s.state = 1
		case b == '\r' && s.state == 1:
			s.state = 2
		default:
			s.state = 0
		}
	}
	return s.done
}

// limitedConn is a connection within the limit; closing it makes room.
type limitedConn struct {
	net.Conn
	l      *limitListener
	closed atomic.Bool
}

func (c *limitedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.l.open.Add(-1)
	}
	return c.Conn.Close()
}

// CloseWrite shuts the writing side down where the connection can (TCP):
// net/http does so before it closes a connection whose request it did not
// read whole, so that the client still gets the answer.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
