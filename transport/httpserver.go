package transport

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/tidwall/gjson"
)

// Defaults for [HTTPServerConfig].
const (
	// DefaultMaxSessions bounds the sessions (children) alive at once.
	DefaultMaxSessions = 100
	// DefaultBacklog bounds, per session, the server-initiated messages
	// kept while the client has no stream open to receive them.
	DefaultBacklog = 256
	// DefaultHeaderHold is how long an event-stream answer's header waits
	// for the first message to go out with it.
	DefaultHeaderHold = 10 * time.Millisecond
	// DefaultKeepAlive is how often a silent event stream gets a comment
	// line.
	DefaultKeepAlive = 15 * time.Second
)

// knownProtocolVersion reports whether v is an MCP-Protocol-Version value a
// request may carry. Which of them a session speaks is between the client
// and the server; an unknown value is refused with 400, as the transport
// requires.
func knownProtocolVersion(v string) bool {
	switch v {
	case "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28":
		return true
	}
	return false
}

// Backend is the server side of one session as [HTTPServer] sees it: where
// the client's messages go, and how long that lasts. A [*Child] is one; a
// child behind a middleware chain is the usual one.
type Backend interface {
	// Handle delivers one client message toward the server. It returns once
	// the message has been handed over (for a child: written to its stdin),
	// not when it is answered; answers come back through the Sink the
	// backend was opened with. An error means the message was not
	// delivered.
	Handle(ctx context.Context, m frame.Message) error
	// Done is closed when the backend has ended on its own (the child
	// exited) and everything it sent before has been handed to its Sink.
	Done() <-chan struct{}
	// Close ends the backend and returns once it is gone; when ctx ends it
	// hurries (a child is killed at once).
	Close(ctx context.Context) error
}

// OpenFunc starts the backend of a new session. sessionID is the session's
// Mcp-Session-Id; toClient is where the backend delivers everything the
// server sends, and is safe for concurrent use. ctx is the initialize
// request's: it bounds the start, not the backend's life, which lasts
// until Close.
type OpenFunc func(ctx context.Context, sessionID string, toClient Sink) (Backend, error)

