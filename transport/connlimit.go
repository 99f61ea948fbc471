package transport

import (
	"context"
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

// DefaultMaxConnections is [LimitConnections]'s default when no other is
// given, and [ConnectionLimit]'s when the file-descriptor limit is
// unknown: HTTP connections open at once.
const DefaultMaxConnections = 1024

// File descriptors [ConnectionLimit] keeps for other uses than
// connections.
const (
	// FDReserve is kept for listeners, logs, files and the runtime.
	FDReserve = 64
	// FDPerChild is kept for each child process (its stdin, stdout and
	// stderr pipes, a pidfd, with room to spare).
	FDPerChild = 8
)

// ConnectionLimit returns the default connection limit of a process that
// may open fdLimit file descriptors and run at most children child
// processes at once: of avail = fdLimit − [FDReserve] − [FDPerChild] ×
// children (but at least half of fdLimit), the 64 connections being
// refused at once are set aside, and the rest is shared by the
// connections served and those waiting for a slot (a sixteenth as many):
// (avail − 64) × 16 / 17, at least 16. fdLimit <= 0 (unknown) gives
// [DefaultMaxConnections].
func ConnectionLimit(fdLimit, children int) int {
	if fdLimit <= 0 {
		return DefaultMaxConnections
	}
	avail := fdLimit - FDReserve - FDPerChild*max(children, 0)
	if avail < fdLimit/2 {
		avail = fdLimit / 2
	}
	return max((avail-maxRefusing)*16/17, 16)
}

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
	// evictWait is how long a connection silent since its accept, chosen
	// to make room, waits for its client's request (to refuse it) before
	// it is closed: far more than the time between a client's connect and
	// its first bytes.
	evictWait = 500 * time.Millisecond
	// queueWait is how long a connection accepted at the limit waits for
	// a slot before it is refused.
	queueWait = time.Second
)

// LimitConnections returns a listener that accepts from ln and keeps at
// most max connections open at once (max <= 0 means
// [DefaultMaxConnections]); a connection counts from its accept until it
// is closed. On Linux the connections it returns read and write as
// [HTTP1Server]'s do.
//
// No connection a client may be using is closed to make room: a
// keep-alive connection between two requests may have the client's next
// POST on the wire, which HTTP clients do not send again. Such a
// connection ends only at the server's IdleTimeout, or after an
// answer that says Connection: close. At the limit, a new connection:
//
//   - takes the place of the one silent longest since its accept that has
//     never sent a byte (the kernel holds none for it, unread), so that
//     connections opened and left silent cannot keep a client out; with
//     ConnState set, that one is refused rather than cut (the 503 below
//     answers a request whose head arrives within 0.5 seconds; one arriving as
//     it was chosen is served after all, the limit exceeded by one), at
//     most 64 at once with the other refusals; without, it is closed;
//
//   - else, with [LimitedListener.ConnState] set as the server's
//     ConnState, takes the place of the connection that has been sending a
//     request head for 5 seconds or more (the server has not read the whole
//     head, so its request was never taken): a client trickling its head
//     byte by byte holds its place 5 seconds, not the server's whole header
//     timeout;
//
//   - else waits, up to 1 second and with at most max/16 (at least 16)
//     others, for a connection to close; its request is read only once it
//     has a slot. While that many wait, Accept does not accept: new
//     connections stay in the kernel's queue, their requests unread.
//     While connections wait, with [LimitedListener.Handler] around the
//     server's handler and [LimitedListener.ConnContext] as its
//     ConnContext, the answers to requests that start are sent with
//     Connection: close, one per waiting connection, so that busy clients
//     make room between their requests, at a moment they know of;
//
//   - once its wait is over (or at once, with no waiting room), is refused
//     with an HTTP/1.1 answer —
//
//     503 Service Unavailable
//     Content-Type: application/json
//     Connection: close
//     Retry-After: 1
//
//     {"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"too many connections (at most N); try again later"}}
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
// Put it under the http.Server or [HTTP1Server] that serves the
// HTTPServer, with the server's ConnState, ConnContext and Handler set as
// above: it bounds the file descriptors and memory that connections take,
// which no handler can, since an idle or half-sent connection never
// reaches one.
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
	l := &LimitedListener{
		Listener:   ln,
		now:        time.Now,
		after:      time.After,
		headWait:   evictWait,
		max:        max,
		maxWaiting: maxWaitingFor(max),
		answer:     []byte(answer),
		log:        orDiscard(logger),
		logs:       frame.QuietLog{Every: refusalLogEvery},
		evictLogs:  frame.QuietLog{Every: refusalLogEvery},
	}
	l.room.L = &l.mu
	return l
}

