package mw

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// ChildAnswersOptions configures [NewChildAnswers].
type ChildAnswersOptions struct {
	// Roots is what the gateway answers the child's roots/list with: a
	// raw JSON array of Root objects ({"uri":"file:///…"}); nil means
	// none, [].
	Roots []byte
	// StartupGrace is how long after the gateway's handshake with the
	// child (see [ChildAnswers.Started]) the child's first roots/list is
	// still taken for the one it asks as its connection starts; 0 means
	// DefaultChildStartupGrace.
	StartupGrace time.Duration
	// Now reads the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives one line the first time each method is answered
	// here, and a debug line for every other; nil discards.
	Logger *slog.Logger
}

// DefaultChildStartupGrace is ChildAnswersOptions.StartupGrace's default:
// a second, where @modelcontextprotocol/server-everything asks for its
// roots 350 ms after its handshake.
const DefaultChildStartupGrace = time.Second

// ChildAnswers answers, in the gateway's own name, the requests of a child
// that many clients share (serve's pooled child of the session era) when
// no client can be given them: those it sends while the gateway performs
// its handshake, and those [ParkChildRequests] cannot say which call
// caused (see ParkOptions.Shared). Roots belong to the connection in the
// session era, and the child's connection is the gateway's: roots/list
// gets the roots configured for the child (ChildAnswersOptions.Roots).
// Sampling and elicitation ask a person or a model on behalf of a
// request: with no request to ask for, they get an error saying no client
// can answer them. ping gets {}; anything else -32601.
//
// One ChildAnswers serves one child: it remembers whether the child has
// asked roots/list before (see [ChildAnswers.FirstRoots]) and which
// methods it has logged. It is safe for concurrent use.
type ChildAnswers struct {
	roots []byte
	grace time.Duration
	now   func() time.Time
	log   *slog.Logger

	mu         sync.Mutex
	started    time.Time // the end of the gateway's handshake; zero before
	askedRoots bool
	logged     map[string]bool
}

// NewChildAnswers returns the answers of one child.
func NewChildAnswers(o ChildAnswersOptions) *ChildAnswers {
	roots := o.Roots
	if len(roots) == 0 {
		roots = []byte("[]")
	}
	a := &ChildAnswers{roots: roots, grace: o.StartupGrace, now: o.Now, log: loggerOrDiscard(o.Logger), logged: make(map[string]bool)}
	if a.grace <= 0 {
		a.grace = DefaultChildStartupGrace
	}
	if a.now == nil {
		a.now = time.Now
	}
	return a
}

// Started records that the gateway's handshake with the child is over:
// the child's start-up lasts StartupGrace more.
func (a *ChildAnswers) Started() {
	a.mu.Lock()
	a.started = a.now()
	a.mu.Unlock()
}

// FirstRoots reports whether a roots/list the child sends now is the one
// it asks as its connection starts — its first, during the handshake or
// within StartupGrace of its end — and records that the child has asked.
// A session-era server asks for its roots when its connection starts (on
// notifications/initialized, or from a timer set then:
// @modelcontextprotocol/server-everything waits 350 ms) and keeps them
// for the connection, which, for a child many clients share, is every
// client's: that roots/list is answered by the gateway, whatever call is
// in flight when it comes. A first roots/list later than that comes from
// what a call does, and is given to a call like any other request.
func (a *ChildAnswers) FirstRoots() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	first := !a.askedRoots
	a.askedRoots = true
	return first && (a.started.IsZero() || a.now().Sub(a.started) < a.grace)
}

// Answer returns the gateway's own answer to the child's request m, which
// no client can be given; why says why, for the log and the error (a
// clause: "it came while no call was in flight"). The first time a
// method is answered so it is logged — roots/list at Info, sampling and
// elicitation at Warn with what to do —, later times at Debug.
func (a *ChildAnswers) Answer(m frame.Message, why string) frame.Message {
	method := m.Method()
	var out frame.Message
	switch method {
	case mcp.MethodPing:
		return frame.ResultResponse(m.ID(), []byte("{}"))
	case mcp.MethodRootsList:
		a.mu.Lock()
		a.askedRoots = true
		a.mu.Unlock()
		out = frame.ResultResponse(m.ID(), append(append([]byte(`{"roots":`), a.roots...), '}'))
	case mcp.MethodCreateMessage, mcp.MethodElicit:
		out = frame.ErrorResponse(m.ID(), frame.CodeInternalError, "no client can answer "+method+": "+why)
	default:
		return frame.ErrorResponse(m.ID(), frame.CodeMethodNotFound, "method not found: "+method)
	}
	a.mu.Lock()
	first := !a.logged[method]
	a.logged[method] = true
	a.mu.Unlock()
	switch {
	case !first:
		a.log.Debug("answered a request of the server itself", "method", method, "why", why)
	case method == mcp.MethodRootsList:
		a.log.Info("the server's roots/list was answered with the roots configured for it (--root; none by default), not a client's: "+why, "roots", string(a.roots))
	default:
		a.log.Warn("the server's "+method+" was refused: no client can answer it: "+why+
			". A server many clients share gets a client's answer only during a call, while that call is the only one in flight", "method", method)
	}
	return out
}

// Handshake returns a handler for the child's messages during the
// gateway's handshake with it: the child's requests are answered by
// Answer ("it came while the gateway was starting the server") on child,
// its server-bound handler; everything else goes to next.
func (a *ChildAnswers) Handshake(next, child Handler) Handler {
	return HandlerFunc(func(ctx context.Context, m frame.Message) error {
		if m.Kind() != frame.Request {
			return next.Handle(ctx, m)
		}
		return child.Handle(ctx, a.Answer(m, "it came while the gateway was starting the server, before any call"))
	})
}
