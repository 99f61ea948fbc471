package mw

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// afterDrainHarness is RefuseAfterDrain in front of a stage that records
// what it is handed.
type afterDrainHarness struct {
	drained atomic.Bool
	passed  []string // the method (or "response") of each message let through, with its HTTP method
	entry   Handler
}

func newAfterDrainHarness(retryAfter time.Duration) *afterDrainHarness {
	h := &afterDrainHarness{}
	inner := HandlerFunc(func(ctx context.Context, m frame.Message) error {
		what := m.Method()
		if k := m.Kind(); k == frame.Result || k == frame.Error {
			what = "response"
		}
		h.passed = append(h.passed, ExchangeOf(ctx).Method()+" "+what)
		return nil
	})
	h.entry = RefuseAfterDrain(AfterDrainOptions{Drained: h.drained.Load, RetryAfter: retryAfter})(Duplex{ToServer: inner, ToClient: Discard()}).ToServer
	return h
}

// Until the drain is over everything passes. Then a request (or a batch
// with one) and a GET are refused untaken: 404 under a session, 503 with
// Retry-After without one, each under the first request's id;
// notifications, responses and DELETEs still pass.
func TestRefuseAfterDrain(t *testing.T) {
	is := is.New(t)
	h := newAfterDrainHarness(0)
	ctx := t.Context()
	for _, c := range []struct{ method, sid, body string }{
		{http.MethodPost, "s-1", pingBody},
		{http.MethodPost, "", pingBody},
		{http.MethodGet, "s-1", ""},
	} {
		_, err := hand(ctx, h.entry, c.method, c.sid, c.body)
		is.NoErr(err) // not drained yet
	}
	is.Equal(len(h.passed), 3)

	h.drained.Store(true)
	h.passed = nil
	refused := []struct {
		name, method, sid, body string
		status                  int
		retryAfter, answer      string
	}{
		{"a session's request", http.MethodPost, "s-1", pingBody, http.StatusNotFound, "",
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"session ended: the gateway has drained and is shutting down; start a new session"}}`},
		{"a session's batch with a request", http.MethodPost, "s-1", `[{"jsonrpc":"2.0","method":"notifications/progress","params":{}},{"jsonrpc":"2.0","id":"b","method":"ping"}]`, http.StatusNotFound, "",
			`{"jsonrpc":"2.0","id":"b","error":{"code":-32000,"message":"session ended: the gateway has drained and is shutting down; start a new session"}}`},
		{"a session's new stream", http.MethodGet, "s-1", "", http.StatusNotFound, "",
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"session ended: the gateway has drained and is shutting down; start a new session"}}`},
		{"a request without a session", http.MethodPost, "", pingBody, http.StatusServiceUnavailable, "1",
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"the gateway has drained and is shutting down: retry after 1s (behind a load balancer, the retry reaches another replica)"}}`},
	}
	for _, c := range refused {
		_, err := hand(ctx, h.entry, c.method, c.sid, c.body)
		status, retry, body := drainRefusal(t, err)
		is.Equal(status, c.status)    // c.name
		is.Equal(retry, c.retryAfter) // c.name
		is.Equal(body, c.answer)      // c.name
	}
	is.Equal(len(h.passed), 0) // nothing refused was handed on

	for _, c := range []struct{ method, sid, body string }{
		{http.MethodPost, "s-1", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`},
		{http.MethodPost, "s-1", `{"jsonrpc":"2.0","id":"s-7","result":{}}`},
		{http.MethodPost, "", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`},
		{http.MethodDelete, "s-1", ""},
	} {
		_, err := hand(ctx, h.entry, c.method, c.sid, c.body)
		is.NoErr(err) // starts no work
	}
	is.Equal(h.passed, []string{"POST notifications/cancelled", "POST response", "POST notifications/cancelled", "DELETE "})
}

// The 503's Retry-After is in whole seconds, rounded up.
func TestRefuseAfterDrainRetryAfter(t *testing.T) {
	is := is.New(t)
	h := newAfterDrainHarness(2500 * time.Millisecond)
	h.drained.Store(true)
	_, err := hand(t.Context(), h.entry, http.MethodPost, "", pingBody)
	_, retry, body := drainRefusal(t, err)
	is.Equal(retry, "3")
	is.Equal(body, `{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"the gateway has drained and is shutting down: retry after 3s (behind a load balancer, the retry reaches another replica)"}}`)
}
