package mw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

const (
	sessionMethodInitialize  = mcp.MethodInitialize
	sessionMethodInitialized = mcp.MethodInitialized
)

// SessionOptions configures a [Session].
type SessionOptions struct {
	// Transport opens the server's standalone GET stream and ends the
	// session with DELETE. nil means neither happens.
	Transport StreamTransport
	// Conn receives the handshake: the client's initialize and the
	// server's result, each time a session is (re-)established. nil means
	// a Conn of the stage's own (see [Session.Conn]).
	Conn *Conn
	// ListenBackoff is the wait before reconnecting the GET stream after
	// its attempt-th consecutive end (attempt counts from 1). nil means
	// exponential from 1s, capped at 30s.
	ListenBackoff func(attempt int) time.Duration
	// Sleep waits d or until ctx is done, returning ctx's error then. nil
	// means a real timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// StreamWait bounds how long the client's messages wait for the GET
	// stream the stage opens after notifications/initialized to be answered;
	// 0 means [DefaultStreamWait].
	StreamWait time.Duration
	// Reestablished, when set, is called each time the session has been
	// re-established after the server forgot it, on the goroutine that
	// re-established it, before the messages that waited for it go on:
	// what the server kept for the old session (its resource
	// subscriptions) is gone. It must not send anything through the
	// stage. The relay ends its 2026-07-28 host's listens there.
	Reestablished func()
	// Logger receives session events; nil discards.
	Logger *slog.Logger
}

// DefaultStreamWait bounds the wait for the standalone stream (see
// SessionOptions.StreamWait).
const DefaultStreamWait = 2 * time.Second

