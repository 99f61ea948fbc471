package transport

import (
	"crypto/rand"
	"net/http"
	"strings"
	"sync"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// SSEServerConfig configures an [SSEServer].
type SSEServerConfig struct {
	// Serve handles every stream and every message; required. See
	// [SSEServer] for what it is given.
	Serve ServeFunc
	// StreamPath is the path of the stream (the GET); required.
	StreamPath string
	// MessagePath is the path messages are POSTed to; required. It may be
	// StreamPath itself.
	MessagePath string
	// Endpoint is what the endpoint event names, with "?session=ID"
	// appended: MessagePath as the client reaches it, a URL reference
	// (behind a proxy that publishes the server under a prefix, say,
	// "/prefix/message"), properly escaped. "" means MessagePath.
	Endpoint string
	// NewSessionID mints the id each stream's endpoint names; nil means
	// 128 random bits as 26 characters of base32. Ids must be made of
	// letters, digits, '-' and '_' (see [SessionParam]).
	NewSessionID func() string
	// NotFound, when set, is called for each POST answered 404 because no
	// open stream has the id it names. It must not block.
	NotFound func()
}

// SSEServer is the server side of MCP's HTTP+SSE transport (revision
// 2024-11-05), for clients that speak nothing newer: an http.Handler for
// two paths that moves bytes and nothing more. It shares the limits of the
// [HTTPServer] it is built on (body cap, read timeout, memory budget,
// keep-alive comments) and its count of requests in flight (WaitIdle).
//
//   - GET StreamPath opens a stream: its first event, "endpoint", names
//     where to POST messages, Endpoint?session=ID under a fresh id.
//     The ServeFunc is handed a message without bytes carrying the
//     request's headers, with Mcp-Session-Id set to that id (and
//     Last-Event-ID taken out: a stream of this transport cannot be
//     resumed), and the stream's exchange, a GET's. Once it takes it,
//     the endpoint event goes out with the header, then every message
//     sent on the stream, as an "event: message" without an id, until
//     the exchange ends or the client goes away; a silent stream gets a
//     comment every KeepAlive. 406 unless Accept allows an event stream.
//   - POST MessagePath?session=ID carries one JSON-RPC message or a batch
//     for the stream ID names (404 when no stream of this server open
//     now has that id; 400 without one). It is checked as HTTPServer
//     checks a POST's (415, 413, 408, 503, 400) and handed to the
//     ServeFunc with Mcp-Session-Id set to the id, and an exchange of its
//     own whose answer the stream carries: what is sent on it goes on the
//     stream, and it is over once ended, or when the stream is. The POST
//     itself gets 202 Accepted and an empty body as soon as the ServeFunc
//     took it. A POST carrying requests counts as in flight (see
//     HTTPServer.WaitIdle) until its exchange is over.
//   - Any other method on either path gets 405, any other path 404.
//
// A stream ends when its client goes away or its exchange ends; from
// then on its id gets 404. What the ids mean (sessions) is for the stages
// behind the ServeFunc; put the guards in front (see package mw).
type SSEServer struct {
	srv *HTTPServer
	cfg SSEServerConfig

	mu      sync.Mutex
	streams map[string]*Exchange // open streams by id
}

// NewSSEServer returns the HTTP+SSE face of srv for cfg.
func NewSSEServer(srv *HTTPServer, cfg SSEServerConfig) *SSEServer {
	if cfg.NewSessionID == nil {
		cfg.NewSessionID = rand.Text
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = cfg.MessagePath
	}
	return &SSEServer{srv: srv, cfg: cfg, streams: make(map[string]*Exchange)}
}

// ServeHTTP serves the stream's path and the messages' path.
func (s *SSEServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case path == s.cfg.StreamPath && r.Method == http.MethodGet:
		s.serveStream(w, r)
	case path == s.cfg.MessagePath && r.Method == http.MethodPost:
		s.serveMessage(w, r)
	case path == s.cfg.StreamPath || path == s.cfg.MessagePath:
		var allow []string
		if path == s.cfg.StreamPath {
			allow = append(allow, http.MethodGet)
		}
		if path == s.cfg.MessagePath {
			allow = append(allow, http.MethodPost)
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	default:
		http.NotFound(w, r)
	}
}

// Streams returns the number of open streams.
func (s *SSEServer) Streams() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.streams)
}

