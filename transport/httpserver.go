package transport

import (
	"context"
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Defaults for [HTTPServerConfig].
const (
	// DefaultHeaderHold is how long an event-stream answer's header waits
	// for the first message to go out with it.
	DefaultHeaderHold = 10 * time.Millisecond
	// DefaultKeepAlive is how often a silent event stream gets a comment
	// line.
	DefaultKeepAlive = 15 * time.Second
)

// ServeFunc handles one request the [HTTPServer] received: m is the POST's
// message (one message or a batch) with the request's headers as its side
// channel, or, for a GET or DELETE, a message without bytes carrying only
// the headers; x is the exchange, where the answer goes.
//
// A nil return means the request was taken: a POST carrying requests, and
// a GET, are then answered with what is sent on x until x ends; a POST of
// notifications and responses gets 202, a DELETE 204. An error is the
// answer instead: a *frame.StatusError is written as it is (its status,
// header fields and body; Content-Type application/json unless it names
// another; a 503 without Retry-After gets "Retry-After: 1"), anything else
// as 502 with a JSON-RPC error.
type ServeFunc func(ctx context.Context, m frame.Message, x *Exchange) error

// HTTPServerConfig configures an [HTTPServer].
type HTTPServerConfig struct {
	// Serve handles every request; required.
	Serve ServeFunc
	// MaxBodySize bounds a POST body; 0 means frame.DefaultMaxMessageSize.
	// (Put a body cap in front to answer 413 before a long body is read.)
	MaxBodySize int64
	// MaxDepth bounds how deeply a POST body's JSON may nest; 0 means
	// frame.DefaultMaxDepth. A deeper body is answered 400 with -32600.
	MaxDepth int
	// ReadTimeout bounds the silence while a POST body arrives (see
	// [BodyLimits]): a body that stops arriving for this long is answered
	// 408 and its connection closed. 0 means [DefaultBodyReadTimeout]; a
	// negative value turns it off.
	ReadTimeout time.Duration
	// Budget, when set, counts the message bytes the server holds: a POST
	// body of frame.BudgetMin bytes or more while it is read and until the
	// handler has passed it on (one the budget cannot take gets 503), and
	// every message queued on an answer until it is written or dropped.
	// Queued messages are counted whatever their size and whatever the
	// total: they are in memory already, and the next body or line read
	// against the budget sees them.
	Budget *frame.Budget
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
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// HTTPServer is the server side of MCP's Streamable HTTP transport: an
// http.Handler for the one MCP endpoint that moves bytes and nothing more.
// It checks what HTTP itself requires — the method, a POST's Content-Type
// and Accept, the body's size and that it is JSON-RPC — and hands each
// request to its ServeFunc as a [frame.Message] with the request's headers
// attached, together with the [Exchange] its answer is written from. What
// the messages mean (sessions, protocol versions, which answer a message
// the server sends belongs to) is for the stages behind the ServeFunc.
//
//   - POST: the body is one JSON-RPC message or a batch. It is answered
//     with an event stream when the client accepts text/event-stream, else
//     with JSON; 415 for another Content-Type, 406 when neither answer is
//     acceptable, 413 for a body over the cap, 408 for one that stopped
//     arriving (see ReadTimeout), 503 for one the memory budget cannot
//     take, 400 for a body that is not JSON (-32700) or not a valid
//     JSON-RPC message (-32600, with the reason, under the request's id
//     when only the rest of its envelope is wrong; see
//     frame.EnvelopeError). The connection of a body that could not be
//     read is closed.
//   - GET: an event stream (406 unless Accept allows one).
//   - DELETE: 204 once the ServeFunc took it.
//   - Any other method: 405.
//
// It has no policy about who may call it: put the guards in front (see
// package mw).
type HTTPServer struct {
	cfg      HTTPServerConfig
	log      *slog.Logger
	refusals frame.QuietLog // of bodies refused for the budget
	tooDeep  frame.QuietLog // of bodies refused for their nesting

	mu       sync.Mutex
	inflight int             // POSTs being answered (HTTP+SSE: those carrying requests)
	idle     []chan struct{} // closed when inflight next reaches 0
}

// NewHTTPServer returns a server for cfg.
func NewHTTPServer(cfg HTTPServerConfig) *HTTPServer {
	if cfg.MaxBodySize <= 0 {
		cfg.MaxBodySize = frame.DefaultMaxMessageSize
	}
	if cfg.HeaderHold <= 0 {
		cfg.HeaderHold = DefaultHeaderHold
	}
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = DefaultBodyReadTimeout
	}
	return &HTTPServer{
		cfg:      cfg,
		log:      orDiscard(cfg.Logger),
		refusals: frame.QuietLog{Every: refusalLogEvery},
		tooDeep:  frame.QuietLog{Every: refusalLogEvery},
	}
}

// ServeHTTP serves the MCP endpoint.
func (s *HTTPServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		s.servePOST(w, r)
	case http.MethodGet:
		if !acceptsGET(r.Header.Values("Accept")) {
			writeRPCError(w, http.StatusNotAcceptable, "", frame.CodeInvalidRequest, "Accept must include text/event-stream")
			return
		}
		s.serveBodiless(w, r, true)
	case http.MethodDelete:
		s.serveBodiless(w, r, false)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// WaitIdle returns once no request is in flight — no POST of this server
// is being answered, nor one carrying requests of its HTTP+SSE face — or
// with ctx's error when ctx ends first. It refuses nothing: whether a
// request may still come in is for the stages behind the ServeFunc (a
// gateway that drains refuses new sessions there, and serves the rest).
func (s *HTTPServer) WaitIdle(ctx context.Context) error {
	s.mu.Lock()
	if s.inflight == 0 {
		s.mu.Unlock()
		return nil
	}
	idle := make(chan struct{})
	s.idle = append(s.idle, idle)
	s.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// InFlight returns the number of requests in flight: POSTs being
// answered (of the HTTP+SSE face, those carrying requests).
func (s *HTTPServer) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight
}

// servePOST handles a POST: one message or a batch.
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
	m, held, ok := s.readMessage(w, r)
	if !ok {
		return
	}
	// The body is counted until the handler has passed it on (or it is
	// refused here).
	defer func() { s.cfg.Budget.Release(held) }()
	firstID, hasRequest := m.FirstRequestID()
	s.beginRequest() // until its answer is out, whatever the POST carries
	defer s.endRequest()
	x := newExchange(s, http.MethodPost, wantSSE)
	x.jsonOK = wantJSON
	defer x.finish()
	batch := m.Kind() == frame.Batch
	err := s.cfg.Serve(r.Context(), m.WithHeaders(r.Header), x)
	s.cfg.Budget.Release(held)
	held = 0
	if err != nil {
		s.refuse(w, firstID, err)
		return
	}
	switch {
	case !hasRequest:
		// The exchange is over once the handler took the message: it
		// ends (its OnDone functions run, e.g. the session it held falls
		// idle) before the client can see the 202 and send what it sends
		// next. The 202 is sent now rather than when the handler returns:
		// a client's answer can be what lets the last request finish,
		// and a drain that ends then must not overtake it.
		x.finish()
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusAccepted)
		_ = http.NewResponseController(w).Flush()
	case wantSSE:
		x.writeSSE(w, r)
	default:
		x.writeJSON(w, r, batch)
	}
}