// Session keeps a client's session of the session era (Streamable HTTP, or
// HTTP+SSE, whose session lives in its stream) alive across server
// restarts: it is the relay's session recovery. Its [Session.Middleware]
// sits inside pagination merge and outside retry in the relay's chain (see
// the package documentation), so each page request is recovered on its own
// and the replayed handshake is retried like any request.
//
// What the stage does:
//
//   - The client's initialize request is remembered byte for byte and
//     forwarded without a session id. When its result comes back
//     client-bound, the Mcp-Session-Id of the HTTP response (the transport
//     puts the response headers in the message's side channel) and
//     result.protocolVersion become the session's.
//   - The client's notifications/initialized is remembered too. Once it is
//     delivered, the standalone GET stream is opened (when a Transport is
//     set), once per session, and the client's next messages (its answers
//     to server requests aside) wait until the server has answered the GET
//     (a stream, or a refusal), for at most StreamWait: a server may send
//     a request it needs answered, an elicitation, on that stream only, and
//     drop it when the stream is not there yet.
//   - Every other server-bound message carries Mcp-Session-Id while a
//     session exists and MCP-Protocol-Version once one was negotiated.
//   - A message sent with a session id and refused with HTTP 404 (a
//     *frame.StatusError) means the server forgot the session. The
//     session is re-established once for every message that failed under
//     that id — the client's initialize is replayed under a minted id
//     without a session id (its answer never reaches the client), the new
//     session id and version are taken, the client's initialized is
//     replayed under them, the GET stream restarts — and the message is
//     sent again. A 404 means the server never took the message, so
//     sending it again cannot run it twice; a message refused again under
//     the new session (its server gone too, behind a proxy that sent it to
//     another) goes through the same, up to MaxSessionRecoveries times in
//     all. Messages that failed under an older session id are just sent
//     again. A re-establishment whose initialize or initialized is refused
//     with 404 or 503, or lost on its way, is tried again, up to
//     MaxSessionRecoveries times. If re-establishing fails, Handle returns an
//     error wrapping [frame.ErrSessionLost] (the edge answers "session
//     lost") and the session is marked lost: the next server-bound
//     message tries again before it is sent, so a server that comes back
//     later is picked up.
//   - A 404 for a message sent without a session id (no session, or no
//     initialize seen) is returned unchanged (the edge answers "HTTP
//     404").
//   - A request the server took without answering it
//     ([frame.ErrAnswerElsewhere], an HTTP 202) is left to wait for its
//     answer on the GET stream while that stream is open (see
//     [AnswerOnce]); with no stream open nothing can carry the answer, and
//     Handle fails at once with an error that says so.
//
// The GET stream is reopened after ListenBackoff when it ends or breaks,
// resuming with Last-Event-ID when the server numbered its events. A 4xx
// stops it: 405 means the server offers no stream; 404 means the session
// is gone, and the next request recovers it and restarts the stream. 401,
// 403, 409 and 429 do not: a token being refreshed or a rate limit passes,
// and a 409 (the server still counts a stream of the session as open, one
// whose connection dropped without it noticing) passes once the server
// lets that stream go, so the stream is retried after ListenBackoff like a
// broken one, for as long as the session lasts.
//
// A Session serves one pipeline: call Middleware once, and Close when the
// pipeline is done.
type Session struct {
	transport     StreamTransport
	listenBackoff func(attempt int) time.Duration
	sleep         func(ctx context.Context, d time.Duration) error
	streamWait    time.Duration
	reestablished func()
	log           *slog.Logger

	conn    *Conn
	replays *Remap // the replayed initialize

	// life is cancelled by Close; every goroutine the session starts ends
	// with it and is counted in wg.
	life     context.Context
	stop     context.CancelFunc
	wg       sync.WaitGroup
	closeOne sync.Once
	closeErr error

	next Duplex // set once by Middleware, before the pipeline runs

	mu sync.Mutex
	// The client's notifications/initialized, as the client sent it (its
	// initialize is the Conn's).
	initialized frame.Message
	hasInited   bool
	// pendingInit holds the client's initialize requests awaiting an
	// answer, by id.
	pendingInit map[frame.ID]frame.Message
	// initializing is closed when no initialize of the client's is in
	// flight any more; nil while none is.
	initializing chan struct{}
	// streamOpening is closed once the GET stream being opened has been
	// answered, or given up on; nil while no stream is being opened.
	streamOpening chan struct{}
	// streamUp is set while the GET stream is open: the server can answer
	// on it what it did not answer on a POST.
	streamUp bool
	sid      string
	version  string
	lost     bool
	closed   bool
	// attempts counts re-establishments started; last is the latest and
	// running the one under way, if any.
	attempts uint64
	last     *reestablish
	running  *reestablish
	stream   *listener
}

// reestablish is one attempt to re-establish the session, shared by every
// message that waits for it.
type reestablish struct {
	done chan struct{}
	err  error // set before done is closed
}

// listener is a running GET stream.
type listener struct {
	sid    string
	cancel context.CancelFunc
}

// NewSession returns a Session with no session yet.
func NewSession(o SessionOptions) *Session {
	s := &Session{
		conn:          o.Conn,
		replays:       NewRemap("session"),
		transport:     o.Transport,
		listenBackoff: o.ListenBackoff,
		sleep:         o.Sleep,
		streamWait:    o.StreamWait,
		reestablished: o.Reestablished,
		log:           loggerOrDiscard(o.Logger),
		pendingInit:   make(map[frame.ID]frame.Message),
	}
	if s.conn == nil {
		s.conn = NewConn(EraSession)
	}
	if s.listenBackoff == nil {
		s.listenBackoff = defaultListenBackoff
	}
	if s.sleep == nil {
		s.sleep = frame.Sleep
	}
	if s.streamWait <= 0 {
		s.streamWait = DefaultStreamWait
	}
	// The stage's own goroutines (the GET stream) deliver under life, so
	// what they hand the client carries the Conn too.
	s.life, s.stop = context.WithCancel(WithConn(context.Background(), s.conn))
	return s
}