// maxWaitingFor returns how many connections may wait for a slot under
// a limit of max.
func maxWaitingFor(limit int) int { return max(limit/16, 16) }

// LimitedListener is the listener of [LimitConnections].
type LimitedListener struct {
	net.Listener
	now        func() time.Time                     // the clock of slow heads; tests set it
	after      func(time.Duration) <-chan time.Time // the end of a wait for a slot; tests set it
	headWait   time.Duration                        // evictWait; tests on a loaded machine lengthen it
	max        int
	maxWaiting int
	answer     []byte // the refusal
	log        *slog.Logger
	logs       frame.QuietLog // of refusals
	evictLogs  frame.QuietLog // of idle connections closed to make room

	nwaiting atomic.Int32 // waiting.n, read without the lock by Handler

	mu       sync.Mutex
	open     int       // connections counted against max
	idle     connList  // those that may be closed to make room: silent since accept, longest first
	heads    connList  // those sending a request head (with ConnState), oldest first
	waiting  connList  // those waiting for a slot, oldest first
	closing  int       // connections told to close after their answer, not closed yet
	refusals connList  // refusals whose client has sent nothing yet, oldest first
	refusing int       // refusals under way
	room     sync.Cond // signalled when the waiting room has a place
	closed   bool      // Close was called
}

// Accept returns the next connection: within the limit, in the place of
// one that makes room, or waiting for a slot (its first Read waits); it
// refuses those it cannot take meanwhile.
func (l *LimitedListener) Accept() (net.Conn, error) {
	for {
		// While the waiting room is full, new connections stay in the
		// kernel's queue, their requests unread: none is cut.
		l.mu.Lock()
		for l.maxWaiting > 0 && l.waiting.n >= l.maxWaiting && !l.closed {
			l.room.Wait()
		}
		l.mu.Unlock()
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc := &limitedConn{Conn: rawConnOf(c), l: l}
		taken, victim := l.admit(lc)
		if victim != nil {
			if ok, unlogged := l.evictLogs.Allow(time.Now(), ""); ok {
				l.log.Warn("connections at the limit: refusing one silent since its accept (or closing the slowest to send its request) to make room; raise --max-connections if they are clients of yours", "max", l.max, "closed", unlogged+1)
			}
			if !victim.evicted.Load() { // else its read refuses it
				_ = victim.Conn.Close()
			}
		}
		if taken {
			return lc, nil
		}
		l.refuse(lc)
	}
}

// admit counts c in, or makes it wait for a slot, and returns the
// connection it takes the place of (to be closed), if any; it reports
// false when c can neither be taken nor wait.
func (l *LimitedListener) admit(c *limitedConn) (bool, *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var victim *limitedConn
	if l.open >= l.max {
		if l.refusing < maxRefusing {
			victim = l.idle.takeSilent()
		}
		if victim != nil && victim.tracked {
			// Its server reads it: it is refused rather than cut, in case
			// its client's request is on the wire.
			victim.evicted.Store(true)
			victim.refusal = true
			l.refusing++
			// Its server's read ends (under the lock: see reinstate).
			_ = victim.Conn.SetReadDeadline(time.Now())
			c.state.Store(connIdle) // and c takes its place
			l.idle.push(c)
			return true, victim
		}
		if victim == nil {
			victim = l.heads.takeOlder(l.now().Add(-slowHead))
		}
		if victim == nil {
			if l.waiting.n >= l.maxWaiting {
				return false, nil
			}
			c.waiting = true
			c.wake = make(chan struct{})
			l.waiting.push(c)
			l.nwaiting.Add(1)
			return true, nil
		}
		victim.gone = true
		l.open--
	}
	l.open++
	c.state.Store(connIdle)
	l.idle.push(c)
	return true, victim
}

