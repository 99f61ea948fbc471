package mw

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// fakeBackend answers every request on the exchange in its context at
// once: initialize with a result at version (or an error when the client
// is named "reject"), anything else with an empty result. A GET's stream
// stays open.
type fakeBackend struct {
	version string
	conn    *Conn
	fail    error // returned by Handle when set

	mu     sync.Mutex
	got    []string
	done   chan struct{}
	closed bool
}

func (b *fakeBackend) Handle(ctx context.Context, m frame.Message) error {
	b.mu.Lock()
	b.got = append(b.got, m.String())
	fail := b.fail
	b.mu.Unlock()
	if ConnOf(ctx) != b.conn {
		return errors.New("the session's Conn is not in the context")
	}
	if fail != nil {
		return fail
	}
	x := ExchangeOf(ctx)
	if x.Method() == http.MethodGet {
		return nil
	}
	var answers []frame.Message
	for el := range m.Elements() {
		if el.Kind() != frame.Request {
			continue
		}
		answer := frame.ResultResponse(el.ID(), []byte(`{}`))
		switch {
		case el.Method() == "initialize" && el.Get("params.clientInfo.name").String() == "reject":
			answer = frame.ErrorResponse(el.ID(), frame.CodeInvalidParams, "rejected")
		case el.Method() == "initialize":
			answer = frame.ResultResponse(el.ID(), []byte(`{"protocolVersion":"`+b.version+`"}`))
		}
		answers = append(answers, answer)
	}
	if len(answers) == 0 {
		x.End()
		return nil
	}
	for _, a := range answers[:len(answers)-1] {
		if err := x.Send(ctx, a, ""); err != nil {
			return err
		}
	}
	return x.SendLast(ctx, answers[len(answers)-1], "") // as Route sends the last answer
}

func (b *fakeBackend) Done() <-chan struct{} { return b.done }

func (b *fakeBackend) Close(context.Context) error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}

func (b *fakeBackend) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// sessionsHarness is a Sessions stage whose backends are fakeBackends.
type sessionsHarness struct {
	s       *Sessions
	mu      sync.Mutex
	opened  []*fakeBackend
	version string
	timers  []func()
}

func newSessionsHarness(t *testing.T, o SessionsOptions) *sessionsHarness {
	h := &sessionsHarness{version: "2025-11-25"}
	if o.NewID == nil {
		n := 0
		o.NewID = func() string { n++; return fmt.Sprintf("session-%d", n) }
	}
	o.Open = func(_ context.Context, id string, conn *Conn) (Backend, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		b := &fakeBackend{version: h.version, conn: conn, done: make(chan struct{})}
		h.opened = append(h.opened, b)
		return b, nil
	}
	if o.IdleTimeout > 0 {
		o.AfterFunc = func(_ time.Duration, f func()) func() bool {
			h.mu.Lock()
			h.timers = append(h.timers, f)
			h.mu.Unlock()
			return func() bool { return true }
		}
	}
	h.s = NewSessions(o)
	t.Cleanup(func() { h.s.Close(context.Background()) })
	return h
}

// do hands the stage one request on a fresh exchange, as the transport
// would, and finishes the exchange.
func (h *sessionsHarness) do(t *testing.T, method, sid, body string) (*fakeExchange, error) {
	t.Helper()
	x, err := hand(t.Context(), h.s, method, sid, body)
	x.lines()
	x.finish()
	return x, err
}

const (
	initBody   = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"c"}}}`
	rejectBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"reject"}}}`
	pingBody   = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
)

func TestSessionsOpenOnInitialize(t *testing.T) {
	is := is.New(t)
	h := newSessionsHarness(t, SessionsOptions{})
	x, err := h.do(t, http.MethodPost, "", initBody)
	is.NoErr(err)
	is.True(x.hold)                                                                                   // the answer decides the header
	is.Equal(x.taken, []string{`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}`}) // the bytes unchanged
	is.Equal(h.s.Len(), 1)
	conn := h.opened[0].conn
	init, ok := conn.ClientInitialize()
	is.True(ok)
	is.Equal(init.String(), initBody)
	is.Equal(conn.ProtocolVersion(), "2025-11-25")

	// The session id rides on the result's side channel.
	x2 := &fakeExchange{method: http.MethodPost, sse: false}
	is.NoErr(h.s.Handle(on(t.Context(), x2), frame.MustParse(initBody)))
	is.Equal(x2.firstHeader().Get(frame.HeaderSessionID), "session-2")
	x2.finish()

	_, err = h.do(t, http.MethodPost, "session-1", pingBody)
	is.NoErr(err)
	is.Equal(h.opened[0].got[1], pingBody)
}

// The exchange of an initialize may be over before the send of its result
// returns: the session must live on all the same.
func TestSessionsInitializeAnsweredAtOnce(t *testing.T) {
	is := is.New(t)
	h := newSessionsHarness(t, SessionsOptions{})
	x := &fakeExchange{method: http.MethodPost, sse: true, overOnLast: true}
	is.NoErr(h.s.Handle(on(t.Context(), x), frame.MustParse(initBody)))
	is.Equal(x.taken, []string{`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}`})
	is.Equal(h.s.Len(), 1) // not ended as a failed initialize
	is.True(h.opened[0].conn.Err() == nil)
}

