package mw

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// records returns the JSON records written to buf.
func records(t *testing.T, buf *transporttest.SyncBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(buf.String()) {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		out = append(out, r)
	}
	return out
}

// TestRelayAccessLog: one record per request of the host, when its
// answer passes toward the host or its Handle fails: ok, error, failed
// (with the HTTP status), cancelled; the era of the connection, a hash of
// the session id (never the id), the host's trace id.
func TestRelayAccessLog(t *testing.T) {
	is := is.New(t)
	buf := &transporttest.SyncBuffer{}
	log := slog.New(slog.NewJSONHandler(buf, nil))
	const sid = "SECRETSESSIONIDSECRETSESSI"
	s := &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		switch m.Method() {
		case "tools/list":
			return []frame.Message{frame.ResultResponse(m.ID(), []byte(`{"tools":[]}`))}, nil
		case "tools/call":
			return []frame.Message{frame.ErrorResponse(m.ID(), -32602, "no such tool")}, nil
		case "resources/list":
			return nil, &frame.StatusError{Code: 502}
		case "notifications/initialized":
			return nil, nil
		}
		return nil, frame.ErrCancelled
	}}
	h, client := pipeline(s, RelayAccessLog(RelayAccessLogOptions{
		Logger: log, Level: slog.LevelInfo, SessionID: func() string { return sid }, Now: stepClock(),
	}))
	ctx := WithConn(context.Background(), NewConn(EraSession))
	is.NoErr(h.Handle(ctx, withHeaders(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"traceparent":"`+testTraceParent+`"}}}`)))
	is.NoErr(h.Handle(ctx, withHeaders(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}`)))
	is.True(h.Handle(ctx, withHeaders(t, `{"jsonrpc":"2.0","id":3,"method":"resources/list"}`)) != nil)
	is.True(errors.Is(h.Handle(ctx, withHeaders(t, `{"jsonrpc":"2.0","id":4,"method":"ping"}`)), frame.ErrCancelled))
	is.NoErr(h.Handle(ctx, withHeaders(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))) // no record
	is.Equal(len(client.all()), 2)                                                                    // the answers passed

	is.True(!strings.Contains(buf.String(), "SECRET"))
	recs := records(t, buf)
	is.Equal(len(recs), 4)
	want := []struct{ method, outcome string }{
		{"tools/list", OutcomeOK}, {"tools/call", OutcomeError}, {"resources/list", OutcomeFailed}, {"ping", OutcomeCancelled},
	}
	for i, w := range want {
		r := recs[i]
		is.Equal(r["msg"], "request")
		is.Equal(r["level"], "INFO")
		is.Equal(r["method"], w.method)
		is.Equal(r["outcome"], w.outcome)
		is.Equal(r["era"], "session")
		is.Equal(r["session"], SessionHash(sid))
		is.Equal(r["duration"], float64(time.Second))
	}
	is.Equal(recs[0]["trace_id"], testTraceID)
	is.Equal(recs[1]["trace_id"], nil) // the host named no trace, and no span was recorded
	is.Equal(recs[2]["status"], float64(502))
}

// TestRelayAccessLogTraceOfSpan: without a trace from the host, the
// record names the trace of the span TraceHeaders recorded, the one the
// server is told of.
func TestRelayAccessLogTraceOfSpan(t *testing.T) {
	is := is.New(t)
	buf := &transporttest.SyncBuffer{}
	s := &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		return []frame.Message{frame.ResultResponse(m.ID(), []byte(`{}`))}, nil
	}}
	h, _ := pipeline(s,
		RelayAccessLog(RelayAccessLogOptions{Logger: slog.New(slog.NewJSONHandler(buf, nil))}),
		TraceHeaders(TraceOptions{Exporter: &spanRecorder{}}),
	)
	is.NoErr(h.Handle(context.Background(), withHeaders(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)))
	sent, ok := frame.ParseTraceParent(s.sent.all()[0].Header().Get(frame.HeaderTraceParent))
	is.True(ok)
	recs := records(t, buf)
	is.Equal(len(recs), 1)
	is.Equal(recs[0]["trace_id"], sent.TraceIDString())
	is.Equal(recs[0]["era"], nil) // no connection in the context
}

// blockingServer holds each request until the test releases it, so
// that several are in flight at once; the answers the test sends come
// in a context of their own, as on an HTTP+SSE stream.
type blockingServer struct {
	up      Late
	arrived chan frame.ID
	release chan struct{}
}

