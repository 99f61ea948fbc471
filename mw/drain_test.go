package mw

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// drainHarness is a Sessions stage behind RefuseNewSessions, for both of
// its entries, and the drain state the stage asks.
type drainHarness struct {
	*sessionsHarness
	draining        atomic.Bool
	streamable, sse Handler
}

func newDrainHarness(t *testing.T, retryAfter time.Duration) *drainHarness {
	h := &drainHarness{sessionsHarness: newSessionsHarness(t, SessionsOptions{})}
	o := DrainOptions{Draining: h.draining.Load, RetryAfter: retryAfter}
	h.streamable = RefuseNewSessions(o)(Duplex{ToServer: h.s, ToClient: Discard()}).ToServer
	o.SSE = true
	h.sse = RefuseNewSessions(o)(Duplex{ToServer: h.s.SSE(), ToClient: Discard()}).ToServer
	return h
}

// send hands entry one message on a fresh exchange; a GET's is left open.
func (h *drainHarness) send(t *testing.T, entry Handler, method, sid, body string) (*fakeExchange, error) {
	t.Helper()
	x, err := hand(t.Context(), entry, method, sid, body)
	settle(x)
	return x, err
}

// drainRefusal returns err's status, Retry-After and body.
func drainRefusal(t *testing.T, err error) (int, string, string) {
	t.Helper()
	var st *frame.StatusError
	if !errors.As(err, &st) {
		t.Fatalf("want a refusal, got %v", err)
	}
	return st.Code, st.Header.Get("Retry-After"), string(st.Body)
}

// While draining, an initialize without a session and a new HTTP+SSE
// stream get 503 with Retry-After and a JSON-RPC error naming the drain;
// the sessions already open go on: their requests, notifications and
// responses pass.
func TestRefuseNewSessionsWhileDraining(t *testing.T) {
	is := is.New(t)
	h := newDrainHarness(t, 0)
	_, err := h.send(t, h.streamable, http.MethodPost, "", initBody)
	is.NoErr(err) // not draining: session-1 opens
	_, err = h.send(t, h.sse, http.MethodGet, "stream-1", "")
	is.NoErr(err) // an HTTP+SSE session opens
	is.Equal(h.s.Len(), 2)

	h.draining.Store(true)
	_, err = h.send(t, h.streamable, http.MethodPost, "", initBody)
	status, retry, body := drainRefusal(t, err)
	is.Equal(status, http.StatusServiceUnavailable)
	is.Equal(retry, "1")
	is.Equal(body, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"the gateway is draining before it shuts down and opens no new session: retry after 1s (behind a load balancer, the retry reaches another replica)"}}`)
	_, err = h.send(t, h.sse, http.MethodGet, "stream-2", "")
	status, retry, body = drainRefusal(t, err)
	is.Equal(status, http.StatusServiceUnavailable)
	is.Equal(retry, "1")
	is.True(strings.HasPrefix(body, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,`)) // a stream has no request id
	is.Equal(h.s.Len(), 2)                                                                 // no session opened

	x, err := h.send(t, h.streamable, http.MethodPost, "session-1", pingBody)
	is.NoErr(err)
	is.Equal(x.taken, []string{`{"jsonrpc":"2.0","id":2,"result":{}}`}) // answered
	_, err = h.send(t, h.streamable, http.MethodPost, "session-1", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	is.NoErr(err)
	_, err = h.send(t, h.streamable, http.MethodPost, "session-1", `{"jsonrpc":"2.0","id":"s-1","result":{}}`)
	is.NoErr(err) // a response to the server's request
	_, err = h.send(t, h.streamable, http.MethodGet, "session-1", "")
	is.NoErr(err) // its GET stream
	_, err = h.send(t, h.sse, http.MethodPost, "stream-1", sessionEraInitBody)
	is.NoErr(err) // the HTTP+SSE session's own initialize

	// What the session stage refuses anyway is refused as before.
	_, err = h.send(t, h.streamable, http.MethodPost, "nope", initBody)
	status, _, _ = drainRefusal(t, err)
	is.Equal(status, http.StatusNotFound)
}

// Retry-After is in whole seconds, rounded up.
func TestRefuseNewSessionsRetryAfter(t *testing.T) {
	is := is.New(t)
	h := newDrainHarness(t, 2500*time.Millisecond)
	h.draining.Store(true)
	_, err := h.send(t, h.streamable, http.MethodPost, "", initBody)
	_, retry, _ := drainRefusal(t, err)
	is.Equal(retry, "3")
}