// defaultListenBackoff waits 1s, 2s, 4s, … up to 30s.
func defaultListenBackoff(attempt int) time.Duration {
	d := time.Second
	for i := 1; i < attempt && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// Middleware returns the session recovery stage. Call it once.
func (s *Session) Middleware() Middleware {
	return func(next Duplex) Duplex {
		s.next = next
		return Duplex{
			ToServer: HandlerFunc(s.toServer),
			ToClient: HandlerFunc(s.toClient),
		}
	}
}

// Conn returns the connection state the stage records the handshake in.
func (s *Session) Conn() *Conn { return s.conn }

// ID returns the current session id, "" if there is none.
func (s *Session) ID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sid
}

// ProtocolVersion returns the negotiated protocol version, "" before the
// first initialize was answered.
func (s *Session) ProtocolVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// Close stops the GET stream and any re-establishment under way, waits for
// them to end, and then, when a session exists and a Transport is set, asks
// the server to end it (once). Later calls return the first call's result.
// Server-bound messages after Close fail with [frame.ErrClosed].
func (s *Session) Close(ctx context.Context) error {
	s.closeOne.Do(func() {
		s.mu.Lock()
		s.closed = true
		h := s.headersLocked()
		hasSession := s.sid != ""
		s.mu.Unlock()
		s.stop()
		s.wg.Wait()
		if hasSession && s.transport != nil {
			s.closeErr = s.transport.EndSession(ctx, h)
		}
	})
	return s.closeErr
}

func (s *Session) toClient(ctx context.Context, m frame.Message) error {
	if s.replays.Capture(m) {
		return nil
	}
	if m.Kind().IsResponse() {
		s.mu.Lock()
		if init, ok := s.pendingInit[m.ID()]; ok {
			delete(s.pendingInit, m.ID())
			if m.Kind() == frame.Result {
				s.conn.Initialized(init, m)
				s.sid = m.Header().Get(frame.HeaderSessionID)
				s.version = m.Get("result.protocolVersion").String()
				s.lost = false
			}
		}
		s.mu.Unlock()
	}
	return s.next.ToClient.Handle(ctx, m)
}

func (s *Session) toServer(ctx context.Context, m frame.Message) error {
	if m.Kind() == frame.Request && m.Method() == sessionMethodInitialize {
		return s.sendInitialize(ctx, m)
	}
	isInitialized := m.Kind() == frame.Notification && m.Method() == sessionMethodInitialized
	if isInitialized {
		s.mu.Lock()
		s.initialized, s.hasInited = m, true
		s.mu.Unlock()
	}
	recoveries := 0
	for {
		out, sid, seen, err := s.prepare(ctx, m)
		if err != nil {
			return err
		}
		err = s.next.ToServer.Handle(ctx, out)
		if errors.Is(err, frame.ErrAnswerElsewhere) && !s.isStreamUp() {
			// Nothing could carry the answer the server did not give.
			return fmt.Errorf("no answer: %v, and no stream of the session is open to answer on", err)
		}
		if err == nil {
			if isInitialized {
				s.mu.Lock()
				s.startStreamLocked()
				s.mu.Unlock()
			}
			return nil
		}
		if recoveries == MaxSessionRecoveries || sid == "" || !isStatus(err, http.StatusNotFound) {
			return err
		}
		s.log.Info("server forgot the session", "session", sid, "method", m.Method())
		if err := s.recoverFrom(ctx, sid, seen); err != nil {
			return err
		}
		if isInitialized {
			return nil // re-establishing replayed it
		}
		recoveries++
	}
}

// MaxSessionRecoveries bounds how many times one message is sent again
// after a 404 under a session the server forgot, each time under a newly
// established session (see [Session]).
const MaxSessionRecoveries = 3

// sendInitialize forwards the client's initialize without session headers
// and notes it, so that its answer sets up the session.
func (s *Session) sendInitialize(ctx context.Context, m frame.Message) error {
	id := m.ID()
	s.mu.Lock()
	s.pendingInit[id] = m
	if s.initializing == nil {
		s.initializing = make(chan struct{})
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pendingInit, id)
		if len(s.pendingInit) == 0 && s.initializing != nil {
			close(s.initializing)
			s.initializing = nil
		}
		s.mu.Unlock()
	}()
	return s.next.ToServer.Handle(ctx, withoutSessionHeaders(m))
}

