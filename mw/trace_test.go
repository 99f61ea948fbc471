package mw

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

const (
	testTraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	testTraceID     = "4bf92f3577b34da6a3ce929d0e0e4736"
)

// spanRecorder is a SpanExporter keeping what it is given.
type spanRecorder struct {
	mu    sync.Mutex
	spans []frame.Span
}

func (r *spanRecorder) ExportSpan(s frame.Span) {
	r.mu.Lock()
	r.spans = append(r.spans, s)
	r.mu.Unlock()
}

func (r *spanRecorder) all() []frame.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]frame.Span(nil), r.spans...)
}

// exchangeKeeper is a Handler standing for what serve puts behind the
// stages: it records each message and the exchange its context carries,
// on which the test answers.
type exchangeKeeper struct {
	recorder
	mu sync.Mutex
	x  Exchange
}

func (k *exchangeKeeper) Handle(ctx context.Context, m frame.Message) error {
	k.mu.Lock()
	k.x = ExchangeOf(ctx)
	k.mu.Unlock()
	return k.recorder.Handle(ctx, m)
}

func (k *exchangeKeeper) exchange() Exchange {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.x
}

// stepClock returns a clock that advances a second at each reading.
func stepClock() func() time.Time {
	var mu sync.Mutex
	t := time.Unix(1700000000, 0)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

func withHeaders(t *testing.T, raw string, kv ...string) frame.Message {
	t.Helper()
	m, err := frame.Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return m.WithHeaders(h)
}

// TestTraceContextCarriesHeaderIntoMeta: without an exporter, serve's
// stage copies a valid traceparent header (and tracestate) into a
// message's _meta when it has none, every other byte kept; a message's
// own traceparent is kept; invalid headers are ignored.
func TestTraceContextCarriesHeaderIntoMeta(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		hdr  []string
		want string
	}{
		{"into _meta",
			`{"jsonrpc":"2.0", "id":1,"method":"tools/call","params":{"name":"x","arguments":{"n":1.50}}}`,
			[]string{"Traceparent", testTraceParent},
			`{"jsonrpc":"2.0", "id":1,"method":"tools/call","params":{"name":"x","arguments":{"n":1.50},"_meta":{"traceparent":"` + testTraceParent + `"}}}`},
		{"beside other _meta keys, with tracestate",
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":7}}}`,
			[]string{"Traceparent", testTraceParent, "Tracestate", "rojo=00f067aa0ba902b7", "Tracestate", "congo=t61"},
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":7,"traceparent":"` + testTraceParent + `","tracestate":"rojo=00f067aa0ba902b7,congo=t61"}}}`},
		{"a tracestate with a quote, escaped",
			`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			[]string{"Traceparent", testTraceParent, "Tracestate", `a=x"y\z`},
			`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"traceparent":"` + testTraceParent + `","tracestate":"a=x\"y\\z"}}}`},
		{"a notification",
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
			[]string{"Traceparent", testTraceParent},
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"_meta":{"traceparent":"` + testTraceParent + `"}}}`},
		{"the message's own kept",
			`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}`,
			[]string{"Traceparent", testTraceParent, "Tracestate", "rojo=1"},
			`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}`},
		{"an invalid traceparent of its own kept too",
			`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"traceparent":"junk"}}}`,
			[]string{"Traceparent", testTraceParent},
			`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"traceparent":"junk"}}}`},
		{"an invalid header ignored",
			`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			[]string{"Traceparent", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"},
			`{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{"uppercase ignored",
			`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			[]string{"Traceparent", strings.ToUpper(testTraceParent)},
			`{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{"two traceparent fields ignored",
			`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			[]string{"Traceparent", testTraceParent, "Traceparent", testTraceParent},
			`{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{"an invalid tracestate ignored, the traceparent carried",
			`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			[]string{"Traceparent", testTraceParent, "Tracestate", "Bad Key=1"},
			`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"traceparent":"` + testTraceParent + `"}}}`},
		{"params an array: untouched",
			`{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}`,
			[]string{"Traceparent", testTraceParent},
			`{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}`},
		{"no header: untouched",
			`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			nil,
			`{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{"a response: untouched",
			`{"jsonrpc":"2.0","id":"s1","result":{}}`,
			[]string{"Traceparent", testTraceParent},
			`{"jsonrpc":"2.0","id":"s1","result":{}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			child := &recorder{}
			h := TraceContext(TraceOptions{})(Duplex{ToServer: child, ToClient: Discard()}).ToServer
			is.NoErr(h.Handle(context.Background(), withHeaders(t, c.in, c.hdr...)))
			got := child.all()
			is.Equal(len(got), 1)
			is.Equal(got[0].String(), c.want)
			if len(c.hdr) > 0 {
				is.Equal(got[0].Header().Get("Traceparent"), c.hdr[1]) // the side channel kept
			}
		})
	}
}

// TestTraceContextSpan: with an exporter, the child's traceparent names
// serve's span, in the caller's trace; the span, exported once the
// answer is written, has the caller's span as parent and the outcome.
func TestTraceContextSpan(t *testing.T) {
	is := is.New(t)
	spans := &spanRecorder{}
	child := &exchangeKeeper{}
	h := TraceContext(TraceOptions{Exporter: spans, Era: "session", Now: stepClock()})(Duplex{ToServer: child, ToClient: Discard()}).ToServer
	x := newPOST(false)
	ctx := WithExchange(context.Background(), x)
	is.NoErr(h.Handle(ctx, withHeaders(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`, "Traceparent", testTraceParent, "Tracestate", "rojo=1")))
	sent := child.all()[0]
	tp, ok := frame.ParseTraceParent(sent.Get("params._meta.traceparent").Str)
	is.True(ok)
	is.Equal(tp.TraceIDString(), testTraceID) // the caller's trace
	caller, _ := frame.ParseTraceParent(testTraceParent)
	is.True(tp.SpanID != caller.SpanID) // serve's own span
	is.True(tp.Sampled())
	is.Equal(sent.Get("params._meta.tracestate").Str, "rojo=1")
	is.Equal(len(spans.all()), 0) // not before the answer is written

	is.NoErr(child.exchange().Send(ctx, frame.ErrorResponse("7", -32602, "no such tool"), ""))
	child.exchange().End()
	x.lines()
	x.finish()
	got := spans.all()
	is.Equal(len(got), 1)
	s := got[0]
	is.Equal(s.TraceParent, tp)
	is.Equal(s.Parent, caller.SpanID)
	is.Equal(s.Kind, frame.SpanServer)
	is.Equal(s.Name, "tools/call")
	is.Equal(s.TraceState, "rojo=1")
	is.Equal(s.End.Sub(s.Start), time.Second)
	is.Equal(s.Attrs, []string{"mcp.method.name", "tools/call", "mcp_stdio.era", "session", "mcp_stdio.outcome", "error", "error.type", "error"})
	is.True(s.Error)

	// A request refused inside: its span at once, with the status.
	refuse := HandlerFunc(func(context.Context, frame.Message) error {
		return Refuse(http.StatusNotFound, "8", -32001, "session not found")
	})
	h = TraceContext(TraceOptions{Exporter: spans, Now: stepClock()})(Duplex{ToServer: refuse, ToClient: Discard()}).ToServer
	err := h.Handle(WithExchange(context.Background(), newPOST(false)), withHeaders(t, `{"jsonrpc":"2.0","id":8,"method":"ping"}`))
	var st *frame.StatusError
	is.True(errors.As(err, &st))
	got = spans.all()
	is.Equal(len(got), 2)
	is.Equal(got[1].Parent, [8]byte{}) // a new trace
	is.Equal(got[1].Message, "HTTP 404")
	is.Equal(got[1].Attrs, []string{"mcp.method.name", "ping", "mcp_stdio.outcome", "refused", "http.response.status_code", "404", "error.type", "refused"})

	// An unsampled caller: the flag carried on, no span exported.
	child2 := &recorder{}
	h = TraceContext(TraceOptions{Exporter: spans})(Duplex{ToServer: child2, ToClient: Discard()}).ToServer
	is.NoErr(h.Handle(context.Background(), withHeaders(t, `{"jsonrpc":"2.0","id":9,"method":"ping"}`, "Traceparent", strings.TrimSuffix(testTraceParent, "01")+"00")))
	tp, _ = frame.ParseTraceParent(child2.all()[0].Get("params._meta.traceparent").Str)
	is.True(!tp.Sampled())
	is.Equal(len(spans.all()), 2)
}

