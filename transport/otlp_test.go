package transport_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport"
)

// otlpReceiver is a loopback OTLP/HTTP collector that decodes what it
// receives with the official generated types: TracesData, whose wire
// form is ExportTraceServiceRequest's (its package would bring gRPC's
// gateway into the tests).
type otlpReceiver struct {
	mu       sync.Mutex
	requests []*tracepb.TracesData
	headers  []http.Header
	status   []int // statuses to answer with, in turn; then 200
	got      chan struct{}
}

func newOTLPReceiver(t *testing.T) (*otlpReceiver, string) {
	r := &otlpReceiver{got: make(chan struct{}, 16)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.status) > 0 {
			st := r.status[0]
			r.status = r.status[1:]
			w.WriteHeader(st)
			return
		}
		var m tracepb.TracesData
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if err := proto.Unmarshal(body, &m); err != nil {
			t.Errorf("the collector cannot decode the request: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.requests = append(r.requests, &m)
		r.headers = append(r.headers, req.Header.Clone())
		w.Header().Set("Content-Type", "application/x-protobuf")
		r.got <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	return r, srv.URL + "/v1/traces"
}

func (r *otlpReceiver) spans() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, req := range r.requests {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				out = append(out, ss.Spans...)
			}
		}
	}
	return out
}

func testSpan(i byte) frame.Span {
	tp, _ := frame.ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	s := frame.Span{
		TraceParent: tp,
		TraceState:  "rojo=1",
		Name:        "tools/call",
		Kind:        frame.SpanServer,
		Start:       time.Unix(1700000000, 5),
		End:         time.Unix(1700000001, 7),
		Attrs:       []string{"mcp.method.name", "tools/call", "mcp.era", "session"},
	}
	s.Parent = s.SpanID
	s.SpanID[7] = i
	return s
}

// TestOTLPExporterDecodesWithOfficialTypes sends spans through a loopback
// collector that decodes them with the generated OTLP types: every field
// the gateway sets arrives as set.
func TestOTLPExporterDecodesWithOfficialTypes(t *testing.T) {
	is := is.New(t)
	rcv, url := newOTLPReceiver(t)
	h := http.Header{}
	h.Set("Authorization", "Bearer collector-token")
	e := transport.NewOTLPExporter(transport.OTLPConfig{
		URL:          url,
		Header:       h,
		Resource:     []string{"service.name", "mcp-stdio", "deployment.environment", "test"},
		ScopeName:    "mcp-stdio",
		ScopeVersion: "v1",
		BatchSize:    2,
		Interval:     time.Hour, // only a full batch, or the shutdown, sends
	})
	failed := testSpan(2)
	failed.Error, failed.Message = true, "HTTP 404"
	e.ExportSpan(testSpan(1))
	e.ExportSpan(failed) // a full batch: sent at once
	<-rcv.got
	e.ExportSpan(testSpan(3))
	is.NoErr(e.Shutdown(context.Background())) // the rest, at shutdown
	is.Equal(e.Sent(), uint64(3))
	is.Equal(e.Dropped(), uint64(0))
	e.ExportSpan(testSpan(4)) // after the shutdown: dropped
	is.Equal(e.Dropped(), uint64(1))

	rcv.mu.Lock()
	is.Equal(len(rcv.requests), 2)
	is.Equal(rcv.headers[0].Get("Authorization"), "Bearer collector-token")
	rs := rcv.requests[0].ResourceSpans[0]
	rcv.mu.Unlock()
	attrs := map[string]string{}
	for _, kv := range rs.Resource.Attributes {
		attrs[kv.Key] = kv.Value.GetStringValue()
	}
	is.Equal(attrs, map[string]string{"service.name": "mcp-stdio", "deployment.environment": "test"})
	is.Equal(rs.ScopeSpans[0].Scope.Name, "mcp-stdio")
	is.Equal(rs.ScopeSpans[0].Scope.Version, "v1")

	spans := rcv.spans()
	is.Equal(len(spans), 3)
	want := testSpan(1)
	s := spans[0]
	is.Equal(s.TraceId, want.TraceID[:])
	is.Equal(s.SpanId, want.SpanID[:])
	is.Equal(s.ParentSpanId, want.Parent[:])
	is.Equal(s.TraceState, "rojo=1")
	is.Equal(s.Name, "tools/call")
	is.Equal(s.Kind, tracepb.Span_SPAN_KIND_SERVER)
	is.Equal(s.StartTimeUnixNano, uint64(want.Start.UnixNano()))
	is.Equal(s.EndTimeUnixNano, uint64(want.End.UnixNano()))
	is.Equal(len(s.Attributes), 2)
	is.Equal(s.Attributes[0].Key, "mcp.method.name")
	is.Equal(s.Attributes[0].Value.GetStringValue(), "tools/call")
	is.Equal(s.Status.Code, tracepb.Status_STATUS_CODE_OK)
	is.Equal(s.Flags, uint32(0x301)) // sampled; the parent is remote
	is.Equal(spans[1].Status.Code, tracepb.Status_STATUS_CODE_ERROR)
	is.Equal(spans[1].Status.Message, "HTTP 404")
}

// TestOTLPExporterRetriesOnce: a 503 is tried again once; two in a row
// drop the batch, counted.
func TestOTLPExporterRetriesOnce(t *testing.T) {
	is := is.New(t)
	rcv, url := newOTLPReceiver(t)
	rcv.status = []int{http.StatusServiceUnavailable}
	e := transport.NewOTLPExporter(transport.OTLPConfig{URL: url, BatchSize: 1, Interval: time.Hour})
	e.ExportSpan(testSpan(1))
	<-rcv.got
	is.Equal(len(rcv.spans()), 1)

	rcv.mu.Lock()
	rcv.status = []int{http.StatusServiceUnavailable, http.StatusServiceUnavailable, http.StatusBadRequest}
	rcv.mu.Unlock()
	e.ExportSpan(testSpan(2))         // 503, 503: dropped
	e.ExportSpan(testSpan(3))         // 400: not retried, dropped
	is.NoErr(e.Shutdown(t.Context())) // waits for both
	is.Equal(e.Sent(), uint64(1))
	is.Equal(e.Dropped(), uint64(2))
}

// TestOTLPExporterQueueBounded: spans beyond the queue are dropped, never
// held.
func TestOTLPExporterQueueBounded(t *testing.T) {
	is := is.New(t)
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer srv.Close()
	defer close(block)
	e := transport.NewOTLPExporter(transport.OTLPConfig{URL: srv.URL, QueueSize: 4, BatchSize: 4, Interval: time.Hour})
	for i := range 10 {
		e.ExportSpan(testSpan(byte(i)))
	}
	// At most 4 queued, and at most 4 taken by the POST that hangs: 2 to
	// 6 dropped now, whatever the goroutine's timing.
	d := e.Dropped()
	is.True(d >= 2 && d <= 6)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	is.Equal(e.Shutdown(ctx), context.Canceled) // the hanging POST is abandoned
	is.Equal(e.Sent(), uint64(0))
	is.Equal(e.Dropped(), uint64(10))
}
