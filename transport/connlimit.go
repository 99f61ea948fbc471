package transport

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
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
	// the oldest refusal whose client has sent nothing is closed to make
	// room, and when every one is under way, a connection is closed as
	// soon as it is accepted, without an answer.
	maxRefusing = 64
	// refuseWait bounds a refusal from accept to close.
	refuseWait = 2 * time.Second
	// refuseHeadMax is how much of a request head a refusal reads before
	// answering anyway.
	refuseHeadMax = 16 << 10
	// refuseDrainMax is how much a refusal reads after answering, while
	// it waits for the client to close its end.
	refuseDrainMax = 256 << 10
	// slowHead is how long a connection may take over a request head
	// before, at the limit with none idle, it may be closed to make room.
	slowHead = 5 * time.Second
)

// LimitConnections returns a listener that accepts from ln and keeps at
// most max connections open at once (max <= 0 means
// [DefaultMaxConnections]); a connection counts from its accept until it
// is closed.
//
// At the limit, a new connection takes the place of the one that has been
// idle longest: a connection is idle from its accept, and (with
// [LimitedListener.ConnState] set as the http.Server's ConnState) again
// from the end of each answer, until the first bytes of its next request
// arrive; one whose bytes have arrived (the kernel holds them, unread), has
// a request in flight or was hijacked is never closed. The idle one is
// closed without a word: a client that has sent nothing loses nothing,
// and one on a keep-alive connection opens another, as it does when a
// server's idle timeout closes one. So connections opened and left silent
// cannot keep a client out: the oldest of them make room. When none is
// idle, the connection that has been sending a request head the longest,
// for 5 seconds at least (with ConnState set: the server has not read the
// whole head), makes room the same way: a client trickling its head out
// byte by byte holds its place 5 seconds, not the server's whole header
// timeout. Its request was never taken.
//
// When no connection can make room, the new one is not queued: it is
// refused, on a goroutine of its own, with an HTTP/1.1 answer —
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
// A refusal takes at most 2 seconds; while 64 are under way, the oldest
// whose client has sent nothing is closed to make room, and when all 64
// are answering, a further connection is closed at once without an answer.
// Refusals and closes to make room are logged on logger (nil discards
// them), each kind at most once every 10 seconds, with the count of those
// in between.
//
// Put it under the http.Server that serves the HTTPServer, with the
// server's ConnState set to the listener's: it bounds the file descriptors
// and memory that connections take, which no handler can, since an idle
// or half-sent connection never reaches one.
func LimitConnections(ln net.Listener, max int, logger *slog.Logger) *LimitedListener {
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
	return &LimitedListener{
		Listener:  ln,
		now:       time.Now,
		max:       max,
		answer:    []byte(answer),
		log:       orDiscard(logger),
		logs:      frame.QuietLog{Every: refusalLogEvery},
		evictLogs: frame.QuietLog{Every: refusalLogEvery},
	}
}

// LimitedListener is the listener of [LimitConnections].
type LimitedListener struct {
	net.Listener
	now       func() time.Time // the clock of slow heads; tests set it
	max       int
	answer    []byte // the refusal
	log       *slog.Logger
	logs      frame.QuietLog // of refusals
	evictLogs frame.QuietLog // of idle connections closed to make room

	mu       sync.Mutex
	open     int      // connections counted against max
	idle     connList // those that may be closed to make room, longest idle first
	heads    connList // those sending a request head (with ConnState), oldest first
	refusals connList // refusals whose client has sent nothing yet, oldest first
	refusing int      // refusals under way
}

// Accept returns the next connection, within the limit or in the place of
// an idle one; it refuses those it cannot take meanwhile.
func (l *LimitedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc := &limitedConn{Conn: c, l: l}
		taken, victim := l.admit(lc)
		if victim != nil {
			if ok, unlogged := l.evictLogs.Allow(time.Now(), ""); ok {
				l.log.Warn("connections at the limit: closing the longest idle (or slowest to send its request) to make room; raise --max-connections if they are clients of yours", "max", l.max, "closed", unlogged+1)
			}
			_ = victim.Conn.Close()
		}
		if taken {
			return lc, nil
		}
		l.refuse(lc)
	}
}

// admit counts c in, and returns the idle connection it takes the place of
// (to be closed), if any; it reports false when c cannot be taken.
func (l *LimitedListener) admit(c *limitedConn) (bool, *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var victim *limitedConn
	if l.open >= l.max {
		victim = l.idle.takeSilent()
		if victim == nil {
			victim = l.heads.takeOlder(l.now().Add(-slowHead))
		}
		if victim == nil {
			return false, nil
		}
		victim.gone = true
		l.open--
	}
	l.open++
	c.state.Store(connIdle)
	l.idle.push(c)
	return true, victim
}