func TestRatioSampler(t *testing.T) {
	is := is.New(t)
	sampled, _ := frame.ParseTraceParent(testTraceParent)
	unsampled := sampled
	unsampled.Flags = 0
	low := [16]byte{8: 0x00, 15: 1}
	high := [16]byte{8: 0xff}
	is.True(RatioSampler(1, true)(frame.TraceParent{}, false, high))
	is.True(!RatioSampler(1, true)(unsampled, true, low))
	is.True(RatioSampler(0, true)(sampled, true, high))
	is.True(!RatioSampler(0, false)(sampled, true, low))
	is.True(RatioSampler(0.5, false)(frame.TraceParent{}, false, low))
	is.True(!RatioSampler(0.5, false)(frame.TraceParent{}, false, high))
}

// TestTraceHeaders: the relay's stage sends a host's _meta.traceparent
// as the traceparent header, body untouched; invalid ones are not sent;
// with an exporter the header names the relay's client span.
func TestTraceHeaders(t *testing.T) {
	is := is.New(t)
	in := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"traceparent":"` + testTraceParent + `","tracestate":"rojo=1"}}}`
	srv := &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		return []frame.Message{frame.ErrorResponse(m.ID(), -32602, "bad")}, nil
	}}
	toServer, client := pipeline(srv, TraceHeaders(TraceOptions{}))
	is.NoErr(toServer.Handle(context.Background(), withHeaders(t, in)))
	sent := srv.sent.all()[0]
	is.Equal(sent.String(), in)
	is.Equal(sent.Header().Get("Traceparent"), testTraceParent)
	is.Equal(sent.Header().Get("Tracestate"), "rojo=1")
	is.Equal(len(client.all()), 1)

	bad := strings.Replace(in, testTraceParent, "ff"+testTraceParent[2:], 1)
	bad = strings.Replace(bad, "rojo=1", "rojo=1,rojo=2", 1)
	is.NoErr(toServer.Handle(context.Background(), withHeaders(t, bad)))
	sent = srv.sent.all()[1]
	is.Equal(sent.Header().Get("Traceparent"), "")
	is.Equal(sent.Header().Get("Tracestate"), "")

	spans := &spanRecorder{}
	toServer, _ = pipeline(srv, TraceHeaders(TraceOptions{Exporter: spans, Now: stepClock()}))
	is.NoErr(toServer.Handle(context.Background(), withHeaders(t, in)))
	sent = srv.sent.all()[2]
	is.Equal(sent.String(), in) // the body is the host's
	tp, ok := frame.ParseTraceParent(sent.Header().Get("Traceparent"))
	is.True(ok)
	is.Equal(tp.TraceIDString(), testTraceID)
	caller, _ := frame.ParseTraceParent(testTraceParent)
	got := spans.all()
	is.Equal(len(got), 1)
	is.Equal(got[0].TraceParent, tp) // the header names the relay's span
	is.Equal(got[0].Parent, caller.SpanID)
	is.Equal(got[0].Kind, frame.SpanClient)
	is.True(got[0].Error) // the server answered with an error

	// A host that names no trace: the relay's span starts one.
	is.NoErr(toServer.Handle(context.Background(), withHeaders(t, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)))
	tp, ok = frame.ParseTraceParent(srv.sent.all()[3].Header().Get("Traceparent"))
	is.True(ok)
	got = spans.all()
	is.Equal(got[1].TraceParent, tp)
	is.Equal(got[1].Parent, [8]byte{})
}

// TestAccessLog: one JSON record per request, after its answer, with a
// hash of the session id (never the id) and the trace id.
func TestAccessLog(t *testing.T) {
	is := is.New(t)
	buf := &transporttest.SyncBuffer{}
	log := slog.New(slog.NewJSONHandler(buf, nil))
	child := &exchangeKeeper{}
	h := Chain(
		AccessLog(AccessLogOptions{Logger: log, Level: slog.LevelInfo, Era: "session", Now: stepClock()}),
		TraceContext(TraceOptions{}),
	)(Duplex{ToServer: child, ToClient: Discard()}).ToServer
	const sid = "pod-1.SECRETSESSIONIDSECRETSESSI"
	x := newPOST(false)
	ctx := WithExchange(context.Background(), x)
	is.NoErr(h.Handle(ctx, withHeaders(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Mcp-Session-Id", sid, "Traceparent", testTraceParent)))
	is.Equal(buf.String(), "") // not before the answer
	is.NoErr(child.exchange().SendLast(ctx, frame.ResultResponse("1", []byte(`{"tools":[]}`)).WithHeader("Mcp-Session-Id", sid), ""))
	x.lines()
	x.finish()
	is.NoErr(h.Handle(ctx, withHeaders(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Session-Id", sid))) // no record
	line := buf.String()
	is.True(!strings.Contains(line, "SECRET"))
	var rec map[string]any
	is.NoErr(json.Unmarshal([]byte(line), &rec))
	is.Equal(rec["msg"], "request")
	is.Equal(rec["level"], "INFO")
	is.Equal(rec["method"], "tools/list")
	is.Equal(rec["era"], "session")
	is.Equal(rec["outcome"], "ok")
	is.Equal(rec["duration"], float64(time.Second))
	is.Equal(rec["session"], SessionHash(sid))
	is.Equal(rec["trace_id"], testTraceID)

	// Below the logger's level: nothing logged, nothing wrapped.
	h = AccessLog(AccessLogOptions{Logger: log, Level: slog.LevelDebug})(Duplex{ToServer: child, ToClient: Discard()}).ToServer
	is.NoErr(h.Handle(context.Background(), withHeaders(t, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)))
	is.Equal(buf.String(), line)
}
