package mw

import (
	"context"
	"errors"
	"net/http"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// SSE returns the entry of the session stage for the HTTP+SSE transport of
// MCP 2024-11-05 (serve's transport.SSEServer), beside [Sessions.Handle]
// for Streamable HTTP (see the package documentation): the same table of
// sessions, the same Open, bound and idle timer, but sessions that live as
// long as a stream. Each message comes with its [Exchange] in the context
// and names its session in Mcp-Session-Id, which the transport sets:
//
//   - A GET is a client's stream, and opens a session under the id the
//     transport minted for it (503 beyond MaxSessions or at Close): a
//     Conn and a backend of its own, and the GET's exchange as the
//     session's standalone stream (see [Route]). The session ends when
//     the stream does (its client went away): its Conn is closed and its
//     backend closed. When the session ends first (its backend ended, or
//     Close), the stream is ended by the session's stages.
//   - A POST carries a message of the session's client: 404 when the id
//     names no session of this transport, or one of another principal
//     (the stream's [PrincipalOf] owns the session). The first initialize is
//     recorded in the session's Conn as its handshake (a later one gets
//     400: the server is initialized already); batches are taken as
//     [Sessions.Handle] takes them, by the session's protocol version.
//
// Sessions of one transport are never reached through the other.
func (s *Sessions) SSE() Handler { return HandlerFunc(s.sse) }

// sse takes one message of the HTTP+SSE transport; see [Sessions.SSE].
func (s *Sessions) sse(ctx context.Context, m frame.Message) error {
	x := ExchangeOf(ctx)
	if x == nil {
		return errors.New("mw: Sessions.SSE takes the messages of an HTTP server")
	}
	sid := m.Header().Get(frame.HeaderSessionID)
	if sid == "" {
		return Refuse(http.StatusBadRequest, "", frame.CodeInvalidRequest, "Bad Request: no session")
	}
	switch x.Method() {
	case http.MethodGet:
		return s.stream(ctx, sid, m, x)
	case http.MethodPost:
	default:
		return Refuse(http.StatusMethodNotAllowed, "", frame.CodeInvalidRequest, "method not allowed")
	}
	ss := s.lookup(ctx, sid, true)
	if ss == nil {
		// As the transport answers an id it has no stream for: id null,
		// so that another principal's session looks the same.
		return s.notFound("")
	}
	if err := checkBatch(m); err != nil {
		return Refuse(http.StatusBadRequest, "", frame.CodeInvalidRequest, err.Error())
	}
	if v := ss.conn.ProtocolVersion(); m.Kind() == frame.Batch && !batchesAllowed(v) {
		return Refuse(http.StatusBadRequest, "", frame.CodeInvalidRequest, "invalid request: batches are not part of MCP "+v)
	}
	if m.Method() != "initialize" {
		return ss.forward(ctx, m, x, false)
	}
	switch {
	case m.Kind() != frame.Request:
		return Refuse(http.StatusBadRequest, "", frame.CodeInvalidRequest, "initialize must be a request")
	case ss.conn.ProtocolVersion() != "":
		return Refuse(http.StatusBadRequest, m.ID(), frame.CodeInvalidRequest, "the session is already initialized")
	}
	ix := &initExchange{Exchange: x, ss: ss, req: m}
	return ss.forward(WithExchange(ctx, ix), m, ix, true)
}

// stream opens the session of a client's stream, x, under sid.
func (s *Sessions) stream(ctx context.Context, sid string, m frame.Message, x Exchange) error {
	ss, err := s.open(ctx, sid, "", true)
	if err != nil {
		return err
	}
	defer ss.end() // open's hold: the stream holds it now
	if err := ss.forward(ctx, m, x, false); err != nil {
		ss.close(context.WithoutCancel(ctx), "its stream could not be opened")
		return err
	}
	x.OnDone(func([]frame.Message) {
		ss.close(context.WithoutCancel(ctx), "its client closed the stream")
	})
	return nil
}
