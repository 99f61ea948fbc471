package mw

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// DefaultMaxSessions bounds the sessions [Sessions] keeps at once.
const DefaultMaxSessions = 100

// Backend is the server side of one session as [Sessions] sees it: the
// session's own chain in front of its server (for serve, a child process).
type Backend interface {
	// Handle hands a message of the session's client to the session's
	// chain; see [Handler]. A server that has ended makes it fail with an
	// error matching frame.ErrUnavailable.
	Handle(ctx context.Context, m frame.Message) error
	// Done is closed when the server has ended on its own (the child
	// exited) and everything it sent before has been handed on.
	Done() <-chan struct{}
	// Close ends the server and returns once it is gone; when ctx ends it
	// hurries (a child is killed at once).
	Close(ctx context.Context) error
}

// BackendEndCause is what a [Backend] may also implement to say why its
// server ended on its own: for a child, its exit status and the stderr
// lines that explain it. [Sessions] tells it to the client of a session
// whose server ends before its initialize was answered (the error of the
// initialize), and logs it.
type BackendEndCause interface {
	// EndCause says why the server ended; it is called once Done is
	// closed.
	EndCause() error
}

// SessionsOptions configures [NewSessions].
type SessionsOptions struct {
	// Open starts the server side of a new session: id is its
	// Mcp-Session-Id, conn the session's connection state, which the stage
	// records the handshake in and closes when the session ends (the
	// session's stages release what they hold there). ctx is the
	// initialize request's: it bounds the start, not the session.
	// Required.
	Open func(ctx context.Context, id string, conn *Conn) (Backend, error)
	// MaxSessions bounds the sessions alive at once; 0 means
	// [DefaultMaxSessions]. At the bound a new session takes the place of
	// the one idle the longest, which ends (its client's next request
	// gets 404, and it initializes again); when none is idle, the new one
	// is refused with 503 and Retry-After.
	MaxSessions int
	// IdleTimeout ends a session that has had no request and no open
	// stream for this long; 0 means sessions never idle out.
	IdleTimeout time.Duration
	// AfterFunc runs f after d unless the returned stop is called first; it
	// times idle sessions. nil means time.AfterFunc. Tests inject a fake.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
	// NewID mints session ids; nil means 128 random bits as 26 characters
	// of base32. Ids must be visible ASCII.
	NewID func() string
	// NotFound, when set, is called for each message refused with 404
	// because its Mcp-Session-Id names no live session of its transport
	// and principal (unknown, ended, another replica's, another
	// principal's) when it arrives; not for a session that ends while it
	// is handled. It must not block.
	NotFound func()
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// Sessions is the session stage of serve's session era (see the package
// documentation): it keeps the sessions of Streamable HTTP's session era
// (revisions 2025-03-26 to 2025-11-25), each with a [Backend] of its own,
// and hands every request of a session to that session's chain. Its
// Handle takes the messages of serve's HTTP transport, each with its
// [Exchange] in the context:
//
//   - POST initialize without Mcp-Session-Id opens a session: a fresh id, a
//     [Conn] and a backend of their own. The id comes back in
//     Mcp-Session-Id on the initialize's answer when it is a result; an
//     initialize that fails, or whose answer never reaches its client,
//     ends the session again.
//   - Any other POST, a GET and a DELETE must name a live session: 400
//     without the header, 404 for an unknown (ended, expired) one — and
//     for one another principal opened: a session belongs to the
//     [PrincipalOf] its initialize (recorded in its Conn too), and to
//     anyone else it answers exactly as an unknown id does.
//   - DELETE ends the session: its Conn is closed (its stages answer what
//     still waits with an error) and its backend closed.
//   - A batch is taken on sessions of 2025-03-26 (and 2024-11-05), whose
//     clients may send them, and refused with 400 on later revisions; an
//     empty batch, one holding something that is not a JSON-RPC message,
//     and a batched initialize are refused on any.
//   - A session ends when its backend ends on its own, when it has been
//     idle for IdleTimeout, when a new session takes its place, or at
//     Close.
//
// A session is idle while no exchange of its is in progress: no request
// waits for its answer, no stream (a GET's, an HTTP+SSE session's) is
// open. At MaxSessions (sessions alive and starting together) a new
// session evicts the session idle the longest: that one ends as DELETE
// ends it, and the new one starts once its backend is gone, so that
// MaxSessions bounds the backends too. Only when no session is idle is
// the new one refused: 503, with Retry-After.
//
// A message its backend could not take is refused: 404 when the server
// has ended, 502 otherwise; a stage's own refusal ([Refuse]) passes as it
// is.
type Sessions struct {
	o     SessionsOptions
	log   *slog.Logger
	table *idleTable[*session] // the sessions alive or starting, by id
}

// NewSessions returns the session stage for o.
func NewSessions(o SessionsOptions) *Sessions {
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.NewID == nil {
		o.NewID = rand.Text
	}
	s := &Sessions{o: o, log: loggerOrDiscard(o.Logger)}
	s.table = newIdleTable(o.MaxSessions, o.IdleTimeout, o.AfterFunc, func(ss *session) {
		ss.close(context.Background(), "idle timeout")
	})
	return s
}

// Len returns the number of live sessions.
func (s *Sessions) Len() int {
	all, starting := s.table.count()
	return all - starting
}

// Close ends every session and refuses new ones (503). It returns when
// all are gone or ctx ends; backends still running then are hurried.
func (s *Sessions) Close(ctx context.Context) error {
	_ = s.table.Close(ctx, func(ctx context.Context, l *idleEntry[*session], live bool) error {
		if live { // a session starting is closed by its opener, which finds the stage closed
			l.v.close(ctx, "the gateway is shutting down")
		}
		return nil
	})
	return ctx.Err()
}

// Handle takes one message of serve's HTTP transport; see the type's
// documentation.
func (s *Sessions) Handle(ctx context.Context, m frame.Message) error {
	x := ExchangeOf(ctx)
	if x == nil {
		return errors.New("mw: Sessions takes the messages of an HTTP server")
	}
	switch x.Method() {
	case http.MethodPost:
		return s.post(ctx, m, x)
	case http.MethodDelete:
		ss, err := s.require(ctx, m)
		if err != nil {
			return err
		}
		ss.close(context.WithoutCancel(ctx), "the client ended it")
		return nil
	}
	ss, err := s.require(ctx, m)
	if err != nil {
		return err
	}
	return ss.forward(ctx, m, x, false)
}

// require returns the session a GET or DELETE names, or the refusal.
func (s *Sessions) require(ctx context.Context, m frame.Message) (*session, error) {
	sid := m.Header().Get(frame.HeaderSessionID)
	if sid == "" {
		return nil, Refuse(http.StatusBadRequest, "", frame.CodeInvalidRequest, "Bad Request: missing Mcp-Session-Id")
	}
	ss := s.lookup(ctx, sid, false)
	if ss == nil {
		return nil, s.notFound("")
	}
	return ss, nil
}

// post takes a POST's message: one message or a batch.
func (s *Sessions) post(ctx context.Context, m frame.Message, x Exchange) error {
	if err := checkBatch(m); err != nil {
		return Refuse(http.StatusBadRequest, "", frame.CodeInvalidRequest, err.Error())
	}
	isInit := m.Method() == "initialize"
	sid := m.Header().Get(frame.HeaderSessionID)
	var ss *session
	switch {
	case isInit && m.Kind() != frame.Request:
		return Refuse(http.StatusBadRequest, "", frame.CodeInvalidRequest, "initialize must be a request")
	case isInit && sid != "":
		if s.lookup(ctx, sid, false) == nil {
			return s.notFound(m.ID())
		}
		return Refuse(http.StatusBadRequest, m.ID(), frame.CodeInvalidRequest, "the session is already initialized")
	case isInit:
		ss, err := s.open(ctx, s.o.NewID(), m.ID(), false)
		if err != nil {
			return err
		}
		defer ss.end() // open's hold: the initialize's exchange holds it now
		return ss.initialize(ctx, m, x)
	case sid == "":
		return Refuse(http.StatusBadRequest, m.ID(), frame.CodeInvalidRequest, "Bad Request: missing Mcp-Session-Id (initialize first)")
	}
	if ss = s.lookup(ctx, sid, false); ss == nil {
		return s.notFound(m.ID())
	}
	if v := ss.conn.ProtocolVersion(); m.Kind() == frame.Batch && !batchesAllowed(v) {
		return Refuse(http.StatusBadRequest, "", frame.CodeInvalidRequest, "invalid request: batches are not part of MCP "+v)
	}
	return ss.forward(ctx, m, x, false)
}

// checkBatch refuses a batch MCP never allows: empty, holding something
// that is not a JSON-RPC message, or holding an initialize.
func checkBatch(m frame.Message) error {
	if m.Kind() != frame.Batch {
		return nil
	}
	n := 0
	for el := range m.Elements() {
		n++
		switch {
		case el.Kind() == frame.Invalid || el.Kind() == frame.Batch:
			return errors.New("invalid request: a batch element is not a JSON-RPC message")
		case el.Method() == "initialize":
			return errors.New("invalid request: initialize must not be batched")
		}
	}
	if n == 0 {
		return errors.New("invalid request: empty batch")
	}
	return nil
}

// batchesAllowed reports whether clients of protocol version v may send
// JSON-RPC batches ([mcp.Batches]).
func batchesAllowed(v string) bool { return mcp.Has(v, mcp.Batches) }

// open starts a new session under id, or returns the refusal (under
// reqID, the request that opens it, if any). sse marks a session of the
// HTTP+SSE transport. The session is busy (not to be evicted) until the
// caller calls its end, once the session's first exchange has begun.
func (s *Sessions) open(ctx context.Context, id string, reqID frame.ID, sse bool) (*session, error) {
	// Busy until its first exchange has begun (the caller ends this hold
	// then), so that no other new session evicts it first.
	ss := &session{s: s, id: id, sse: sse, principal: PrincipalOf(ctx), conn: NewConn(EraSession), done: make(chan struct{})}
	l, evicted, err := s.table.reserve(id, ss)
	switch {
	case errors.Is(err, errTableClosed):
		return nil, Refuse(http.StatusServiceUnavailable, reqID, frame.CodeGateway, "the gateway is shutting down")
	case errors.Is(err, errTableTaken):
		return nil, Refuse(http.StatusConflict, reqID, frame.CodeInvalidRequest, "Conflict: the session id is in use")
	case errors.Is(err, errTableFull):
		s.log.Warn("refused a new session: every session is busy (a request in flight or a stream open); raise --max-sessions", "max", s.o.MaxSessions)
		return nil, Refuse(http.StatusServiceUnavailable, reqID, frame.CodeGateway,
			fmt.Sprintf("all %d sessions are busy; try again later", s.o.MaxSessions))
	}
	ss.lease = l
	if evicted != nil {
		// Its slot is the new session's (reserved): its backend goes
		// first, so that MaxSessions bounds backends too.
		ev := evicted.v
		ev.log.Info("session evicted: a new session needed its place, and it was idle the longest", "max", s.o.MaxSessions)
		ev.close(context.WithoutCancel(ctx), "evicted to make room for a new session")
		s.table.done()
	}

	ss.conn.SetPrincipal(ss.principal)
	ss.log = s.log.With("session", ShortSessionID(ss.id))
	backend, err := s.o.Open(ctx, ss.id, ss.conn)
	if err != nil {
		s.table.remove(l)
		s.log.Error("cannot start the server for a new session", "err", err)
		return nil, Refuse(http.StatusBadGateway, reqID, frame.CodeGateway, "cannot start the server: "+err.Error())
	}
	ss.backend = backend
	if !s.table.start(l) {
		_ = backend.Close(context.Background())
		return nil, Refuse(http.StatusServiceUnavailable, reqID, frame.CodeGateway, "the gateway is shutting down")
	}
	if sse {
		ss.log.Info("session opened", "transport", "sse")
	} else {
		ss.log.Info("session opened")
	}
	go ss.watch()
	return ss, nil
}

// lookup returns the live session sid names, of the HTTP+SSE transport
// when sse is set, else of Streamable HTTP, and opened by the principal of
// ctx; or nil. A session is reached through the transport that opened it
// only, and by the principal that opened it only: to anyone else it does
// not exist.
func (s *Sessions) lookup(ctx context.Context, sid string, sse bool) *session {
	if l := s.table.get(sid); l != nil && l.v.sse == sse && l.v.principal == PrincipalOf(ctx) {
		return l.v
	}
	return nil
}

// notFound returns the 404 for a message under id whose session id names
// no session, and reports it to NotFound.
func (s *Sessions) notFound(id frame.ID) error {
	if s.o.NotFound != nil {
		s.o.NotFound()
	}
	return Refuse(http.StatusNotFound, id, frame.CodeInvalidRequest, "session not found")
}

// Full reports whether an initialize would get 503 now: the sessions
// alive or starting are at MaxSessions and none of them is idle, or the
// stage is closed.
func (s *Sessions) Full() bool { return s.table.full() }

// Max returns MaxSessions, defaults applied.
func (s *Sessions) Max() int { return s.o.MaxSessions }

// ShortSessionID returns what logs (and serve, in the prefix of a
// child's stderr lines) show of a session id: its [SessionHash], never
// the id or a part of it, since the id lets whoever holds it use the
// session.
func ShortSessionID(id string) string { return SessionHash(id) }

// session is one session of a [Sessions].
type session struct {
	s   *Sessions
	id  string
	sse bool // of the HTTP+SSE transport
	// principal opened the session (PrincipalOf its first request): the
	// only one it answers.
	principal string
	log       *slog.Logger
	conn      *Conn
	backend   Backend
	// lease is the session's entry in the table: its exchanges in
	// progress are its checkouts, and it is closed once removed.
	lease *idleEntry[*session]

	closeOnce sync.Once
	done      chan struct{}
}

// initialize hands the client's initialize to the new session's chain.
// The answer's header waits for the answer, which decides it: a result
// carries Mcp-Session-Id and is recorded in the session's Conn; an error
// does not, and the session ends once the exchange is over, as it does
// when the result never reached the client.
func (ss *session) initialize(ctx context.Context, m frame.Message, x Exchange) error {
	x.HoldHeader()
	ix := &initExchange{Exchange: x, ss: ss, req: m}
	x.OnDone(func(unsent []frame.Message) {
		if !ix.succeeded.Load() || answeredIn(unsent, m.ID()) {
			ss.close(context.WithoutCancel(ctx), "initialize failed")
		}
	})
	if err := ss.forward(WithExchange(ctx, ix), m, ix, true); err != nil {
		ss.close(context.WithoutCancel(ctx), "its server could not be started")
		return err
	}
	return nil
}

// answeredIn reports whether msgs hold the response to id.
func answeredIn(msgs []frame.Message, id frame.ID) bool {
	for _, m := range msgs {
		if m.Kind().IsResponse() && m.ID() == id {
			return true
		}
	}
	return false
}

// initExchange is the exchange of an initialize: every message on it but
// the initialize's error carries the session id, and its result is
// recorded in the session's Conn.
type initExchange struct {
	Exchange
	ss        *session
	req       frame.Message
	succeeded atomic.Bool
}

func (ix *initExchange) Send(ctx context.Context, m frame.Message, eventID string) error {
	return ix.send(ctx, m, eventID, ix.Exchange.Send)
}

func (ix *initExchange) SendLast(ctx context.Context, m frame.Message, eventID string) error {
	return ix.send(ctx, m, eventID, ix.Exchange.SendLast)
}

// send stamps m with the session id (unless it is the initialize's error)
// and sends it with send. The initialize's result is recorded before it is
// sent: once sent, the exchange may be over (and its OnDone run) before
// send returns.
func (ix *initExchange) send(ctx context.Context, m frame.Message, eventID string, send func(context.Context, frame.Message, string) error) error {
	answer := m.Kind().IsResponse() && m.ID() == ix.req.ID()
	result := answer && m.Kind() == frame.Result
	if !answer || result {
		m = m.WithHeader(frame.HeaderSessionID, ix.ss.id)
	}
	if result {
		ix.ss.conn.Initialized(ix.req, m)
		ix.succeeded.Store(true)
	}
	err := send(ctx, m, eventID)
	if result && err != nil {
		ix.succeeded.Store(false)
	}
	return err
}

// forward hands m to the session's chain, its exchange counted as
// activity until it is over.
func (ss *session) forward(ctx context.Context, m frame.Message, x Exchange, isInit bool) error {
	if !ss.begin() {
		return Refuse(http.StatusNotFound, m.ID(), frame.CodeInvalidRequest, "session not found")
	}
	x.OnDone(func([]frame.Message) { ss.end() })
	err := ss.backend.Handle(WithConn(ctx, ss.conn), m)
	if err == nil {
		return nil
	}
	var st *frame.StatusError
	if errors.As(err, &st) {
		return err // a stage's refusal
	}
	ss.log.Debug("could not deliver a client message", "err", err)
	id, _ := m.FirstRequestID()
	if !isInit && (ss.isClosed() || errors.Is(err, frame.ErrUnavailable)) {
		return Refuse(http.StatusNotFound, id, frame.CodeInvalidRequest, "session not found")
	}
	if isInit && errors.Is(err, frame.ErrUnavailable) {
		if cause := ss.endCause(ctx); cause != nil {
			return Refuse(http.StatusBadGateway, id, frame.CodeGateway, "the server could not start: "+cause.Error())
		}
	}
	return Refuse(http.StatusBadGateway, id, frame.CodeGateway, "the server could not take the message: "+err.Error())
}

func (ss *session) isClosed() bool { return ss.s.table.isGone(ss.lease) }

// begin counts an exchange with the session, which keeps it from idling
// out; it fails once the session is closed.
func (ss *session) begin() bool { return ss.s.table.acquire(ss.lease) }

// end ends what begin began; the last one out starts the idle timer.
func (ss *session) end() { ss.s.table.release(ss.lease) }

// watch ends the session when its backend ends on its own; before the
// initialize was answered, with the cause the backend gives
// ([BackendEndCause]), which its client then gets.
func (ss *session) watch() {
	select {
	case <-ss.backend.Done():
		reason := "the server process exited"
		if ss.conn.ProtocolVersion() == "" {
			if cause := ss.endCause(context.Background()); cause != nil {
				reason = cause.Error()
			}
		}
		ss.close(context.Background(), reason)
	case <-ss.done:
	}
}

// endCause returns why the backend ended, once it has ([BackendEndCause]);
// nil when it cannot say, or ctx ends first.
func (ss *session) endCause(ctx context.Context) error {
	ec, ok := ss.backend.(BackendEndCause)
	if !ok {
		return nil
	}
	select {
	case <-ss.backend.Done():
	case <-ctx.Done():
		return nil
	}
	return ec.EndCause()
}

// close ends the session: its id is forgotten (404 from now on), its Conn
// closed with the reason (its stages answer what still waits and end its
// streams), and its backend closed. It returns when that is done or ctx
// ends; the first caller's ctx bounds the backend's shutdown.
func (ss *session) close(ctx context.Context, reason string) {
	ss.closeOnce.Do(func() {
		ss.s.table.remove(ss.lease)
		ss.conn.Close(errors.New(reason))
		ss.log.Info("session closed", "reason", reason)
		if err := ss.backend.Close(ctx); err != nil {
			ss.log.Warn("closing the session's server", "err", err)
		}
		close(ss.done)
	})
	select {
	case <-ss.done:
	case <-ctx.Done():
	}
}
