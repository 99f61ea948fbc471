package mw

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// recordedMetrics is a RequestMetrics that keeps what it is told.
type recordedMetrics struct {
	mu       sync.Mutex
	requests []string // "method outcome took"
	in, out  int
}

func (r *recordedMetrics) Request(method MetricMethod, outcome MetricOutcome, took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, fmt.Sprintf("%s %s %v", method, outcome, took))
}

func (r *recordedMetrics) Bytes(in, out int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.in += in
	r.out += out
}

func (r *recordedMetrics) got() ([]string, int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.requests), r.in, r.out
}

// countClock is a clock that moves by a second each time it is read.
func countClock() func() time.Time {
	var mu sync.Mutex
	t := time.Unix(0, 0)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

func TestCountRequests(t *testing.T) {
	tests := []struct {
		name string
		in   string
		// next answers the message on x (or refuses it).
		next   func(ctx context.Context, x Exchange, m frame.Message) error
		finish bool // the exchange is over when next returns
		want   []string
	}{
		{
			name: "a result",
			in:   `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
			next: func(ctx context.Context, x Exchange, m frame.Message) error {
				return x.SendLast(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"result":{}}`), "")
			},
			finish: true,
			want:   []string{"tools/call ok 1s"},
		},
		{
			name: "an error response, after a notification",
			in:   `{"jsonrpc":"2.0","id":"a","method":"resources/read","params":{}}`,
			next: func(ctx context.Context, x Exchange, m frame.Message) error {
				_ = x.Send(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`), "")
				return x.SendLast(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"no"}}`), "")
			},
			finish: true,
			want:   []string{"resources/read error 1s"},
		},
		{
			name: "refused",
			in:   `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			next: func(context.Context, Exchange, frame.Message) error {
				return Refuse(http.StatusNotFound, "1", frame.CodeInvalidRequest, "session not found")
			},
			want: []string{"tools/list refused 1s"},
		},
		{
			name: "a method outside the list, never answered",
			in:   `{"jsonrpc":"2.0","id":1,"method":"x/secret-name"}`,
			next: func(context.Context, Exchange, frame.Message) error {
				return nil
			},
			finish: true,
			want:   []string{"other cancelled 1s"},
		},
		{
			name: "a batch, one by one",
			in:   `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":2,"method":"prompts/get"}]`,
			next: func(ctx context.Context, x Exchange, m frame.Message) error {
				_ = x.Send(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":2,"result":{}}`), "")
				return x.SendLast(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"result":{}}`), "")
			},
			finish: true,
			want:   []string{"ping ok 2s", "prompts/get ok 1s"},
		},
		{
			name:   "a notification counts bytes only",
			in:     `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			next:   func(context.Context, Exchange, frame.Message) error { return nil },
			finish: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			rec := &recordedMetrics{}
			var sent int
			next := HandlerFunc(func(ctx context.Context, m frame.Message) error {
				x := ExchangeOf(ctx)
				err := tt.next(ctx, x, m)
				fx := x.(*countedExchange).Exchange.(*fakeExchange)
				for _, it := range fx.queue {
					sent += len(it.m.Bytes())
				}
				return err
			})
			h := CountRequests(CountOptions{Metrics: rec, Now: countClock()})(Duplex{ToServer: next, ToClient: Discard()}).ToServer
			x := newPOST(false)
			m := frame.MustParse(tt.in)
			_ = h.Handle(WithExchange(context.Background(), x), m)
			if tt.finish {
				x.lines()
				x.finish()
			}
			reqs, in, out := rec.got()
			slices.Sort(reqs)
			is.Equal(reqs, tt.want)
			is.Equal(in, len(m.Bytes()))
			is.Equal(out, sent)
		})
	}
}

// An answer queued but never written (the client went away) is
// cancelled.
func TestCountRequestsUnsentAnswer(t *testing.T) {
	is := is.New(t)
	rec := &recordedMetrics{}
	next := HandlerFunc(func(ctx context.Context, m frame.Message) error {
		return ExchangeOf(ctx).Send(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":7,"result":{}}`), "")
	})
	h := CountRequests(CountOptions{Metrics: rec, Now: countClock()})(Duplex{ToServer: next, ToClient: Discard()}).ToServer
	x := newPOST(true)
	is.NoErr(h.Handle(WithExchange(context.Background(), x), frame.MustParse(`{"jsonrpc":"2.0","id":7,"method":"tools/call"}`)))
	x.finish() // nothing taken: the answer is unsent
	reqs, _, _ := rec.got()
	is.Equal(reqs, []string{"tools/call cancelled 2s"})
}

// Without an exchange (the relay's chain) messages pass uncounted.
func TestCountRequestsWithoutAnExchange(t *testing.T) {
	is := is.New(t)
	rec := &recordedMetrics{}
	passed := 0
	next := HandlerFunc(func(context.Context, frame.Message) error { passed++; return nil })
	h := CountRequests(CountOptions{Metrics: rec})(Duplex{ToServer: next, ToClient: Discard()}).ToServer
	is.NoErr(h.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)))
	reqs, in, out := rec.got()
	is.Equal([]any{passed, len(reqs), in, out}, []any{1, 0, 0, 0})
}

func TestMetricMethodNamesRoundTrip(t *testing.T) {
	is := is.New(t)
	for m := range NumMetricMethods {
		is.Equal(MetricMethodOf(m.String()), m) // each name maps back
	}
	is.Equal(MetricMethodOf("tools/destroy"), MethodOther)
	for o := range NumMetricOutcomes {
		is.True(o.String() != "")
	}
}

// Counting a request allocates no label string: the method and outcome
// are small integers.
func BenchmarkCountRequests(b *testing.B) {
	rec := nopMetrics{}
	answer := frame.MustParse(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	next := HandlerFunc(func(ctx context.Context, m frame.Message) error {
		return ExchangeOf(ctx).SendLast(ctx, answer, "")
	})
	h := CountRequests(CountOptions{Metrics: rec})(Duplex{ToServer: next, ToClient: Discard()}).ToServer
	m := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
	b.ReportAllocs()
	for b.Loop() {
		x := &benchExchange{}
		_ = h.Handle(WithExchange(context.Background(), x), m)
	}
}

type nopMetrics struct{}

func (nopMetrics) Request(MetricMethod, MetricOutcome, time.Duration) {}
func (nopMetrics) Bytes(int, int)                                     {}
