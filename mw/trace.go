package mw

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// SpanExporter receives the spans the trace stages finish
// ([TraceContext], [TraceHeaders]); transport.OTLPExporter is one.
// ExportSpan must not block.
type SpanExporter interface {
	ExportSpan(s frame.Span)
}

// Sampler decides whether a new span is recorded, given the context it
// continues (hasParent false for a new trace) and its trace id. The
// decision travels on as the sampled flag.
type Sampler func(parent frame.TraceParent, hasParent bool, traceID [16]byte) bool

// RatioSampler returns the sampler of OpenTelemetry's traceidratio:
// a trace is recorded when its id falls in the first ratio of the id
// space (0 records nothing, 1 everything). With parentBased, a span that
// has a parent follows the parent's sampled flag instead
// (parentbased_traceidratio; with ratio 1, parentbased_always_on, the
// default).
func RatioSampler(ratio float64, parentBased bool) Sampler {
	ratio = min(max(ratio, 0), 1)
	bound := uint64(ratio * (1 << 63))
	return func(parent frame.TraceParent, hasParent bool, traceID [16]byte) bool {
		if parentBased && hasParent {
			return parent.Sampled()
		}
		if ratio >= 1 {
			return true
		}
		return binary.BigEndian.Uint64(traceID[8:])>>1 < bound
	}
}

// TraceOptions configures [TraceContext] and [TraceHeaders].
type TraceOptions struct {
	// Exporter receives the spans; nil records none, and the stages only
	// carry the trace context on.
	Exporter SpanExporter
	// Sampler picks the spans recorded; nil is RatioSampler(1, true).
	Sampler Sampler
	// Era is the value of the span's mcp_stdio.era attribute: serve's
	// "session", "http+sse" or the stateless era's first revision
	// (2026-07-28); "" leaves it out.
	Era string
	// Now is the clock of the spans' times; nil means time.Now.
	Now func() time.Time
}

