package mw

import (
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"
)

const sessionEraInitBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","clientInfo":{"name":"c"}}}`

// sse hands the HTTP+SSE entry one message on a fresh exchange, as the
// transport would (naming the session in Mcp-Session-Id); a POST's
// exchange is finished, a GET's is returned open.
func (h *sessionsHarness) sse(t *testing.T, method, sid, body string) (*fakeExchange, error) {
	t.Helper()
	x, err := hand(t.Context(), h.s.SSE(), method, sid, body)
	settle(x)
	return x, err
}

// A stream opens a session under the transport's id at once; its
// messages reach the session's backend, the first initialize is recorded,
// and the session ends when the stream does.
func TestSessionsSSEStreamIsTheSession(t *testing.T) {
	is := is.New(t)
	h := newSessionsHarness(t, SessionsOptions{})
	h.version = "2024-11-05"
	stream, err := h.sse(t, http.MethodGet, "sse-1", "")
	is.NoErr(err)
	is.Equal(h.s.Len(), 1)
	b := h.opened[0]

	x, err := h.sse(t, http.MethodPost, "sse-1", sessionEraInitBody)
	is.NoErr(err)
	is.Equal(x.taken, []string{`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2024-11-05"}}`})
	init, ok := b.conn.ClientInitialize()
	is.True(ok)
	is.Equal(init.String(), sessionEraInitBody)
	is.Equal(b.conn.ProtocolVersion(), "2024-11-05")

	x, err = h.sse(t, http.MethodPost, "sse-1", `[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`)
	is.NoErr(err)
	is.Equal(len(x.taken), 2) // 2024-11-05 has batches
	is.Equal(b.got[0], "")    // the stream, a message without bytes
	is.Equal(len(b.got), 3)

	stream.finish() // the client went away
	is.Equal(b.conn.Err().Error(), "its client closed the stream")
	is.True(b.isClosed())
	is.Equal(h.s.Len(), 0)
	_, err = h.sse(t, http.MethodPost, "sse-1", pingBody)
	status, _ := refusal(err)
	is.Equal(status, http.StatusNotFound)
}

func TestSessionsSSERefusals(t *testing.T) {
	is := is.New(t)
	h := newSessionsHarness(t, SessionsOptions{MaxSessions: 2})
	_, err := h.sse(t, http.MethodGet, "sse-1", "")
	is.NoErr(err)
	_, err = h.sse(t, http.MethodPost, "sse-1", initBody) // at 2025-11-25
	is.NoErr(err)
	_, err = h.do(t, http.MethodPost, "", initBody) // a Streamable HTTP session: session-1
	is.NoErr(err)
	for _, tt := range []struct {
		method, sid, body string
		status            int
		msg               string
	}{
		{http.MethodGet, "", "", 400, "no session"},
		{http.MethodPost, "", pingBody, 400, "no session"},
		{http.MethodPost, "nope", pingBody, 404, "session not found"},
		{http.MethodPost, "session-1", pingBody, 404, "session not found"}, // not of this transport
		{http.MethodPost, "sse-1", initBody, 400, "the session is already initialized"},
		{http.MethodPost, "sse-1", `{"jsonrpc":"2.0","method":"initialize"}`, 400, "initialize must be a request"},
		{http.MethodPost, "sse-1", `[` + pingBody + `]`, 400, "batches are not part of MCP 2025-11-25"},
		{http.MethodPost, "sse-1", `[]`, 400, "empty batch"},
		{http.MethodDelete, "sse-1", "", 405, "method not allowed"},
		{http.MethodGet, "sse-1", "", 409, "the session id is in use"},
	} {
		_, err := h.sse(t, tt.method, tt.sid, tt.body)
		status, body := refusal(err)
		is.Equal(status, tt.status)             // tt.msg
		is.True(strings.Contains(body, tt.msg)) // tt.msg
	}
	// Nor is an HTTP+SSE session reached through Streamable HTTP.
	_, err = h.do(t, http.MethodPost, "sse-1", pingBody)
	status, _ := refusal(err)
	is.Equal(status, http.StatusNotFound)
	_, err = h.do(t, http.MethodDelete, "sse-1", "")
	status, _ = refusal(err)
	is.Equal(status, http.StatusNotFound)
	is.Equal(h.s.Len(), 2)
}

// A session that ends on its own (its server exited, or Close) has its
// Conn closed, whose stages end the stream; the stream ending then
// changes nothing.
func TestSessionsSSESessionEndsFirst(t *testing.T) {
	is := is.New(t)
	h := newSessionsHarness(t, SessionsOptions{})
	stream, err := h.sse(t, http.MethodGet, "sse-1", "")
	is.NoErr(err)
	ended := make(chan error, 1)
	h.opened[0].conn.OnClose(func(cause error) { ended <- cause })
	close(h.opened[0].done) // the child exited
	is.Equal((<-ended).Error(), "the server process exited")
	is.Equal(h.s.Len(), 0)
	stream.finish()
	is.Equal(h.opened[0].conn.Err().Error(), "the server process exited")

	_, err = h.sse(t, http.MethodGet, "sse-2", "")
	is.NoErr(err)
	is.NoErr(h.s.Close(t.Context()))
	is.Equal(h.opened[1].conn.Err().Error(), "the gateway is shutting down")
	_, err = h.sse(t, http.MethodGet, "sse-3", "")
	status, _ := refusal(err)
	is.Equal(status, http.StatusServiceUnavailable)
}