func (s *blockingServer) Handle(ctx context.Context, m frame.Message) error {
	if m.Kind() != frame.Request {
		return nil
	}
	s.arrived <- m.ID()
	<-s.release
	return nil
}

// TestRelayAccessLogRawIDs: 1 and "1" are two requests, each logged
// with its own answer; the answers arrive outside the requests'
// contexts. A second request under an id in flight is not logged, and
// its refusal is not taken for the first's answer.
func TestRelayAccessLogRawIDs(t *testing.T) {
	is := is.New(t)
	buf := &transporttest.SyncBuffer{}
	s := &blockingServer{arrived: make(chan frame.ID, 4), release: make(chan struct{})}
	d := Chain(
		RelayAccessLog(RelayAccessLogOptions{Logger: slog.New(slog.NewJSONHandler(buf, nil))}),
		AnswerOnce(AnswerOnceOptions{}),
	)(Duplex{ToServer: s, ToClient: Discard()})
	s.up.Bind(d.ToClient)

	var wg sync.WaitGroup
	send := func(raw string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = d.ToServer.Handle(context.Background(), withHeaders(t, raw))
		}()
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"number"}`)
	<-s.arrived
	send(`{"jsonrpc":"2.0","id":"1","method":"string"}`)
	<-s.arrived
	// A duplicate of 1: AnswerOnce refuses it at once, toward the host.
	is.NoErr(d.ToServer.Handle(context.Background(), withHeaders(t, `{"jsonrpc":"2.0","id":1,"method":"dup"}`)))
	is.Equal(buf.String(), "")

	is.NoErr(s.up.Handle(context.Background(), frame.ErrorResponse(`"1"`, -32603, "boom")))
	is.NoErr(s.up.Handle(context.Background(), frame.ResultResponse("1", []byte(`{}`))))
	close(s.release)
	wg.Wait()

	recs := records(t, buf)
	is.Equal(len(recs), 2)
	is.Equal(recs[0]["method"], "string")
	is.Equal(recs[0]["outcome"], OutcomeError)
	is.Equal(recs[1]["method"], "number")
	is.Equal(recs[1]["outcome"], OutcomeOK)
}

// TestRelayAccessLogBound: beyond MaxNotes requests in flight, a request
// passes unlogged and is counted; one warning says so; nothing is kept
// once the requests have ended.
func TestRelayAccessLogBound(t *testing.T) {
	is := is.New(t)
	buf := &transporttest.SyncBuffer{}
	s := &blockingServer{arrived: make(chan frame.ID, 4), release: make(chan struct{})}
	l := newRelayAccessLog(RelayAccessLogOptions{Logger: slog.New(slog.NewJSONHandler(buf, nil)), MaxNotes: 1}, Duplex{ToServer: s, ToClient: Discard()})
	s.up.Bind(HandlerFunc(l.toClient))

	var wg sync.WaitGroup
	for _, raw := range []string{`{"jsonrpc":"2.0","id":1,"method":"a"}`, `{"jsonrpc":"2.0","id":2,"method":"b"}`} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = l.toServer(context.Background(), withHeaders(t, raw))
		}()
		<-s.arrived
	}
	is.Equal(l.unlogged.Load(), uint64(1))
	is.NoErr(s.up.Handle(context.Background(), frame.ResultResponse("1", []byte(`{}`))))
	is.NoErr(s.up.Handle(context.Background(), frame.ResultResponse("2", []byte(`{}`))))
	close(s.release)
	wg.Wait()

	recs := records(t, buf)
	is.Equal(len(recs), 2)
	is.Equal(recs[0]["level"], "WARN")
	is.Equal(recs[1]["method"], "a")
	is.Equal(len(l.notes), 0)
	is.Equal(l.pending.Load(), int64(0))
}

// TestRelayAccessLogDisabledCostsNothing: below the logger's level,
// requests and answers pass without an allocation.
func TestRelayAccessLogDisabledCostsNothing(t *testing.T) {
	is := is.New(t)
	log := slog.New(slog.NewJSONHandler(&transporttest.SyncBuffer{}, nil)) // info
	d := RelayAccessLog(RelayAccessLogOptions{Logger: log, Level: slog.LevelDebug})(Duplex{
		ToServer: HandlerFunc(func(context.Context, frame.Message) error { return nil }),
		ToClient: HandlerFunc(func(context.Context, frame.Message) error { return nil }),
	})
	req := withHeaders(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	res := frame.ResultResponse("1", []byte(`{}`))
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		_ = d.ToServer.Handle(ctx, req)
		_ = d.ToClient.Handle(ctx, res)
	})
	is.Equal(allocs, float64(0))
}