// serveStream opens a stream.
func (s *SSEServer) serveStream(w http.ResponseWriter, r *http.Request) {
	if !acceptsGET(r.Header.Values("Accept")) {
		writeRPCError(w, http.StatusNotAcceptable, "", frame.CodeInvalidRequest, "Accept must include text/event-stream")
		return
	}
	id := s.cfg.NewSessionID()
	x := newExchange(s.srv, http.MethodGet, true)
	x.plain = true
	x.opening = endpointEvent(s.cfg.Endpoint + "?" + sessionParam + "=" + id)
	s.mu.Lock()
	_, taken := s.streams[id]
	if !taken {
		s.streams[id] = x
	}
	s.mu.Unlock()
	if taken {
		writeRPCError(w, http.StatusInternalServerError, "", frame.CodeGateway, "a session id was minted twice")
		return
	}
	defer func() {
		s.mu.Lock()
		delete(s.streams, id)
		s.mu.Unlock()
		x.finish()
	}()
	h := r.Header.Clone()
	h.Del(frame.HeaderLastEventID)
	h.Set(frame.HeaderSessionID, id)
	if err := s.cfg.Serve(r.Context(), frame.Message{}.WithHeaders(h), x); err != nil {
		s.srv.refuse(w, "", err)
		return
	}
	x.writeSSE(w, r)
}

// notFound reports a POST for no open stream to cfg.NotFound.
func (s *SSEServer) notFound() {
	if s.cfg.NotFound != nil {
		s.cfg.NotFound()
	}
}

// serveMessage takes a POST for a stream.
func (s *SSEServer) serveMessage(w http.ResponseWriter, r *http.Request) {
	id, ok := SessionParam(r.URL.RawQuery)
	if !ok {
		writeRPCError(w, http.StatusBadRequest, "", frame.CodeInvalidRequest, "Bad Request: the URL names no session (want ?"+sessionParam+"=ID from the endpoint event)")
		return
	}
	s.mu.Lock()
	stream := s.streams[id]
	s.mu.Unlock()
	if stream == nil {
		s.notFound()
		writeRPCError(w, http.StatusNotFound, "", frame.CodeInvalidRequest, "session not found")
		return
	}
	if !isJSONContentType(r.Header.Get("Content-Type")) {
		writeRPCError(w, http.StatusUnsupportedMediaType, "", frame.CodeInvalidRequest, "Content-Type must be application/json")
		return
	}
	m, held, ok := s.srv.readMessage(w, r)
	if !ok {
		return
	}
	defer func() { s.srv.cfg.Budget.Release(held) }()
	firstID, hasRequest := m.FirstRequestID()
	x := newExchange(s.srv, http.MethodPost, true)
	x.via = stream
	if hasRequest {
		s.srv.beginRequest()
		x.OnDone(func([]frame.Message) { s.srv.endRequest() })
	}
	if !stream.carry(x) {
		s.notFound()
		writeRPCError(w, http.StatusNotFound, firstID, frame.CodeInvalidRequest, "session not found")
		return
	}
	h := r.Header.Clone()
	h.Set(frame.HeaderSessionID, id)
	err := s.cfg.Serve(r.Context(), m.WithHeaders(h), x)
	s.srv.cfg.Budget.Release(held)
	held = 0
	if err != nil {
		x.End()
		s.srv.refuse(w, firstID, err)
		return
	}
	if !hasRequest {
		x.End() // nothing of its own to carry
	}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusAccepted)
}

// sessionParam is the query parameter of the messages' URL that names the
// stream.
const sessionParam = "session"

// maxSessionID bounds the length of a session id in a URL.
const maxSessionID = 128

// SessionParam reads the session id from the raw query of a message's
// URL: the value of its one "session" parameter, which must be 1 to 128
// letters, digits, '-', '_' or '.' (no escapes; '.' separates a replica's
// name from the random part of a routable id). Other parameters are
// ignored; ok is false when there is no session parameter, more than one,
// or a malformed one.
func SessionParam(rawQuery string) (id string, ok bool) {
	found := false
	for part := range strings.SplitSeq(rawQuery, "&") {
		name, value, _ := strings.Cut(part, "=")
		if name != sessionParam {
			continue
		}
		if found || !validSessionID(value) {
			return "", false
		}
		id, found = value, true
	}
	return id, found
}

// validSessionID reports whether id may name a session in a URL.
func validSessionID(id string) bool {
	if id == "" || len(id) > maxSessionID {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// endpointEvent returns the endpoint event naming url.
func endpointEvent(url string) []byte {
	return []byte("event: endpoint\ndata: " + url + "\n\n")
}