// admitWaitingLocked gives the free slots to the connections waiting for
// one, oldest first. l.mu is held.
func (l *LimitedListener) admitWaitingLocked() {
	for l.open < l.max && l.waiting.head != nil {
		w := l.waiting.head
		l.waiting.remove(w)
		l.nwaiting.Add(-1)
		w.waiting = false
		l.open++
		w.state.Store(connIdle)
		l.idle.push(w)
		close(w.wake)
		l.room.Signal()
	}
}

// awaitSlot waits until c, accepted at the limit, has a slot, and reports
// true; when its wait is over first, it refuses c and reports false.
func (c *limitedConn) awaitSlot() bool {
	l := c.l
	select {
	case <-c.wake:
	case <-l.after(queueWait):
	}
	l.mu.Lock()
	if !c.waiting { // given a slot, or closed (then reads fail)
		c.wake = nil
		l.mu.Unlock()
		return true
	}
	c.waiting = false
	c.gone = true
	l.waiting.remove(c)
	l.nwaiting.Add(-1)
	l.room.Signal()
	l.mu.Unlock()
	l.logRefusal()
	refuseConnWithin(c.Conn, l.answer, l.headWait) // it has waited already
	return false
}

// ConnContext puts the connection c in ctx, for [LimitedListener.Handler]:
// set it as the server's ConnContext (http.Server's or [HTTP1Server]'s).
func (l *LimitedListener) ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, limitedConnKey{}, c)
}

// limitedConnKey is the context key of [LimitedListener.ConnContext].
type limitedConnKey struct{}

// Handler returns next, whose answers say Connection: close, one per
// connection waiting for a slot, while some are: the client of a
// connection so told opens another for its next request (and waits its
// turn), and loses nothing. It needs [LimitedListener.ConnContext].
func (l *LimitedListener) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.nwaiting.Load() > 0 && l.owesClose(r) {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// owesClose reports whether the connection of r is to close after this
// answer, to make room for a waiting connection, and marks it so.
func (l *LimitedListener) owesClose(r *http.Request) bool {
	lc, ok := r.Context().Value(limitedConnKey{}).(*limitedConn)
	if !ok || lc.l != l {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if lc.closing || lc.gone || l.waiting.n <= l.closing {
		return false
	}
	lc.closing = true
	l.closing++
	return true
}

// ConnState follows the state of the connections it accepted, to know
// which are sending a request head and which have a request in flight:
// set it as the server's ConnState (http.Server's or [HTTP1Server]'s).
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
		// Between requests: never closed to make room (the client's next
		// request may be on the wire), so in no list.
		l.mu.Lock()
		if !lc.gone {
			lc.leave()
			lc.state.Store(connIdle)
		}
		l.mu.Unlock()
	}
}

// Waiting returns the number of connections waiting for a slot.
func (l *LimitedListener) Waiting() int { return int(l.nwaiting.Load()) }