// ConnState follows the state of the connections it accepted, to know
// which are idle: set it as the http.Server's ConnState. Without it only
// the connections that have sent nothing since their accept count as idle.
func (l *LimitedListener) ConnState(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok || lc.l != l {
		return
	}
	switch s {
	case http.StateNew:
		l.mu.Lock()
		lc.tracked = true
		l.mu.Unlock()
	case http.StateActive, http.StateHijacked:
		l.mu.Lock()
		lc.state.Store(connBusy)
		lc.leave()
		l.mu.Unlock()
	case http.StateIdle:
		l.mu.Lock()
		if !lc.gone {
			lc.leave()
			lc.state.Store(connIdle)
			l.idle.push(lc)
		}
		l.mu.Unlock()
	}
}

// Open returns the number of connections counted against the limit.
func (l *LimitedListener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// refuse refuses c without blocking the accept loop.
func (l *LimitedListener) refuse(c *limitedConn) {
	if ok, unlogged := l.logs.Allow(time.Now(), ""); ok {
		l.log.Warn("refusing connections: too many are open, none idle (raise --max-connections, or look for clients holding requests open)", "max", l.max, "refused", unlogged+1)
	}
	c.refusal = true
	l.mu.Lock()
	var victim *limitedConn
	if l.refusing >= maxRefusing {
		if victim = l.refusals.takeSilent(); victim == nil {
			l.mu.Unlock()
			_ = c.Conn.Close() // every refusal under way is answering
			return
		}
		victim.gone = true
		l.refusing--
	}
	l.refusing++
	c.state.Store(connIdle)
	l.refusals.push(c)
	l.mu.Unlock()
	if victim != nil {
		_ = victim.Conn.Close()
	}
	go refuseConn(c, l.answer)
}

// connList is a list of connections, oldest first, linked through the
// connections themselves: joining or leaving it allocates nothing.
type connList struct{ head, tail *limitedConn }

// push adds c at the end.
func (q *connList) push(c *limitedConn) {
	c.list, c.prev, c.next = q, q.tail, nil
	if q.tail != nil {
		q.tail.next = c
	} else {
		q.head = c
	}
	q.tail = c
}

// remove takes c out of q.
func (q *connList) remove(c *limitedConn) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		q.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		q.tail = c.prev
	}
	c.list, c.prev, c.next = nil, nil, nil
}

// takeSilent takes out and returns the oldest connection of q whose
// client has sent nothing the kernel holds; those that have are taken out
// too, as busy (a request is arriving). nil when there is none. l.mu is
// held.
func (q *connList) takeSilent() *limitedConn {
	for c := q.head; c != nil; c = q.head {
		q.remove(c)
		if unreadBytes(c.Conn) > 0 {
			c.busyLocked()
			continue
		}
		return c
	}
	return nil
}

// takeOlder takes out and returns the oldest connection of q if it
// joined q at t or before; else nil.
func (q *connList) takeOlder(t time.Time) *limitedConn {
	c := q.head
	if c == nil || c.since.After(t) {
		return nil
	}
	q.remove(c)
	return c
}

// States of a limitedConn.
const (
	connIdle uint32 = iota // nothing received since its accept or its last answer
	connBusy               // a request is arriving or in flight
)

// limitedConn is a connection counted by a LimitedListener (or refused by
// it); closing it makes room.
type limitedConn struct {
	net.Conn
	l     *LimitedListener
	state atomic.Uint32 // read without the lock on every Read

	// Guarded by l.mu.
	list       *connList // idle, heads or refusals, or nil
	prev, next *limitedConn
	since      time.Time // when it joined heads
	refusal    bool      // refused: not counted in open, but in refusing
	gone       bool      // closed, or chosen to be: no longer counted
	tracked    bool      // the server reports its states (ConnState)
}

// busyLocked marks c busy: a request is arriving on it. One whose states
// the server reports joins the heads until the server has read the head
// (StateActive). l.mu is held.
func (c *limitedConn) busyLocked() {
	c.state.Store(connBusy)
	c.leave()
	if c.tracked && !c.refusal && !c.gone {
		c.since = c.l.now()
		c.l.heads.push(c)
	}
}

// Read reads from the connection; the first bytes after an idle spell
// make it busy, before they are handed on.
func (c *limitedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.state.Load() == connIdle {
		c.l.mu.Lock()
		if c.state.Load() == connIdle {
			c.busyLocked()
		}
		c.l.mu.Unlock()
	}
	return n, err
}

// leave takes c out of its list, if it is in one; l.mu is held.
func (c *limitedConn) leave() {
	if c.list != nil {
		c.list.remove(c)
	}
}

func (c *limitedConn) Close() error {
	l := c.l
	l.mu.Lock()
	if !c.gone {
		c.gone = true
		c.leave()
		if c.refusal {
			l.refusing--
		} else {
			l.open--
		}
	}
	l.mu.Unlock()
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
