package mw

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// retryHarness runs Retry over a server that fails with the scripted errors
// in order, then succeeds, and records the sleeps instead of sleeping.
type retryHarness struct {
	mu       sync.Mutex
	script   []error
	attempts int
	sleeps   []time.Duration
}

func (h *retryHarness) Handle(ctx context.Context, m frame.Message) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.attempts++
	if len(h.script) == 0 {
		return nil
	}
	err := h.script[0]
	h.script = h.script[1:]
	return err
}

func (h *retryHarness) sleep(ctx context.Context, d time.Duration) error {
	h.mu.Lock()
	h.sleeps = append(h.sleeps, d)
	h.mu.Unlock()
	return ctx.Err()
}

func (h *retryHarness) handler(o RetryOptions) Handler {
	if o.Sleep == nil {
		o.Sleep = h.sleep
	}
	return Retry(o)(Duplex{ToServer: h, ToClient: Discard()}).ToServer
}

func httpStatus(code int, kv ...string) *frame.StatusError {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return &frame.StatusError{Code: code, Header: h}
}

var (
	retryRefused  = &frame.SendError{Sent: false, Err: syscall.ECONNREFUSED}
	retryBrokeMid = &frame.SendError{Sent: true, Err: errors.New("connection reset after the request was sent")}
	// what an HTTP+SSE transport reports after waiting out its endpoint
	retryUnavailable = &frame.SendError{Sent: false, Err: fmt.Errorf("no endpoint: %w", frame.ErrUnavailable)}
	retryToolsCall   = frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
	retryToolsList   = frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	retryNotify      = frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`)
)

func TestRetry(t *testing.T) {
	tests := []struct {
		name     string
		msg      frame.Message
		script   []error
		opts     RetryOptions
		attempts int
		sleeps   []time.Duration
		wantErr  error // nil: success
	}{
		{
			name: "connection refused then success", msg: retryToolsCall,
			script: []error{retryRefused}, attempts: 2, sleeps: []time.Duration{time.Second},
		},
		{
			name: "never sent is retried for any message", msg: retryNotify,
			script: []error{retryRefused, retryRefused}, attempts: 3, sleeps: []time.Duration{time.Second, 2 * time.Second},
		},
		{
			name: "refused three times gives the last error", msg: retryToolsList,
			script: []error{retryRefused, retryRefused, retryRefused}, attempts: 3,
			sleeps: []time.Duration{time.Second, 2 * time.Second}, wantErr: retryRefused,
		},
		{
			name: "never sent but the transport already waited it out", msg: retryToolsList,
			script: []error{retryUnavailable}, attempts: 1, wantErr: retryUnavailable,
		},
		{
			name: "broken after send: tools/call is not replayed", msg: retryToolsCall,
			script: []error{retryBrokeMid}, attempts: 1, wantErr: retryBrokeMid,
		},
		{
			name: "broken after send: tools/list is replayed", msg: retryToolsList,
			script: []error{retryBrokeMid}, attempts: 2, sleeps: []time.Duration{time.Second},
		},
		{
			name: "broken after send: a notification is not replayed", msg: retryNotify,
			script: []error{retryBrokeMid}, attempts: 1, wantErr: retryBrokeMid,
		},
		{
			name: "broken after send: custom replay-safe set", msg: retryToolsCall,
			script: []error{retryBrokeMid}, opts: RetryOptions{ReplaySafe: func(string) bool { return true }},
			attempts: 2, sleeps: []time.Duration{time.Second},
		},
		{
			name: "429 Retry-After 2", msg: retryToolsCall,
			script: []error{httpStatus(429, "Retry-After", "2")}, attempts: 2, sleeps: []time.Duration{2 * time.Second},
		},
		{
			name: "503 Retry-After 3", msg: retryToolsCall,
			script: []error{httpStatus(503, "Retry-After", "3")}, attempts: 2, sleeps: []time.Duration{3 * time.Second},
		},
		{
			name: "429 asking too long is surfaced at once", msg: retryToolsList,
			script: []error{httpStatus(429, "Retry-After", "999999")}, attempts: 1, wantErr: httpStatus(429),
		},
		{
			name: "429 asking exactly the cap is honoured", msg: retryToolsList,
			script: []error{httpStatus(429, "Retry-After", "60")}, attempts: 2, sleeps: []time.Duration{time.Minute},
		},
		{
			name: "custom cap", msg: retryToolsList, opts: RetryOptions{MaxRetryAfter: 5 * time.Second},
			script: []error{httpStatus(429, "Retry-After", "6")}, attempts: 1, wantErr: httpStatus(429),
		},
		{
			name: "three 429s share the attempt budget", msg: retryToolsCall,
			script:   []error{httpStatus(429, "Retry-After", "1"), httpStatus(429, "Retry-After", "1"), httpStatus(429, "Retry-After", "1")},
			attempts: 3, sleeps: []time.Duration{time.Second, time.Second}, wantErr: httpStatus(429),
		},
		{
			name: "429 without Retry-After backs off linearly", msg: retryToolsCall,
			script:   []error{httpStatus(429), httpStatus(429)},
			attempts: 3, sleeps: []time.Duration{time.Second, 2 * time.Second},
		},
		{
			name: "429 with an unparseable Retry-After backs off linearly", msg: retryToolsCall,
			script: []error{httpStatus(429, "Retry-After", "soon")}, attempts: 2, sleeps: []time.Duration{time.Second},
		},
		{
			name: "429 with a past HTTP-date retries at once", msg: retryToolsCall,
			script:   []error{httpStatus(429, "Retry-After", "Fri, 31 Dec 1999 23:59:59 GMT")},
			attempts: 2, sleeps: []time.Duration{0},
		},
		{
			name: "bare 503: tools/call is not sent again", msg: retryToolsCall,
			script: []error{httpStatus(503)}, attempts: 1, wantErr: httpStatus(503),
		},
		{
			name: "bare 503: a notification is not sent again", msg: retryNotify,
			script: []error{httpStatus(503)}, attempts: 1, wantErr: httpStatus(503),
		},
		{
			name: "bare 503: tools/list is", msg: retryToolsList,
			script: []error{httpStatus(503)}, attempts: 2, sleeps: []time.Duration{time.Second},
		},
		{name: "502 is not retried", msg: retryToolsList, script: []error{httpStatus(502)}, attempts: 1, wantErr: httpStatus(502)},
		{name: "504 is not retried", msg: retryToolsList, script: []error{httpStatus(504)}, attempts: 1, wantErr: httpStatus(504)},
		{name: "404 is not retried", msg: retryToolsList, script: []error{httpStatus(404)}, attempts: 1, wantErr: httpStatus(404)},
		{name: "500 is not retried", msg: retryToolsList, script: []error{httpStatus(500)}, attempts: 1, wantErr: httpStatus(500)},
		{name: "401 is not retried", msg: retryToolsList, script: []error{httpStatus(401)}, attempts: 1, wantErr: httpStatus(401)},
		{name: "other errors are not retried", msg: retryToolsList, script: []error{frame.ErrStreamEnded}, attempts: 1, wantErr: frame.ErrStreamEnded},
		{
			name: "custom attempts", msg: retryToolsList, opts: RetryOptions{Attempts: 5},
			script: []error{retryRefused, retryRefused, retryRefused, retryRefused}, attempts: 5,
			sleeps: []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second},
		},
		{
			name: "custom backoff", msg: retryToolsList,
			opts: RetryOptions{Backoff: func(min, max time.Duration, n int, resp *http.Response) time.Duration {
				return time.Duration(n+1) * time.Millisecond
			}},
			script: []error{retryRefused, httpStatus(429, "Retry-After", "9")}, attempts: 3,
			sleeps: []time.Duration{time.Millisecond, 2 * time.Millisecond},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			h := &retryHarness{script: tt.script}
			err := h.handler(tt.opts).Handle(t.Context(), tt.msg)
			is.Equal(h.attempts, tt.attempts) // attempts
			is.Equal(h.sleeps, tt.sleeps)     // sleeps
			switch want := tt.wantErr.(type) {
			case nil:
				is.NoErr(err)
			case *frame.StatusError:
				var st *frame.StatusError
				is.True(errors.As(err, &st)) // a status error
				is.Equal(st.Code, want.Code)
			default:
				is.True(errors.Is(err, want)) // the last error is returned
			}
		})
	}
}

// A server never reached is not tried again: its refusals come back at
// once (the host hears that nothing is there), while any answer, a status
// or a connection that carried the request, shows it was there: after
// that, through any stage sharing the Reached, a refusal is retried again
// (the server went away and may come back).
func TestRetryNotBeforeTheServerWasReached(t *testing.T) {
	for _, tt := range []struct {
		name  string
		first error // what shows the server was there
	}{
		{"an answer", nil},
		{"a status", httpStatus(404)},
		{"a connection that broke after the request left", retryBrokeMid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var reached Reached
			h := &retryHarness{script: []error{retryRefused, retryRefused}}
			err := h.handler(RetryOptions{Reached: &reached}).Handle(t.Context(), retryToolsList)
			is.True(errors.Is(err, retryRefused)) // refused, and not tried again
			is.Equal(h.attempts, 1)
			is.Equal(len(h.sleeps), 0)
			is.True(!reached.Reached())

			// Another stage that reaches the same server sees it answer.
			other := &retryHarness{script: []error{tt.first}}
			_ = other.handler(RetryOptions{Reached: &reached}).Handle(t.Context(), retryToolsCall)
			is.True(reached.Reached())

			// Now a refusal is a server gone away: retried.
			h = &retryHarness{script: []error{retryRefused}}
			is.NoErr(h.handler(RetryOptions{Reached: &reached}).Handle(t.Context(), retryToolsList))
			is.Equal(h.attempts, 2)
			is.Equal(h.sleeps, []time.Duration{time.Second})
		})
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	is := is.New(t)
	// retryablehttp reads HTTP-dates against the real clock.
	at := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	h := &retryHarness{script: []error{httpStatus(429, "Retry-After", at)}}
	is.NoErr(h.handler(RetryOptions{}).Handle(t.Context(), retryToolsCall))
	is.Equal(h.attempts, 2)
	is.Equal(len(h.sleeps), 1)
	is.True(h.sleeps[0] > 27*time.Second && h.sleeps[0] <= 30*time.Second) // about the date's distance
}

func TestRetryStopsWhenContextEnds(t *testing.T) {
	t.Run("during the sleep", func(t *testing.T) {
		is := is.New(t)
		ctx, cancel := context.WithCancel(t.Context())
		h := &retryHarness{script: []error{retryRefused, retryRefused}}
		sleep := func(ctx context.Context, d time.Duration) error {
			cancel()
			return ctx.Err()
		}
		err := h.handler(RetryOptions{Sleep: sleep}).Handle(ctx, retryToolsList)
		is.True(errors.Is(err, retryRefused)) // the failure that led to the sleep
		is.Equal(h.attempts, 1)
	})
	t.Run("before deciding", func(t *testing.T) {
		is := is.New(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		h := &retryHarness{script: []error{retryRefused}}
		err := h.handler(RetryOptions{}).Handle(ctx, retryToolsList)
		is.True(errors.Is(err, retryRefused))
		is.Equal(h.attempts, 1)
		is.Equal(len(h.sleeps), 0)
	})
}

func TestRetryPassesClientBound(t *testing.T) {
	is := is.New(t)
	client := &recorder{}
	d := Retry(RetryOptions{})(Duplex{ToServer: Discard(), ToClient: client})
	is.NoErr(d.ToClient.Handle(t.Context(), retryToolsList))
	is.Equal(client.lines(), []string{retryToolsList.String()})
}

func TestRetryDefaultSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		h := &retryHarness{script: []error{httpStatus(429, "Retry-After", "5")}}
		start := time.Now()
		d := Retry(RetryOptions{})(Duplex{ToServer: h, ToClient: Discard()})
		is.NoErr(d.ToServer.Handle(t.Context(), retryToolsList))
		is.Equal(time.Since(start), 5*time.Second) // the real timer waited Retry-After

		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			time.Sleep(time.Second)
			cancel()
		}()
		start = time.Now()
		is.True(errors.Is(frame.Sleep(ctx, time.Hour), context.Canceled))
		is.Equal(time.Since(start), time.Second) // cut short by ctx
	})
}

func TestReplaySafeMethod(t *testing.T) {
	is := is.New(t)
	for _, m := range []string{
		"initialize", "ping", "server/discover", "tools/list", "prompts/list", "prompts/get",
		"resources/list", "resources/templates/list", "resources/read", "resources/subscribe",
		"resources/unsubscribe", "completion/complete", "logging/setLevel",
	} {
		is.True(ReplaySafeMethod(m)) // replay-safe
	}
	for _, m := range []string{"tools/call", "sampling/createMessage", "elicitation/create", "notifications/initialized", "", "Tools/List"} {
		is.True(!ReplaySafeMethod(m)) // not replay-safe
	}
}
