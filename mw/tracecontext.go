package mw

import (
	"context"
	"strconv"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// TraceContext returns serve's stage of W3C Trace Context: it carries the
// trace an HTTP request belongs to into the message the child reads, and,
// with an exporter, records a server span for each request.
//
// The trace a request continues is the one its params._meta.traceparent
// names (with _meta.tracestate), else the one its traceparent header
// (with tracestate) names. Values W3C Trace Context holds invalid — a
// malformed or all-zero traceparent, several traceparent fields, a
// tracestate that breaks the grammar — are ignored, never passed on.
//
// A request or notification without params._meta.traceparent gets one
// (and tracestate, when there is one and _meta has none): an sjson edit
// that keeps every other byte. Without an exporter it is the header's
// own; with one, a request's names the span serve records for it (a
// new trace's, when the request continues none), so the child's spans
// hang below it. A message that has _meta.traceparent is not touched;
// its span then continues that traceparent. A batch, a message whose
// params is not an object, and a GET or a DELETE pass untouched.
//
// The span (kind server, named by the method) starts when the request
// arrives and ends when its answer has been written ([Exchange.OnDone]),
// or when a stage inside refuses it. Its attributes are
// mcp.method.name, mcp_stdio.era (o.Era), mcp_stdio.outcome (see
// [OutcomeOK] and the others), http.response.status_code for a refusal
// and error.type for a failure. Only sampled spans (o.Sampler) are
// exported; the sampled flag travels on either way.
//
// In serve it sits in front of the sessions and of the pool, inside the
// era's checks (see the package documentation), so its edit reaches the
// child and its span covers each request the era takes.
func TraceContext(o TraceOptions) Middleware {
	o.defaults()
	return ServerBound(func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, m frame.Message) error {
			k := m.Kind()
			if k != frame.Request && k != frame.Notification {
				return next.Handle(ctx, m)
			}
			present, parent, hasParent, state := metaTrace(m)
			if !present {
				parent, hasParent, state = headerTrace(m)
			}
			sc, record := parent, false
			if o.Exporter != nil && k == frame.Request {
				sc, record = o.startSpan(parent, hasParent), true
			}
			if n := requestNoteOf(ctx); n != nil && sc.Valid() {
				n.mu.Lock()
				n.trace = sc
				n.mu.Unlock()
			}
			if !present && sc.Valid() {
				m = withMetaTrace(m, sc, state)
			}
			if !record {
				return next.Handle(ctx, m)
			}
			start := o.Now()
			method := m.Method()
			return serveRequest(ctx, m, next, func(e requestEnd) {
				if !sc.Sampled() {
					return
				}
				var parentID [8]byte
				if hasParent {
					parentID = parent.SpanID
				}
				o.Exporter.ExportSpan(requestSpan(sc, state, parentID, method, frame.SpanServer, start, o.Now(), o.Era, e))
			})
		})
	})
}

// withMetaTrace returns m with params._meta.traceparent set to tp, and
// tracestate to state unless it is empty or _meta has one; m itself when
// it cannot be edited (params is not an object).
func withMetaTrace(m frame.Message, tp frame.TraceParent, state string) frame.Message {
	if p := m.Params(); p.Exists() && !p.IsObject() {
		return m
	}
	if mt := m.Get("params._meta"); mt.Exists() && !mt.IsObject() {
		return m
	}
	out, err := m.Set("params._meta."+frame.MetaTraceParent, []byte(`"`+tp.String()+`"`))
	if err != nil {
		return m
	}
	if state != "" && !out.Get("params._meta."+frame.MetaTraceState).Exists() {
		if o, err := out.Set("params._meta."+frame.MetaTraceState, []byte(strconv.Quote(state))); err == nil {
			out = o
		}
	}
	return out
}