// prepare returns m stamped with the session's headers, after waiting for
// the client's initialize while it is in flight (a client that sends on
// without waiting for its answer would otherwise have its messages go out
// before the session they belong to exists; the client's answers to server
// requests do not wait) and for a re-establishment under way, and, if the
// session is lost, trying to re-establish it first. It also returns the
// session id stamped and the number of re-establishments started before.
func (s *Session) prepare(ctx context.Context, m frame.Message) (frame.Message, string, uint64, error) {
	for {
		s.mu.Lock()
		switch {
		case s.closed:
			s.mu.Unlock()
			return frame.Message{}, "", 0, frame.ErrClosed
		case s.initializing != nil && !m.Kind().IsResponse():
			init := s.initializing
			s.mu.Unlock()
			select {
			case <-init:
			case <-ctx.Done():
				return frame.Message{}, "", 0, ctx.Err()
			}
			continue
		case s.running != nil:
			r := s.running
			s.mu.Unlock()
			if err := s.wait(ctx, r); err != nil {
				return frame.Message{}, "", 0, err
			}
			continue
		case s.streamOpening != nil && !m.Kind().IsResponse():
			opening := s.streamOpening
			s.mu.Unlock()
			if err := s.awaitStream(ctx, opening); err != nil {
				return frame.Message{}, "", 0, err
			}
			continue
		case s.lost:
			r, err := s.startLocked(ctx)
			s.mu.Unlock()
			if err != nil {
				return frame.Message{}, "", 0, err
			}
			if err := s.wait(ctx, r); err != nil {
				return frame.Message{}, "", 0, err
			}
			continue
		}
		out := stampHeaders(m, s.sid, s.version)
		sid, seen := s.sid, s.attempts
		s.mu.Unlock()
		return out, sid, seen, nil
	}
}