func (o *TraceOptions) defaults() {
	if o.Sampler == nil {
		o.Sampler = RatioSampler(1, true)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Outcomes of a request, as spans ([TraceContext]) and access records
// ([AccessLog]) report them.
const (
	OutcomeOK        = "ok"        // answered with a result
	OutcomeError     = "error"     // answered with a JSON-RPC error
	OutcomeRefused   = "refused"   // refused with an HTTP status
	OutcomeCancelled = "cancelled" // the client cancelled it or went away
	OutcomeAccepted  = "accepted"  // taken; its answer travels on another stream (HTTP+SSE)
	OutcomeFailed    = "failed"    // it could not be delivered
)

// outcomeOf returns the outcome of a request whose Handle returned err
// (not nil), and the HTTP status of a refusal.
func outcomeOf(err error) (string, int) {
	var st *frame.StatusError
	switch {
	case errors.As(err, &st):
		return OutcomeRefused, st.Code
	case errors.Is(err, frame.ErrCancelled), errors.Is(err, context.Canceled):
		return OutcomeCancelled, 0
	}
	return OutcomeFailed, 0
}

// requestNote is what the stages around one request learn about it, for
// [AccessLog] and [RelayAccessLog]: TraceContext (serve) and TraceHeaders
// (the relay) write the trace id there.
type requestNote struct {
	mu    sync.Mutex
	trace frame.TraceParent
}

type requestNoteKey struct{}

func withRequestNote(ctx context.Context, n *requestNote) context.Context {
	return context.WithValue(ctx, requestNoteKey{}, n)
}

func requestNoteOf(ctx context.Context) *requestNote {
	n, _ := ctx.Value(requestNoteKey{}).(*requestNote)
	return n
}

// answerWatch wraps a request's Exchange to see the answer sent on it:
// whether the response to its id was a result or an error, and the
// session id the answer's header names.
type answerWatch struct {
	Exchange
	id frame.ID

	mu      sync.Mutex
	outcome string
	session string
}

func (w *answerWatch) see(m frame.Message) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.session == "" {
		w.session = m.Header().Get(frame.HeaderSessionID)
	}
	if w.outcome != "" || m.ID() != w.id {
		return
	}
	switch m.Kind() {
	case frame.Result:
		w.outcome = OutcomeOK
	case frame.Error:
		w.outcome = OutcomeError
	}
}

func (w *answerWatch) Send(ctx context.Context, m frame.Message, eventID string) error {
	w.see(m)
	return w.Exchange.Send(ctx, m, eventID)
}

func (w *answerWatch) SendLast(ctx context.Context, m frame.Message, eventID string) error {
	w.see(m)
	return w.Exchange.SendLast(ctx, m, eventID)
}

// requestEnd says how a request of serve ended.
type requestEnd struct {
	outcome string
	status  int    // the HTTP status of a refusal, else 0
	session string // the session id the request or its answer named
}

// serveRequest hands the request m to next and calls done once, when
// it has ended: when next refuses it or fails, or when its exchange is
// over (its answer written, or its client gone). Without an exchange in
// ctx, it ends when next returns.
func serveRequest(ctx context.Context, m frame.Message, next Handler, done func(requestEnd)) error {
	var once sync.Once
	finish := func(e requestEnd) { once.Do(func() { done(e) }) }
	session := m.Header().Get(frame.HeaderSessionID)
	x := ExchangeOf(ctx)
	if x == nil {
		err := next.Handle(ctx, m)
		e := requestEnd{outcome: OutcomeOK, session: session}
		if err != nil {
			e.outcome, e.status = outcomeOf(err)
		}
		finish(e)
		return err
	}
	w := &answerWatch{Exchange: x, id: m.ID()}
	err := next.Handle(WithExchange(ctx, w), m)
	if err != nil {
		e := requestEnd{session: session}
		e.outcome, e.status = outcomeOf(err)
		finish(e)
		return err
	}
	x.OnDone(func([]frame.Message) {
		w.mu.Lock()
		e := requestEnd{outcome: w.outcome, session: session}
		if e.session == "" {
			e.session = w.session
		}
		w.mu.Unlock()
		if e.outcome == "" {
			e.outcome = OutcomeAccepted
			if ctx.Err() != nil {
				e.outcome = OutcomeCancelled
			}
		}
		finish(e)
	})
	return nil
}

// newSpanID returns a random span id, never zero.
func newSpanID() (id [8]byte) {
	for id == ([8]byte{}) {
		_, _ = rand.Read(id[:])
	}
	return id
}

// newTraceID returns a random trace id, never zero.
func newTraceID() (id [16]byte) {
	for id == ([16]byte{}) {
		_, _ = rand.Read(id[:])
	}
	return id
}

// startSpan returns the context of a new span continuing parent (a new
// trace when hasParent is false), sampled or not as o's sampler says.
func (o *TraceOptions) startSpan(parent frame.TraceParent, hasParent bool) frame.TraceParent {
	sc := frame.TraceParent{TraceID: parent.TraceID, SpanID: newSpanID(), Flags: parent.Flags &^ 1}
	if !hasParent {
		sc.TraceID, sc.Flags = newTraceID(), 0
	}
	if o.Sampler(parent, hasParent, sc.TraceID) {
		sc.Flags |= 1
	}
	return sc
}

// metaTrace reads the trace context a message carries in params._meta:
// whether it has a traceparent at all (valid or not), the valid one and
// a valid tracestate.
func metaTrace(m frame.Message) (present bool, tp frame.TraceParent, valid bool, state string) {
	v := m.Get("params._meta." + frame.MetaTraceParent)
	if !v.Exists() {
		return false, tp, false, ""
	}
	if v.Type == gjson.String {
		tp, valid = frame.ParseTraceParent(v.Str)
	}
	if s := m.Get("params._meta." + frame.MetaTraceState); valid && s.Type == gjson.String && frame.ValidTraceState(s.Str) {
		state = s.Str
	}
	return true, tp, valid, state
}

// headerTrace reads the trace context of a message's side channel: one
// valid traceparent field, and the tracestate fields, combined, when
// valid.
func headerTrace(m frame.Message) (tp frame.TraceParent, valid bool, state string) {
	h := m.Header()
	tps := h.Values(frame.HeaderTraceParent)
	if len(tps) != 1 {
		return tp, false, "" // none, or several: W3C says to ignore them
	}
	if tp, valid = frame.ParseTraceParent(tps[0]); !valid {
		return tp, false, ""
	}
	if s := strings.Join(h.Values(frame.HeaderTraceState), ","); s != "" && frame.ValidTraceState(s) {
		state = s
	}
	return tp, true, state
}

// requestSpan is the span of one request, server side (serve's
// TraceContext) or client side (the relay's TraceHeaders): its context sc
// and state, its parent's span id (zero for a root), named by method, from
// start to end, with the attributes and error of how it ended.
func requestSpan(sc frame.TraceParent, state string, parent [8]byte, method string, kind frame.SpanKind, start, end time.Time, era string, e requestEnd) frame.Span {
	span := frame.Span{
		TraceParent: sc,
		Parent:      parent,
		TraceState:  state,
		Name:        method,
		Kind:        kind,
		Start:       start,
		End:         end,
		Attrs:       spanAttrs(method, era, e),
		Error:       failed(e.outcome),
	}
	if span.Error {
		span.Message = e.outcome
		if e.status != 0 {
			span.Message = "HTTP " + strconv.Itoa(e.status)
		}
	}
	return span
}

// spanAttrs returns a span's attributes.
func spanAttrs(method, era string, e requestEnd) []string {
	a := make([]string, 0, 10)
	a = append(a, "mcp.method.name", method)
	if era != "" {
		a = append(a, "mcp_stdio.era", era)
	}
	a = append(a, "mcp_stdio.outcome", e.outcome)
	if e.status != 0 {
		a = append(a, "http.response.status_code", strconv.Itoa(e.status))
	}
	if failed(e.outcome) {
		a = append(a, "error.type", e.outcome)
	}
	return a
}

// failed reports whether an outcome marks its span as an error.
func failed(outcome string) bool {
	return outcome == OutcomeError || outcome == OutcomeRefused || outcome == OutcomeFailed
}