// HTTPServerConfig configures an [HTTPServer].
type HTTPServerConfig struct {
	// Open starts a backend for every session; required.
	Open OpenFunc
	// MaxSessions bounds the sessions alive at once; an initialize beyond it
	// gets 503. 0 means [DefaultMaxSessions].
	MaxSessions int
	// IdleTimeout ends a session that has had no request and no open stream
	// for this long; 0 means sessions never idle out.
	IdleTimeout time.Duration
	// AfterFunc runs f after d unless the returned stop is called first; it
	// times idle sessions. nil means time.AfterFunc. Tests inject a fake.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
	// MaxBodySize bounds a POST body; 0 means frame.DefaultMaxMessageSize.
	// (Put [LimitBody] in front to answer 413 before a long body is read.)
	MaxBodySize int64
	// Backlog bounds, per session, the server-initiated messages kept while
	// no stream is open for them; the oldest is dropped (with a warning)
	// when it is full. 0 means [DefaultBacklog].
	Backlog int
	// HeaderHold is how long the header of an event-stream answer to a
	// POST waits for the first message to go out with it; 0 means
	// [DefaultHeaderHold]. A quick answer then leaves in one write together
	// with the end of the stream (one wake-up of the client, not three); a
	// slow one still tells the client soon that its request was accepted,
	// well within any bound a client puts on its wait for headers.
	HeaderHold time.Duration
	// KeepAlive is how often an event stream (the GET stream, or a POST's
	// once its header is out) that has carried nothing since the last time
	// gets a comment line, which SSE readers skip: proxies, tunnels and
	// clients that cut a stream after a silence then leave a quiet stream
	// (a long tool call, an idle session) alone. 0 means
	// [DefaultKeepAlive]; a negative value turns it off.
	KeepAlive time.Duration
	// NewSessionID mints session ids; nil means 128 random bits as 26
	// characters of base32. Ids must be visible ASCII.
	NewSessionID func() string
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// HTTPServer is the server side of MCP's Streamable HTTP transport in its
// session era (revisions 2025-03-26 to 2025-11-25): an http.Handler for the
// one MCP endpoint, with one [Backend] per session.
//
//   - POST initialize without Mcp-Session-Id opens a session: a fresh id and
//     a backend of its own. The id comes back in Mcp-Session-Id.
//   - Any other POST must name a live session: 400 without the header, 404
//     for an unknown (ended, expired) one.
//   - A POST of requests is answered on its own response: an event stream
//     when the client accepts text/event-stream, else JSON. The stream
//     carries, before the response, what the server sends in relation to
//     it: progress for its progressToken, and the server's own requests and
//     notifications while it is the oldest stream open.
//   - A POST of notifications or responses gets 202.
//   - GET opens the session's standalone stream for server-initiated
//     messages (one at a time: a second gets 409); what arrived while no
//     stream was open is sent first.
//   - DELETE ends the session and its backend.
//
// It has no policy about who may call it: wrap it in [CheckOrigin],
// [CheckHost], an authentication gate and [LimitBody].
type HTTPServer struct {
	cfg HTTPServerConfig
	log *slog.Logger

	mu       sync.Mutex
	sessions map[string]*httpSession
	starting int  // sessions whose backend is being opened
	draining bool // no new sessions or requests
	inflight int  // POSTs carrying requests, being answered
	drained  chan struct{}
}

// NewHTTPServer returns a server for cfg.
func NewHTTPServer(cfg HTTPServerConfig) *HTTPServer {
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.MaxBodySize <= 0 {
		cfg.MaxBodySize = frame.DefaultMaxMessageSize
	}
	if cfg.Backlog <= 0 {
		cfg.Backlog = DefaultBacklog
	}
	if cfg.HeaderHold <= 0 {
		cfg.HeaderHold = DefaultHeaderHold
	}
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	if cfg.AfterFunc == nil {
		cfg.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	if cfg.NewSessionID == nil {
		cfg.NewSessionID = rand.Text
	}
	return &HTTPServer{
		cfg:      cfg,
		log:      orDiscard(cfg.Logger),
		sessions: make(map[string]*httpSession),
		drained:  make(chan struct{}),
	}
}

// ServeHTTP serves the MCP endpoint.
func (s *HTTPServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		s.servePOST(w, r)
	case http.MethodGet:
		s.serveGET(w, r)
	case http.MethodDelete:
		s.serveDELETE(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// Sessions returns the number of live sessions.
func (s *HTTPServer) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Drain stops taking new sessions and new requests (they get 503) and waits
// until the requests in flight have been answered, or ctx ends. Clients may
// still POST notifications and responses meanwhile, so a request waiting
// for the client (an elicitation) can finish.
func (s *HTTPServer) Drain(ctx context.Context) error {
	s.mu.Lock()
	if !s.draining {
		s.draining = true
		if s.inflight == 0 {
			close(s.drained)
		}
	}
	s.mu.Unlock()
	select {
	case <-s.drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close ends every session (requests still waiting are answered with an
// error) and their backends, and refuses new ones. It returns when all are
// gone or ctx ends; backends still running then are hurried (killed).
// Close does not wait for requests to finish; call [HTTPServer.Drain]
// first for that.
func (s *HTTPServer) Close(ctx context.Context) error {
	s.mu.Lock()
	if !s.draining {
		s.draining = true
		if s.inflight == 0 {
			close(s.drained)
		}
	}
	sessions := make([]*httpSession, 0, len(s.sessions))
	for _, ss := range s.sessions {
		sessions = append(sessions, ss)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, ss := range sessions {
		wg.Go(func() { ss.close(ctx, "the gateway is shutting down") })
	}
	wg.Wait()
	return ctx.Err()
}

// servePOST handles a POST: one message or (2025-03-26) a batch.
func (s *HTTPServer) servePOST(w http.ResponseWriter, r *http.Request) {
	if !isJSONContentType(r.Header.Get("Content-Type")) {
		writeRPCError(w, http.StatusUnsupportedMediaType, "", frame.CodeInvalidRequest, "Content-Type must be application/json")
		return
	}
	wantSSE, wantJSON := acceptsPOST(r.Header.Values("Accept"))
	if !wantSSE && !wantJSON {
		writeRPCError(w, http.StatusNotAcceptable, "", frame.CodeInvalidRequest, "Accept must include application/json or text/event-stream")
		return
	}
	if v := r.Header.Get(frame.HeaderProtocolVersion); v != "" && !knownProtocolVersion(v) {
		writeRPCError(w, http.StatusBadRequest, "", frame.CodeInvalidRequest, "unsupported MCP-Protocol-Version "+quoteShort(v))
		return
	}
	body, err := ReadBody(r, s.cfg.MaxBodySize)
	if err != nil {
		WriteBodyError(w, err)
		return
	}
	m, err := frame.ParseOwned(body) // the body is ours: no copy
	body = nil
	if err != nil {
		writeRPCError(w, http.StatusBadRequest, "", frame.CodeParseError, "parse error: the body is not JSON")
		return
	}
	msgs, err := unbatch(m)
	if err != nil {
		writeRPCError(w, http.StatusBadRequest, "", frame.CodeInvalidRequest, err.Error())
		return
	}
	isInit := m.Method() == "initialize"
	sid := r.Header.Get(frame.HeaderSessionID)
	var ss *httpSession
	switch {
	case isInit && m.Kind() != frame.Request:
		writeRPCError(w, http.StatusBadRequest, "", frame.CodeInvalidRequest, "initialize must be a request")
		return
	case isInit && sid != "":
		if s.lookup(sid) == nil {
			writeRPCError(w, http.StatusNotFound, m.ID(), frame.CodeInvalidRequest, "session not found")
		} else {
			writeRPCError(w, http.StatusBadRequest, m.ID(), frame.CodeInvalidRequest, "the session is already initialized")
		}
		return
	case isInit:
		var status int
		ss, status, err = s.open(r.Context())
		if err != nil {
			writeRPCError(w, status, m.ID(), frame.CodeGateway, err.Error())
			return
		}
	case sid == "":
		writeRPCError(w, http.StatusBadRequest, m.ID(), frame.CodeInvalidRequest, "Bad Request: missing Mcp-Session-Id (initialize first)")
		return
	default:
		if ss = s.lookup(sid); ss == nil {
			writeRPCError(w, http.StatusNotFound, m.ID(), frame.CodeInvalidRequest, "session not found")
			return
		}
	}
	ss.post(w, r, msgs, m.Kind() == frame.Batch, isInit, wantSSE)
}

// unbatch returns the messages a POST body carries: m itself, or the
// elements of a batch. Anything that is not a JSON-RPC message, an empty
// batch, or a batched initialize is refused.
func unbatch(m frame.Message) ([]frame.Message, error) {
	switch m.Kind() {
	case frame.Invalid:
		return nil, errors.New("invalid request: not a JSON-RPC message")
	case frame.Batch:
	default:
		return []frame.Message{m}, nil
	}
	var msgs []frame.Message
	var err error
	m.Get("@this").ForEach(func(_, el gjson.Result) bool {
		e, perr := frame.Parse([]byte(el.Raw))
		switch {
		case perr != nil || e.Kind() == frame.Invalid || e.Kind() == frame.Batch:
			err = errors.New("invalid request: a batch element is not a JSON-RPC message")
		case e.Method() == "initialize":
			err = errors.New("invalid request: initialize must not be batched")
		}
		msgs = append(msgs, e)
		return err == nil
	})
	if err == nil && len(msgs) == 0 {
		err = errors.New("invalid request: empty batch")
	}
	return msgs, err
}

// open starts a new session for an initialize. On failure it returns the
// HTTP status to answer with.
func (s *HTTPServer) open(ctx context.Context) (*httpSession, int, error) {
	s.mu.Lock()
	switch {
	case s.draining:
		s.mu.Unlock()
		return nil, http.StatusServiceUnavailable, errors.New("the gateway is shutting down")
	case len(s.sessions)+s.starting >= s.cfg.MaxSessions:
		s.mu.Unlock()
		s.log.Warn("refused a session: too many sessions", "max", s.cfg.MaxSessions)
		return nil, http.StatusServiceUnavailable, fmt.Errorf("too many sessions (at most %d)", s.cfg.MaxSessions)
	}
	s.starting++
	s.mu.Unlock()

	ss := newHTTPSession(s, s.cfg.NewSessionID())
	backend, err := s.cfg.Open(ctx, ss.id, ss)
	s.mu.Lock()
	s.starting--
	if err == nil && !s.draining {
		ss.backend = backend
		s.sessions[ss.id] = ss
	}
	draining := s.draining
	s.mu.Unlock()
	if err != nil {
		ss.cancel()
		s.log.Error("cannot start the server for a new session", "err", err)
		return nil, http.StatusBadGateway, fmt.Errorf("cannot start the server: %v", err)
	}
	if draining {
		ss.cancel()
		_ = backend.Close(context.Background())
		return nil, http.StatusServiceUnavailable, errors.New("the gateway is shutting down")
	}
	ss.log.Info("session opened")
	go ss.watch()
	return ss, 0, nil
}

// lookup returns the live session sid names, or nil.
func (s *HTTPServer) lookup(sid string) *httpSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[sid]
}

// forget removes a session from the registry, so that its id gets 404.
func (s *HTTPServer) forget(ss *httpSession) {
	s.mu.Lock()
	if s.sessions[ss.id] == ss {
		delete(s.sessions, ss.id)
	}
	s.mu.Unlock()
}

// beginRequest counts a POST carrying requests; it fails while draining.
func (s *HTTPServer) beginRequest() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return false
	}
	s.inflight++
	return true
}

// endRequest ends what beginRequest began.
func (s *HTTPServer) endRequest() {
	s.mu.Lock()
	s.inflight--
	if s.inflight == 0 && s.draining {
		close(s.drained)
	}
	s.mu.Unlock()
}

// serveGET opens the session's standalone stream.
func (s *HTTPServer) serveGET(w http.ResponseWriter, r *http.Request) {
	if !acceptsGET(r.Header.Values("Accept")) {
		writeRPCError(w, http.StatusNotAcceptable, "", frame.CodeInvalidRequest, "Accept must include text/event-stream")
		return
	}
	ss, ok := s.requireSession(w, r)
	if !ok {
		return
	}
	ss.listen(w, r)
}

// serveDELETE ends a session.
func (s *HTTPServer) serveDELETE(w http.ResponseWriter, r *http.Request) {
	ss, ok := s.requireSession(w, r)
	if !ok {
		return
	}
	ss.close(context.WithoutCancel(r.Context()), "the client ended it")
	w.WriteHeader(http.StatusNoContent)
}

// requireSession returns the session a GET or DELETE names, or answers 400
// or 404.
func (s *HTTPServer) requireSession(w http.ResponseWriter, r *http.Request) (*httpSession, bool) {
	if v := r.Header.Get(frame.HeaderProtocolVersion); v != "" && !knownProtocolVersion(v) {
		writeRPCError(w, http.StatusBadRequest, "", frame.CodeInvalidRequest, "unsupported MCP-Protocol-Version "+quoteShort(v))
		return nil, false
	}
	sid := r.Header.Get(frame.HeaderSessionID)
	if sid == "" {
		writeRPCError(w, http.StatusBadRequest, "", frame.CodeInvalidRequest, "Bad Request: missing Mcp-Session-Id")
		return nil, false
	}
	ss := s.lookup(sid)
	if ss == nil {
		writeRPCError(w, http.StatusNotFound, "", frame.CodeInvalidRequest, "session not found")
		return nil, false
	}
	return ss, true
}

// isJSONContentType reports whether a Content-Type is application/json
// (parameters such as charset aside).
func isJSONContentType(ct string) bool {
	if ct == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// writeRPCError answers with status and a JSON-RPC error body.
func writeRPCError(w http.ResponseWriter, status int, id frame.ID, code int, msg string) {
	b := frame.ErrorResponse(id, code, msg).Bytes()
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// quoteShort quotes s for an error message, cut to a sane length.
func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// bodyChunk is the most ReadBody allocates ahead of the bytes that have
// actually arrived, so a large Content-Length alone costs little memory.
const bodyChunk = 4 << 20

// ReadBody reads r's body, at most limit bytes. A longer body fails with
// *http.MaxBytesError, whatever the Content-Length claimed (and
// [LimitBody]'s reader fails the same way). A body already read by a stage
// in front ([WithBody]) is returned without reading or copying.
func ReadBody(r *http.Request, limit int64) ([]byte, error) {
	if p, ok := r.Body.(*prereadBody); ok {
		return p.b, nil
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > limit {
		return nil, &http.MaxBytesError{Limit: limit}
	}
	want := limit + 1 // unknown length: read until EOF or past the cap
	if r.ContentLength >= 0 {
		want = r.ContentLength
	}
	buf := make([]byte, 0, min(want, bodyChunk))
	for {
		if int64(len(buf)) >= want {
			if r.ContentLength >= 0 {
				return buf, nil
			}
			return nil, &http.MaxBytesError{Limit: limit}
		}
		if len(buf) == cap(buf) {
			// The first chunk arrived: trust the announced length now (one
			// copy), or keep doubling for a body of unknown length.
			grow := want - int64(len(buf))
			if r.ContentLength < 0 {
				grow = min(grow, int64(max(len(buf), bodyChunk)))
			}
			buf = slices.Grow(buf, int(grow))
		}
		end := min(int64(cap(buf)), want)
		n, err := r.Body.Read(buf[len(buf):end])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			if r.ContentLength >= 0 && int64(len(buf)) < r.ContentLength {
				return nil, io.ErrUnexpectedEOF
			}
			if int64(len(buf)) > limit {
				return nil, &http.MaxBytesError{Limit: limit}
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// WriteBodyError answers a POST whose body [ReadBody] could not read: 413
// for a body over the cap, 400 otherwise.
func WriteBodyError(w http.ResponseWriter, err error) {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		w.Header().Set("Connection", "close")
		writeRPCError(w, http.StatusRequestEntityTooLarge, "", frame.CodeInvalidRequest, "request body too large")
		return
	}
	writeRPCError(w, http.StatusBadRequest, "", frame.CodeInvalidRequest, "cannot read the request body")
}

// WithBody returns a shallow copy of r whose body is b, already read by a
// stage that had to look at it; [ReadBody] hands b on without copying.
func WithBody(r *http.Request, b []byte) *http.Request {
	r2 := r.WithContext(r.Context())
	r2.Body = &prereadBody{Reader: bytes.NewReader(b), b: b}
	r2.ContentLength = int64(len(b))
	return r2
}

// prereadBody is a request body that was read ahead.
type prereadBody struct {
	*bytes.Reader
	b []byte
}

// Close does nothing.
func (*prereadBody) Close() error { return nil }