// awaitStream waits until the GET stream being opened has been answered,
// for at most streamWait; then nobody waits for it any more.
func (s *Session) awaitStream(ctx context.Context, opening chan struct{}) error {
	t := time.NewTimer(s.streamWait)
	defer t.Stop()
	select {
	case <-opening:
		return nil
	case <-t.C:
		s.log.Debug("the GET stream is not answered yet; sending on", "wait", s.streamWait)
		s.streamOpened(opening)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// isStreamUp reports whether the GET stream is open.
func (s *Session) isStreamUp() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streamUp
}

// setStreamUp records whether the GET stream is open.
func (s *Session) setStreamUp(up bool) {
	s.mu.Lock()
	s.streamUp = up
	s.mu.Unlock()
}

// streamOpened ends the wait for the GET stream opening has been made for.
func (s *Session) streamOpened(opening chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streamOpening == opening {
		close(opening)
		s.streamOpening = nil
	}
}

// recoverFrom makes sure the session that refused a message sent under sid
// is replaced, starting the re-establishment unless one began after the
// message was sent (seen is how many had begun then) or the session changed
// already.
func (s *Session) recoverFrom(ctx context.Context, sid string, seen uint64) error {
	s.mu.Lock()
	var r *reestablish
	switch {
	case s.closed:
		s.mu.Unlock()
		return frame.ErrClosed
	case s.attempts > seen:
		r = s.last
	case s.sid != sid && !s.lost:
		s.mu.Unlock()
		return nil // the client initialized a new session meanwhile
	default:
		var err error
		if r, err = s.startLocked(ctx); err != nil {
			s.mu.Unlock()
			return err
		}
	}
	s.mu.Unlock()
	return s.wait(ctx, r)
}

// wait waits for r to finish, or for ctx.
func (s *Session) wait(ctx context.Context, r *reestablish) error {
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startLocked starts re-establishing the session on its own goroutine, so
// that the message that triggered it may give up waiting without failing
// the others. It keeps ctx's values but not its cancellation; Close ends it.
func (s *Session) startLocked(ctx context.Context) (*reestablish, error) {
	if s.closed {
		return nil, frame.ErrClosed
	}
	init, ok := s.conn.ClientInitialize()
	if !ok {
		// Unreachable: a session only exists after an initialize.
		return nil, fmt.Errorf("%w: no initialize to replay", frame.ErrSessionLost)
	}
	r := &reestablish{done: make(chan struct{})}
	s.attempts++
	s.last, s.running = r, r
	s.stopStreamLocked()
	inited, hasInited := s.initialized, s.hasInited
	next := s.next.ToServer
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(s.life, cancel)
	s.wg.Go(func() {
		defer cancel()
		defer stop()
		sid, version, err := s.handshake(rctx, next, init, inited, hasInited)
		for try := 1; err != nil && try < MaxSessionRecoveries && handshakeMayRecover(err) && rctx.Err() == nil; try++ {
			// Behind a proxy, the replica that took the new session can be
			// gone before the initialized reaches it (404), or the one the
			// initialize reached was draining (503): another try reaches
			// another.
			s.log.Info("re-establishing the session failed; trying again", "err", err)
			sid, version, err = s.handshake(rctx, next, init, inited, hasInited)
		}
		if err == nil && s.reestablished != nil {
			s.reestablished()
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.running = nil
		if err != nil {
			s.log.Warn("could not re-establish the session", "err", err)
			s.lost, s.sid = true, ""
			// The cause is kept as text only: a wrapped *frame.StatusError
			// would make the edge answer with its status instead.
			r.err = fmt.Errorf("%w: %v", frame.ErrSessionLost, err)
		} else {
			s.log.Info("session re-established", "session", sid)
			s.lost, s.sid, s.version = false, sid, version
			if hasInited {
				s.startStreamLocked()
			}
		}
		close(r.done)
	})
	return r, nil
}

// handshake replays the client's initialize under a minted id and its
// initialized under the new session, and returns the new session id and
// protocol version.
func (s *Session) handshake(ctx context.Context, next Handler, init, inited frame.Message, hasInited bool) (string, string, error) {
	resp, err := s.replays.Call(ctx, next, withoutSessionHeaders(init), "")
	if err != nil {
		return "", "", fmt.Errorf("initialize: %w", err)
	}
	if resp.Kind() != frame.Result {
		return "", "", fmt.Errorf("%w with an error: %s", errInitializeAnswered, resp.Get("error.message").String())
	}
	sid := resp.Header().Get(frame.HeaderSessionID)
	if sid == "" {
		return "", "", fmt.Errorf("%w without a session id", errInitializeAnswered)
	}
	version := resp.Get("result.protocolVersion").String()
	if hasInited {
		if err := next.Handle(ctx, stampHeaders(inited, sid, version)); err != nil {
			return "", "", fmt.Errorf("initialized: %w", err)
		}
	}
	s.conn.Initialized(init, resp)
	return sid, version, nil
}

// headersLocked returns the session's headers for a GET or DELETE.
func (s *Session) headersLocked() http.Header {
	h := make(http.Header, 3)
	if s.sid != "" {
		h.Set(frame.HeaderSessionID, s.sid)
	}
	if s.version != "" {
		h.Set(frame.HeaderProtocolVersion, s.version)
	}
	return h
}

// startStreamLocked opens the GET stream for the current session unless it
// is open already.
func (s *Session) startStreamLocked() {
	if s.transport == nil || s.closed || s.sid == "" {
		return
	}
	if s.stream != nil && s.stream.sid == s.sid {
		return
	}
	s.stopStreamLocked()
	ctx, cancel := context.WithCancel(s.life)
	s.stream = &listener{sid: s.sid, cancel: cancel}
	opening := make(chan struct{})
	s.streamOpening = opening
	h := s.headersLocked()
	s.wg.Go(func() {
		defer cancel()
		defer s.streamOpened(opening) // refused, or never answered
		s.listen(ctx, h, func() { s.streamOpened(opening) })
	})
}

func (s *Session) stopStreamLocked() {
	if s.stream != nil {
		s.stream.cancel()
		s.stream = nil
	}
	if s.streamOpening != nil {
		close(s.streamOpening)
		s.streamOpening = nil
	}
}

// listen keeps the GET stream open until ctx is done or the server refuses
// it; opened is called each time the server answers with the stream.
func (s *Session) listen(ctx context.Context, h http.Header, opened func()) {
	sid := h.Get(frame.HeaderSessionID)
	attempt := 0
	up := func() {
		s.setStreamUp(true)
		opened()
	}
	for {
		last, err := s.transport.Listen(ctx, h, up)
		s.setStreamUp(false)
		if ctx.Err() != nil {
			return
		}
		if attempt == 0 {
			opened() // the first answer was a refusal or a failure: wait no more
		}
		if last != "" && last != h.Get(frame.HeaderLastEventID) {
			h = h.Clone()
			h.Set(frame.HeaderLastEventID, last)
		}
		var st *frame.StatusError
		switch {
		case errors.As(err, &st) && st.Code == http.StatusMethodNotAllowed:
			s.log.Debug("server offers no GET stream", "session", sid)
			return
		case errors.As(err, &st) && (st.Code == http.StatusUnauthorized || st.Code == http.StatusForbidden ||
			st.Code == http.StatusConflict || st.Code == http.StatusTooManyRequests):
			// Credentials being renewed (the next attempt carries the
			// current token), a stale stream the server has yet to let
			// go, or a rate limit: worth trying again later.
			attempt++
			s.log.Debug("GET stream refused for now", "session", sid, "status", st.Code)
		case errors.As(err, &st) && st.Code >= 400 && st.Code < 500:
			s.log.Info("GET stream refused", "session", sid, "status", st.Code)
			return
		case err == nil:
			attempt = 1 // the stream was up: reconnect promptly
		default:
			attempt++
			s.log.Debug("GET stream broke", "session", sid, "err", err)
		}
		if s.sleep(ctx, s.listenBackoff(attempt)) != nil {
			return
		}
	}
}

// stampHeaders returns m carrying the session headers, one map copy at most.
func stampHeaders(m frame.Message, sid, version string) frame.Message {
	if sid == "" && version == "" {
		return m
	}
	old := m.Header()
	h := make(http.Header, len(old)+2)
	for k, v := range old {
		h[k] = v
	}
	if sid != "" {
		h.Set(frame.HeaderSessionID, sid)
	}
	if version != "" {
		h.Set(frame.HeaderProtocolVersion, version)
	}
	return m.WithHeaders(h)
}

// withoutSessionHeaders returns m without session headers in its side
// channel.
func withoutSessionHeaders(m frame.Message) frame.Message {
	old := m.Header()
	if old.Get(frame.HeaderSessionID) == "" && old.Get(frame.HeaderProtocolVersion) == "" {
		return m
	}
	h := old.Clone()
	h.Del(frame.HeaderSessionID)
	h.Del(frame.HeaderProtocolVersion)
	return m.WithHeaders(h)
}

// isStatus reports whether err is a *frame.StatusError with this code.
// errInitializeAnswered is a replayed initialize the server answered, but
// not with a new session: trying again would get the same.
var errInitializeAnswered = errors.New("initialize answered")

// handshakeMayRecover reports whether a failed re-establishment is worth
// another try: the new session forgotten (404) or refused for now (503),
// or the request lost on its way (no HTTP status at all). An answer such
// as 401 or 400 would only come again.
func handshakeMayRecover(err error) bool {
	var st *frame.StatusError
	if !errors.As(err, &st) {
		return !errors.Is(err, errInitializeAnswered) && !errors.Is(err, frame.ErrClosed) && !errors.Is(err, context.Canceled)
	}
	return st.Code == http.StatusNotFound || st.Code == http.StatusServiceUnavailable
}

func isStatus(err error, code int) bool {
	var st *frame.StatusError
	return errors.As(err, &st) && st.Code == code
}