// Open returns the number of connections counted against the limit.
func (l *LimitedListener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// refuse refuses c without blocking the accept loop.
func (l *LimitedListener) refuse(c *limitedConn) {
	l.logRefusal()
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

// logRefusal logs a refusal, at most once every 10 seconds.
func (l *LimitedListener) logRefusal() {
	if ok, unlogged := l.logs.Allow(time.Now(), ""); ok {
		l.log.Warn("refusing connections: too many are open and none can make room (raise --max-connections, or look for clients holding connections open)", "max", l.max, "refused", unlogged+1)
	}
}

// connList is a list of connections, oldest first, linked through the
// connections themselves: joining or leaving it allocates nothing.
type connList struct {
	head, tail *limitedConn
	n          int
}

// push adds c at the end.
func (q *connList) push(c *limitedConn) {
	c.list, c.prev, c.next = q, q.tail, nil
	if q.tail != nil {
		q.tail.next = c
	} else {
		q.head = c
	}
	q.tail = c
	q.n++
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
	q.n--
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
	since      time.Time   // when it joined heads
	refusal    bool        // refused: not counted in open, but in refusing
	gone       bool        // closed, or chosen to be: no longer counted
	tracked    bool        // the server reports its states (ConnState)
	waiting    bool        // waiting for a slot: not counted in open, but in waiting
	closing    bool        // its answer says Connection: close, to make room
	evicted    atomic.Bool // chosen to make room: its read refuses it
	// wake is closed when a waiting connection gets a slot or is closed;
	// nil once it has had one (or never waited). Set before Accept returns
	// the connection, cleared by its reader.
	wake chan struct{}
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
	if err := c.readable(); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	return c.haveRead(n, err)
}

// readsLazily reports whether the connection under c reads lazily (see
// lazyReader).
func (c *limitedConn) readsLazily() bool {
	lr, ok := c.Conn.(lazyReader)
	return ok && lr.readsLazily()
}

// readLazy is Read, reading lazily (see lazyReader); only when
// readsLazily.
func (c *limitedConn) readLazy(pool bufferPool) ([]byte, int, error) {
	if err := c.readable(); err != nil {
		return nil, 0, err
	}
	buf, n, err := c.Conn.(lazyReader).readLazy(pool)
	n, err = c.haveRead(n, err) // n stays as it is
	return buf, n, err
}

// readable waits for c's slot on its first read, and returns the error
// that read returns instead when c is refused or was chosen to make room.
func (c *limitedConn) readable() error {
	if c.wake != nil && !c.awaitSlot() {
		return io.EOF // refused: the server closes it without a word
	}
	if c.evicted.Load() {
		return c.refuseEvicted()
	}
	return nil
}

// haveRead is what a read of c that returned n and err returns: a read
// that found nothing after c was chosen to make room refuses it, and one
// that found bytes reinstates it and makes it busy.
func (c *limitedConn) haveRead(n int, err error) (int, error) {
	if c.evicted.Load() {
		if n == 0 {
			return 0, c.refuseEvicted()
		}
		c.reinstate() // its request came as it was chosen: it is served
		err = nil
	}
	if n > 0 && c.state.Load() == connIdle {
		c.l.mu.Lock()
		if c.state.Load() == connIdle {
			c.busyLocked()
		}
		c.l.mu.Unlock()
	}
	return n, err
}

// refuseEvicted refuses c, a connection chosen to make room before its
// client sent a byte: the 503 answers its request if one comes within
// the refusal's time, and c is closed. It returns io.EOF, for the server
// to close c without a word of its own.
func (c *limitedConn) refuseEvicted() error {
	refuseConnWithin(c.Conn, c.l.answer, c.l.headWait)
	return io.EOF
}

// reinstate counts c in again: chosen to make room, it had a request
// arriving after all. The server's read deadline, used to wake its read,
// is lifted (the body's own bound still holds).
func (c *limitedConn) reinstate() {
	l := c.l
	l.mu.Lock()
	if c.evicted.Load() && !c.gone {
		c.evicted.Store(false)
		c.refusal = false
		l.refusing--
		l.open++
		_ = c.Conn.SetReadDeadline(time.Time{})
	}
	l.mu.Unlock()
}

// Close closes the listener; an Accept waiting for room in the waiting
// room returns.
func (l *LimitedListener) Close() error {
	l.mu.Lock()
	l.closed = true
	l.room.Broadcast()
	l.mu.Unlock()
	return l.Listener.Close()
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
	if c.closing {
		c.closing = false
		l.closing--
	}
	if c.waiting {
		c.waiting = false
		c.gone = true
		l.waiting.remove(c)
		l.nwaiting.Add(-1)
		close(c.wake)
		l.room.Signal()
	}
	if !c.gone {
		c.gone = true
		c.leave()
		if c.refusal {
			l.refusing--
		} else {
			l.open--
			l.admitWaitingLocked()
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
	refuseConnWithin(c, answer, refuseWait)
}

// refuseConnWithin is refuseConn whose request head must have arrived
// within headWait (at most refuseWait).
func refuseConnWithin(c net.Conn, answer []byte, headWait time.Duration) {
	defer c.Close()
	start := time.Now()
	_ = c.SetDeadline(start.Add(headWait))
	if !readHead(c) {
		return
	}
	_ = c.SetDeadline(start.Add(refuseWait))
	if _, err := c.Write(answer); err != nil {
		return
	}
	lingerRead(c)
}

// lingerRead shuts c's writing side, where it can (TCP), and reads and
// drops what the client still sends, up to refuseDrainMax bytes, until
// it closes its end or c's read deadline: closing a connection with
// bytes unread would reset it, and the client might lose the answer
// just written.
func lingerRead(c net.Conn) {
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