func TestSessionsRefusals(t *testing.T) {
	is := is.New(t)
	var notFound atomic.Int32
	h := newSessionsHarness(t, SessionsOptions{MaxSessions: 1, NotFound: func() { notFound.Add(1) }})
	is.True(!h.s.Full())
	_, err := h.do(t, http.MethodPost, "", initBody)
	is.NoErr(err)
	is.True(!h.s.Full()) // MaxSessions live, but idle: a new one would take its place
	for _, tt := range []struct {
		method, sid, body string
		status            int
		msg               string
	}{
		{http.MethodPost, "", pingBody, 400, "missing Mcp-Session-Id (initialize first)"},
		{http.MethodPost, "nope", pingBody, 404, "session not found"},
		{http.MethodGet, "", "", 400, "missing Mcp-Session-Id"},
		{http.MethodDelete, "nope", "", 404, "session not found"},
		{http.MethodPost, "session-1", initBody, 400, "the session is already initialized"},
		{http.MethodPost, "nope", initBody, 404, "session not found"},
		{http.MethodPost, "", `{"jsonrpc":"2.0","method":"initialize"}`, 400, "initialize must be a request"},
		{http.MethodPost, "session-1", `[]`, 400, "empty batch"},
		{http.MethodPost, "session-1", `[{"jsonrpc":"2.0","id":3,"method":"ping"},7]`, 400, "not a JSON-RPC message"},
		{http.MethodPost, "session-1", `[` + initBody + `]`, 400, "initialize must not be batched"},
		{http.MethodPost, "session-1", `[` + pingBody + `]`, 400, "batches are not part of MCP 2025-11-25"},
	} {
		_, err := h.do(t, tt.method, tt.sid, tt.body)
		status, body := refusal(err)
		is.Equal(status, tt.status)             // tt.msg
		is.True(strings.Contains(body, tt.msg)) // tt.msg
	}
	is.Equal(h.s.Len(), 1)
	is.Equal(notFound.Load(), int32(3)) // each 404 told
}

func TestSessionsBatchesOn20250326(t *testing.T) {
	is := is.New(t)
	h := newSessionsHarness(t, SessionsOptions{})
	h.version = "2025-03-26"
	_, err := h.do(t, http.MethodPost, "", initBody)
	is.NoErr(err)
	x, err := h.do(t, http.MethodPost, "session-1", `[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`)
	is.NoErr(err)
	is.Equal(len(x.taken), 2)
}

func TestSessionsFailedInitializeEndsTheSession(t *testing.T) {
	is := is.New(t)
	h := newSessionsHarness(t, SessionsOptions{})
	x, err := h.do(t, http.MethodPost, "", rejectBody)
	is.NoErr(err)
	is.Equal(x.taken, []string{`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"rejected"}}`})
	is.Equal(h.s.Len(), 0)
	is.True(h.opened[0].isClosed())
	is.Equal(h.opened[0].conn.Err().Error(), "initialize failed")

	// An initialize whose result never reached its client ends it too.
	x = &fakeExchange{method: http.MethodPost, sse: true}
	is.NoErr(h.s.Handle(on(t.Context(), x), frame.MustParse(initBody)))
	x.finish() // the client went away before the result was taken
	is.Equal(h.s.Len(), 0)
}

func TestSessionsBackendFailure(t *testing.T) {
	is := is.New(t)
	h := newSessionsHarness(t, SessionsOptions{})
	_, err := h.do(t, http.MethodPost, "", initBody)
	is.NoErr(err)
	b := h.opened[0]

	b.mu.Lock()
	b.fail = &frame.SendError{Err: errors.New("broken pipe")}
	b.mu.Unlock()
	status, body := refusal(func() error { _, err := h.do(t, http.MethodPost, "session-1", pingBody); return err }())
	is.Equal(status, http.StatusBadGateway)
	is.True(strings.Contains(body, `"id":2`))

	b.mu.Lock()
	b.fail = fmt.Errorf("write: %w", frame.ErrUnavailable) // the child exited
	b.mu.Unlock()
	status, _ = refusal(func() error { _, err := h.do(t, http.MethodPost, "session-1", pingBody); return err }())
	is.Equal(status, http.StatusNotFound)

	b.mu.Lock()
	b.fail = Refuse(http.StatusConflict, "", frame.CodeInvalidRequest, "a stage's own")
	b.mu.Unlock()
	status, _ = refusal(func() error { _, err := h.do(t, http.MethodGet, "session-1", ""); return err }())
	is.Equal(status, http.StatusConflict) // passed as it is
}

