package mw

import (
	"context"
	"sync"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// MetricMethod is a request's method as metrics name it: one of a fixed
// list of MCP methods, or [MethodOther], so that a label made from it
// takes a bounded set of values whatever clients send.
type MetricMethod uint8

// The methods metrics tell apart; any other is MethodOther.
const (
	MethodOther MetricMethod = iota
	MethodInitialize
	MethodPing
	MethodToolsList
	MethodToolsCall
	MethodResourcesList
	MethodResourcesTemplatesList
	MethodResourcesRead
	MethodResourcesSubscribe
	MethodResourcesUnsubscribe
	MethodPromptsList
	MethodPromptsGet
	MethodCompletionComplete
	MethodLoggingSetLevel
	MethodServerDiscover
	MethodSubscriptionsListen
	// NumMetricMethods is the number of MetricMethod values, for arrays
	// indexed by them.
	NumMetricMethods
)

// MetricMethodOf returns the MetricMethod of a method name.
func MetricMethodOf(method string) MetricMethod {
	switch method {
	case "initialize":
		return MethodInitialize
	case "ping":
		return MethodPing
	case "tools/list":
		return MethodToolsList
	case "tools/call":
		return MethodToolsCall
	case "resources/list":
		return MethodResourcesList
	case "resources/templates/list":
		return MethodResourcesTemplatesList
	case "resources/read":
		return MethodResourcesRead
	case "resources/subscribe":
		return MethodResourcesSubscribe
	case "resources/unsubscribe":
		return MethodResourcesUnsubscribe
	case "prompts/list":
		return MethodPromptsList
	case "prompts/get":
		return MethodPromptsGet
	case "completion/complete":
		return MethodCompletionComplete
	case "logging/setLevel":
		return MethodLoggingSetLevel
	case "server/discover":
		return MethodServerDiscover
	case "subscriptions/listen":
		return MethodSubscriptionsListen
	}
	return MethodOther
}

// String returns the method's name, or "other".
func (m MetricMethod) String() string {
	switch m {
	case MethodInitialize:
		return "initialize"
	case MethodPing:
		return "ping"
	case MethodToolsList:
		return "tools/list"
	case MethodToolsCall:
		return "tools/call"
	case MethodResourcesList:
		return "resources/list"
	case MethodResourcesTemplatesList:
		return "resources/templates/list"
	case MethodResourcesRead:
		return "resources/read"
	case MethodResourcesSubscribe:
		return "resources/subscribe"
	case MethodResourcesUnsubscribe:
		return "resources/unsubscribe"
	case MethodPromptsList:
		return "prompts/list"
	case MethodPromptsGet:
		return "prompts/get"
	case MethodCompletionComplete:
		return "completion/complete"
	case MethodLoggingSetLevel:
		return "logging/setLevel"
	case MethodServerDiscover:
		return "server/discover"
	case MethodSubscriptionsListen:
		return "subscriptions/listen"
	}
	return "other"
}

// MetricOutcome is how a request ended, as [CountRequests] sees it; its
// String is the outcome spans and access records name (OutcomeOK, …).
type MetricOutcome uint8

// The outcomes of a request.
const (
	// MetricOK: a JSON-RPC result was sent to its client.
	MetricOK MetricOutcome = iota
	// MetricError: a JSON-RPC error response was sent to its client.
	MetricError
	// MetricRefused: a stage refused its HTTP request with an error
	// status ([Refuse]).
	MetricRefused
	// MetricFailed: it could not be handed on (the transport answered
	// 502).
	MetricFailed
	// MetricCancelled: its exchange ended with no answer written (the
	// client cancelled it or went away, the stream was cut).
	MetricCancelled
	// NumMetricOutcomes is the number of MetricOutcome values, for arrays
	// indexed by them.
	NumMetricOutcomes
)

// String returns OutcomeOK, OutcomeError, OutcomeRefused, OutcomeFailed
// or OutcomeCancelled.
func (o MetricOutcome) String() string {
	switch o {
	case MetricOK:
		return OutcomeOK
	case MetricError:
		return OutcomeError
	case MetricRefused:
		return OutcomeRefused
	case MetricFailed:
		return OutcomeFailed
	}
	return OutcomeCancelled
}

// RequestMetrics receives what [CountRequests] measures. Its methods are
// called concurrently, from the goroutines handling requests and sending
// answers, and must not block.
type RequestMetrics interface {
	// Request is told of each request once its outcome is known, with
	// the time from its arrival to its answer being sent (or to its
	// refusal, or the end of its exchange).
	Request(method MetricMethod, outcome MetricOutcome, took time.Duration)
	// Bytes is told of message bytes that came in (a request body) or
	// went out (each message sent on an exchange, event framing and
	// HTTP headers not counted).
	Bytes(in, out int)
}

// CountOptions configures [CountRequests].
type CountOptions struct {
	// Metrics receives the counts; required.
	Metrics RequestMetrics
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// CountRequests returns the stage that counts and times requests: every
// message it is handed server-bound with an [Exchange] in its context
// (serve's), each request in it (a batch's one by one) by method and
// [MetricOutcome], and the message bytes that come in and go out on the
// exchange. It wraps the exchange to see the answers, so it goes first in
// a chain whose answers are sent on the exchange (serve's eras; see the
// package documentation); it changes no message. Messages without an exchange pass uncounted.
func CountRequests(o CountOptions) Middleware {
	if o.Now == nil {
		o.Now = time.Now
	}
	return func(next Duplex) Duplex {
		return Duplex{ToServer: HandlerFunc(func(ctx context.Context, m frame.Message) error {
			x := ExchangeOf(ctx)
			if x == nil {
				return next.ToServer.Handle(ctx, m)
			}
			o.Metrics.Bytes(len(m.Bytes()), 0)
			cx := &countedExchange{Exchange: x, o: &o, start: o.Now()}
			cx.track(m)
			if err := next.ToServer.Handle(WithExchange(ctx, cx), m); err != nil {
				outcome := MetricFailed
				if _, status := outcomeOf(err); status != 0 {
					outcome = MetricRefused
				}
				cx.finish(nil, outcome)
				return err
			}
			x.OnDone(cx.done)
			return nil
		}), ToClient: next.ToClient}
	}
}

// countedRequest is a request of a countedExchange, waiting for its
// outcome.
type countedRequest struct {
	id      frame.ID
	method  MetricMethod
	sent    bool // its answer was sent, with outcome, took
	outcome MetricOutcome
	took    time.Duration
}

// countedExchange is an exchange whose requests and bytes are counted.
type countedExchange struct {
	Exchange
	o     *CountOptions
	start time.Time

	mu   sync.Mutex
	buf  [1]countedRequest // holds a single message's request
	reqs []countedRequest  // the requests: a batch's, or buf's
	over bool
}

// track records the requests m carries.
func (cx *countedExchange) track(m frame.Message) {
	switch m.Kind() {
	case frame.Request:
		cx.buf[0] = countedRequest{id: m.ID(), method: MetricMethodOf(m.Method())}
		cx.reqs = cx.buf[:]
	case frame.Batch:
		for el := range m.Elements() {
			if el.Kind() == frame.Request {
				cx.reqs = append(cx.reqs, countedRequest{id: el.ID(), method: MetricMethodOf(el.Method())})
			}
		}
	}
}

func (cx *countedExchange) Send(ctx context.Context, m frame.Message, eventID string) error {
	err := cx.Exchange.Send(ctx, m, eventID)
	cx.sent(m, err)
	return err
}

func (cx *countedExchange) SendLast(ctx context.Context, m frame.Message, eventID string) error {
	err := cx.Exchange.SendLast(ctx, m, eventID)
	cx.sent(m, err)
	return err
}

// sent counts a message sent (err nil) on the exchange, and the outcome
// of the request it answers.
func (cx *countedExchange) sent(m frame.Message, err error) {
	if err != nil {
		return
	}
	cx.o.Metrics.Bytes(0, len(m.Bytes()))
	k := m.Kind()
	if k != frame.Result && k != frame.Error {
		return
	}
	cx.mu.Lock()
	defer cx.mu.Unlock()
	if cx.over {
		return
	}
	for i := range cx.reqs {
		r := &cx.reqs[i]
		if r.sent || r.id != m.ID() {
			continue
		}
		r.sent, r.outcome, r.took = true, MetricOK, cx.o.Now().Sub(cx.start)
		if k == frame.Error {
			r.outcome = MetricError
		}
		return
	}
}

// done counts the outcomes once the exchange is over: a request whose
// answer was queued and never written is cancelled.
func (cx *countedExchange) done(unsent []frame.Message) {
	cx.finish(unsent, MetricCancelled)
}

// finish reports every request, once: those answered with their outcome
// (unless their answer is among unsent), the others with rest.
func (cx *countedExchange) finish(unsent []frame.Message, rest MetricOutcome) {
	cx.mu.Lock()
	if cx.over {
		cx.mu.Unlock()
		return
	}
	cx.over = true
	reqs := cx.reqs
	cx.mu.Unlock()
	var now time.Duration
	for _, r := range reqs {
		if !r.sent || answeredIn(unsent, r.id) {
			if now == 0 {
				now = cx.o.Now().Sub(cx.start)
			}
			r.outcome, r.took = rest, now
		}
		cx.o.Metrics.Request(r.method, r.outcome, r.took)
	}
}
