package mw

import (
	"context"
	"sync"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// TraceHeaders returns the relay's stage of W3C Trace Context: the trace
// a host names in a message's params._meta.traceparent (and tracestate)
// goes to the server as the traceparent (and tracestate) header of the
// HTTP request carrying it, through the message's side channel
// ([frame.Message.Header]), which the HTTP transport sends, as it sends
// [RoutingHeaders]'. The body is not touched. A traceparent or tracestate
// W3C Trace Context holds invalid is ignored, never sent.
//
// With an exporter, each request gets a client span (named by the
// method, kind client) continuing the host's traceparent, or starting a
// trace when there is none, and the header names that span, so the
// server's spans hang below it. It ends when the request's Handle
// returns — the answer has been handed to the client side — with the
// attributes of [TraceContext]'s spans: the outcome is error when the
// server answered with a JSON-RPC error. The trace of a request's first
// span is what [RelayAccessLog] names when the host named none.
//
// It sits just outside the relay's retry in both chains (see the package
// documentation): every attempt carries the same header.
func TraceHeaders(o TraceOptions) Middleware {
	o.defaults()
	return func(next Duplex) Duplex {
		t := &traceHeaders{o: o, next: next, answers: make(map[frame.ID]string)}
		return Duplex{ToServer: HandlerFunc(t.toServer), ToClient: HandlerFunc(t.toClient)}
	}
}

type traceHeaders struct {
	o    TraceOptions
	next Duplex

	mu      sync.Mutex
	answers map[frame.ID]string // requests with a span in flight → their answer's outcome
}

func (t *traceHeaders) toServer(ctx context.Context, m frame.Message) error {
	k := m.Kind()
	if k != frame.Request && k != frame.Notification {
		return t.next.ToServer.Handle(ctx, m)
	}
	_, parent, hasParent, state := metaTrace(m)
	if t.o.Exporter == nil || k != frame.Request {
		if hasParent {
			m = withTraceHeaders(m, parent, state)
		}
		return t.next.ToServer.Handle(ctx, m)
	}
	sc := t.o.startSpan(parent, hasParent)
	if n := requestNoteOf(ctx); n != nil {
		// For RelayAccessLog: the trace of the first span, when the host
		// named none.
		n.mu.Lock()
		if !n.trace.Valid() {
			n.trace = sc
		}
		n.mu.Unlock()
	}
	m = withTraceHeaders(m, sc, state)
	id := m.ID()
	t.mu.Lock()
	_, dup := t.answers[id]
	if !dup {
		t.answers[id] = ""
	}
	t.mu.Unlock()
	start := t.o.Now()
	err := t.next.ToServer.Handle(ctx, m)
	e := requestEnd{outcome: OutcomeOK}
	if !dup {
		t.mu.Lock()
		if a := t.answers[id]; a != "" {
			e.outcome = a
		}
		delete(t.answers, id)
		t.mu.Unlock()
	}
	if err != nil {
		e.outcome, e.status = outcomeOf(err)
	}
	if sc.Sampled() {
		var parentID [8]byte
		if hasParent {
			parentID = parent.SpanID
		}
		t.o.Exporter.ExportSpan(requestSpan(sc, state, parentID, m.Method(), frame.SpanClient, start, t.o.Now(), t.o.Era, e))
	}
	return err
}

// toClient notes whether the answer to a request with a span is an
// error.
func (t *traceHeaders) toClient(ctx context.Context, m frame.Message) error {
	if k := m.Kind(); k == frame.Result || k == frame.Error {
		t.mu.Lock()
		if a, ok := t.answers[m.ID()]; ok && a == "" {
			t.answers[m.ID()] = OutcomeOK
			if k == frame.Error {
				t.answers[m.ID()] = OutcomeError
			}
		}
		t.mu.Unlock()
	}
	return t.next.ToClient.Handle(ctx, m)
}

// withTraceHeaders returns m with traceparent (and tracestate, unless
// state is empty) in its side channel.
func withTraceHeaders(m frame.Message, tp frame.TraceParent, state string) frame.Message {
	m = m.WithHeader(frame.HeaderTraceParent, tp.String())
	if state != "" {
		m = m.WithHeader(frame.HeaderTraceState, state)
	}
	return m
}