func TestSessionsEnd(t *testing.T) {
	is := is.New(t)
	h := newSessionsHarness(t, SessionsOptions{IdleTimeout: time.Minute})
	for range 3 {
		_, err := h.do(t, http.MethodPost, "", initBody)
		is.NoErr(err)
	}

	_, err := h.do(t, http.MethodDelete, "session-1", "")
	is.NoErr(err)
	is.Equal(h.opened[0].conn.Err().Error(), "the client ended it")
	is.True(h.opened[0].isClosed())

	ended := make(chan error, 1)
	h.opened[1].conn.OnClose(func(cause error) { ended <- cause })
	close(h.opened[1].done) // the child exited
	is.Equal((<-ended).Error(), "the server process exited")

	h.mu.Lock()
	timers := h.timers
	h.mu.Unlock()
	for _, f := range timers {
		f()
	}
	is.Equal(h.opened[2].conn.Err().Error(), "idle timeout")
	is.Equal(h.s.Len(), 0)

	_, err = h.do(t, http.MethodPost, "", initBody)
	is.NoErr(err)
	is.NoErr(h.s.Close(t.Context()))
	is.Equal(h.opened[3].conn.Err().Error(), "the gateway is shutting down")
	_, err = h.do(t, http.MethodPost, "", initBody)
	status, _ := refusal(err)
	is.Equal(status, http.StatusServiceUnavailable)
}

// At MaxSessions a new session takes the place of the one idle the
// longest: that one ends (its backend closed before the new one opens)
// and its client's next request gets 404; the others go on.
func TestSessionsEvictTheLongestIdle(t *testing.T) {
	is := is.New(t)
	var notFound atomic.Int32
	h := newSessionsHarness(t, SessionsOptions{MaxSessions: 2, NotFound: func() { notFound.Add(1) }})
	for range 2 {
		_, err := h.do(t, http.MethodPost, "", initBody)
		is.NoErr(err)
	}
	_, err := h.do(t, http.MethodPost, "session-1", pingBody) // session-1 busy last: session-2 is idle the longest
	is.NoErr(err)

	_, err = h.do(t, http.MethodPost, "", initBody) // session-3
	is.NoErr(err)
	is.Equal(h.s.Len(), 2)
	is.True(h.opened[1].isClosed()) // session-2's backend
	is.True(h.opened[1].conn.Err() != nil)
	is.Equal(h.opened[1].conn.Err().Error(), "evicted to make room for a new session")
	_, err = h.do(t, http.MethodPost, "session-2", pingBody)
	status, body := refusal(err)
	is.Equal(status, http.StatusNotFound) // its client initializes again
	is.True(strings.Contains(body, "session not found"))
	is.Equal(notFound.Load(), int32(1))
	for _, sid := range []string{"session-1", "session-3"} {
		_, err = h.do(t, http.MethodPost, sid, pingBody)
		is.NoErr(err) // sid
	}
	is.True(!h.opened[0].isClosed() && !h.opened[2].isClosed())
}

// A session with a request in flight or a stream open is busy: when every
// one is, a new session is refused with 503, Retry-After and a message
// that says to come back; once one is idle again, it gives way.
func TestSessionsRefuseWhenEverySessionIsBusy(t *testing.T) {
	is := is.New(t)
	h := newSessionsHarness(t, SessionsOptions{MaxSessions: 2})
	for range 2 {
		_, err := h.do(t, http.MethodPost, "", initBody)
		is.NoErr(err)
	}
	stream, err := hand(t.Context(), h.s, http.MethodGet, "session-1", "") // a stream open
	is.NoErr(err)
	call := &fakeExchange{method: http.MethodPost, sse: true} // a request in flight: its exchange not over
	is.NoErr(h.s.Handle(on(t.Context(), call), frame.MustParse(pingBody).WithHeader(frame.HeaderSessionID, "session-2")))
	is.True(h.s.Full())

	_, err = h.do(t, http.MethodPost, "", initBody)
	var st *frame.StatusError
	is.True(errors.As(err, &st))
	is.Equal(st.Code, http.StatusServiceUnavailable)
	is.Equal(st.Header.Get("Retry-After"), RefuseRetryAfter)
	is.Equal(string(st.Body), `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"all 2 sessions are busy; try again later"}}`)
	is.Equal(len(h.opened), 2)
	is.True(!h.opened[0].isClosed() && !h.opened[1].isClosed())

	call.lines()
	call.finish() // session-2 is idle again
	is.True(!h.s.Full())
	_, err = h.do(t, http.MethodPost, "", initBody)
	is.NoErr(err)
	is.True(h.opened[1].isClosed())
	is.True(!h.opened[0].isClosed()) // its stream is still open
	stream.finish()
}

// A session just opened is busy until its first exchange has begun, so
// that a session opened at the same moment cannot evict it first.
func TestSessionsNewSessionIsNotEvictedBeforeItsInitialize(t *testing.T) {
	is := is.New(t)
	h := newSessionsHarness(t, SessionsOptions{MaxSessions: 1})
	first, err := h.s.open(t.Context(), "a", "", false)
	is.NoErr(err)
	_, err = h.s.open(t.Context(), "b", "", false)
	status, _ := refusal(err)
	is.Equal(status, http.StatusServiceUnavailable)
	first.end() // its initialize's exchange would hold it now; none does
	second, err := h.s.open(t.Context(), "b", "", false)
	is.NoErr(err)
	is.True(h.opened[0].isClosed())
	second.end()
}