// readMessage reads a POST's body, within the body cap, the read timeout
// and the budget, as one JSON-RPC message or a batch, and returns it with
// what it holds of the budget (for the caller to release). When the body
// cannot be read or is not JSON-RPC, it answers the POST itself and
// reports false.
func (s *HTTPServer) readMessage(w http.ResponseWriter, r *http.Request) (frame.Message, int64, bool) {
	body, held, err := ReadBodyLimited(w, r, BodyLimits{
		Max:         s.cfg.MaxBodySize,
		ReadTimeout: max(s.cfg.ReadTimeout, 0),
		Budget:      s.cfg.Budget,
	})
	if err != nil {
		if errors.Is(err, frame.ErrOverBudget) {
			if ok, unlogged := s.refusals.Allow(time.Now(), ""); ok {
				s.log.Warn("refusing request bodies: the memory budget for messages is used up", "budget", s.cfg.Budget.Limit(), "refused", unlogged+1)
			}
		}
		writeBodyError(w, err, s.cfg.ReadTimeout)
		return frame.Message{}, 0, false
	}
	m, err := frame.Parser{MaxDepth: s.cfg.MaxDepth}.ParseOwned(body) // the body is ours: no copy
	if err != nil && !errors.Is(err, frame.ErrNotJSONRPC) {
		s.cfg.Budget.Release(held)
		writeRPCError(w, http.StatusBadRequest, "", frame.CodeParseError, "parse error: the body is not JSON")
		return frame.Message{}, 0, false
	}
	if err == nil {
		err = m.Err()
	}
	if err != nil {
		s.cfg.Budget.Release(held)
		if errors.Is(err, frame.ErrTooDeep) {
			if ok, unlogged := s.tooDeep.Allow(time.Now(), ""); ok {
				s.log.Warn("refused a request body nested deeper than the limit; raise --max-depth if a client needs more", "limit", frame.Parser{MaxDepth: s.cfg.MaxDepth}.Depth(), "refused", unlogged+1)
			}
		}
		id, msg := refusal(err)
		writeRPCError(w, http.StatusBadRequest, id, frame.CodeInvalidRequest, msg)
		return frame.Message{}, 0, false
	}
	return m, held, true
}

// serveBodiless handles a GET (stream) or a DELETE.
func (s *HTTPServer) serveBodiless(w http.ResponseWriter, r *http.Request, stream bool) {
	x := newExchange(s, r.Method, stream)
	defer x.finish()
	if err := s.cfg.Serve(r.Context(), frame.Message{}.WithHeaders(r.Header), x); err != nil {
		s.refuse(w, "", err)
		return
	}
	if stream {
		x.writeSSE(w, r)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// refuse answers a request the ServeFunc did not take.
func (s *HTTPServer) refuse(w http.ResponseWriter, id frame.ID, err error) {
	var st *frame.StatusError
	if errors.As(err, &st) {
		h := w.Header()
		for k, v := range st.Header {
			h[k] = v
		}
		if h.Get("Content-Type") == "" && len(st.Body) > 0 {
			h.Set("Content-Type", "application/json") // a JSON-RPC error, as a rule
		}
		if st.Code == http.StatusServiceUnavailable && h.Get("Retry-After") == "" {
			h.Set("Retry-After", unavailableRetryAfter) // not taken: try again
		}
		h.Set("Content-Length", strconv.Itoa(len(st.Body)))
		w.WriteHeader(st.Code)
		_, _ = w.Write(st.Body)
		return
	}
	s.log.Debug("could not deliver a client message", "err", err)
	writeRPCError(w, http.StatusBadGateway, id, frame.CodeGateway, "the server could not take the message: "+err.Error())
}

// unavailableRetryAfter is the Retry-After, in seconds, of a 503 refusal
// that names none.
const unavailableRetryAfter = "1"

// beginRequest counts a POST in flight, until endRequest.
func (s *HTTPServer) beginRequest() {
	s.mu.Lock()
	s.inflight++
	s.mu.Unlock()
}

// endRequest ends what beginRequest began; the last one out wakes the
// WaitIdle callers.
func (s *HTTPServer) endRequest() {
	s.mu.Lock()
	s.inflight--
	if s.inflight == 0 {
		for _, c := range s.idle {
			close(c)
		}
		s.idle = nil
	}
	s.mu.Unlock()
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
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
