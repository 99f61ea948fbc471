package mw

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// sharedRoots are the roots configured for the shared child in these
// tests.
const sharedRoots = `[{"uri":"file:///srv/data"}]`

// newSharedParkEnv is newParkEnv for a child many clients share: the
// stage's Shared answers give sharedRoots, and log to the env's log.
func newSharedParkEnv(t *testing.T) *parkEnv {
	return newParkEnv(t, func(o *ParkOptions) {
		o.Shared = NewChildAnswers(ChildAnswersOptions{Roots: []byte(sharedRoots), Logger: o.Logger})
	})
}

// The child's first roots/list asks for the roots of its connection, which
// all its clients share: the gateway answers it with the configured
// roots even while a call whose client declared roots is in flight, and
// the client sees nothing of it. A later one, with that call the only one
// in flight, is the call's.
func TestParkSharedFirstRootsAreTheConnections(t *testing.T) {
	is := is.New(t)
	e := newSharedParkEnv(t)
	e.must(parkCall("1", `{}`, parkAllCaps, ""))
	e.fromChild(parkRoots)
	is.Equal(e.child.sent.lines()[1:], []string{`{"jsonrpc":"2.0","id":9,"result":{"roots":` + sharedRoots + `}}`})
	is.Equal(len(e.client.all()), 0)
	is.Equal(strings.Count(e.log.String(), "level=INFO"), 1) // said once, with the roots given
	is.True(strings.Contains(e.log.String(), `first roots/list`))

	e.fromChild(strings.Replace(parkRoots, `"id":9`, `"id":19`, 1))
	is.Equal(e.clientLines(), []string{
		`{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","result":{"resultType":"input_required","inputRequests":{"input-1":{"method":"roots/list"}},"requestState":"…"}}`,
	})
}

// A request is a call's only while that call is the only one running on
// the child, whatever the other calls' clients declared; otherwise the
// gateway refuses sampling and elicitation with an error saying no client
// can answer, logged once, and answers roots/list with the configured
// roots.
func TestParkSharedNeedsTheOnlyCallInFlight(t *testing.T) {
	is := is.New(t)
	e := newSharedParkEnv(t)
	e.fromChild(parkRoots) // the first roots/list, out of the way

	// No call in flight.
	e.fromChild(parkSample)
	got := e.child.sent.all()[1]
	is.Equal(got.ID(), frame.ID("8"))
	is.Equal(got.Get("error.message").String(), "no client can answer sampling/createMessage: it came while no call was in flight on the server")

	// Two calls in flight: one declared elicitation, the other nothing.
	e.must(parkCall("1", `{}`, `{"elicitation":{}}`, ""))
	e.must(parkCall("2", `{}`, `{}`, ""))
	e.fromChild(parkElicit)
	e.fromChild(strings.Replace(parkElicit, `"id":7`, `"id":17`, 1))
	for _, m := range e.child.sent.all()[4:] {
		is.Equal(m.Get("error.code").Int(), int64(frame.CodeInternalError))
		is.Equal(m.Get("error.message").String(), "no client can answer elicitation/create: it came while 2 calls were running on the server, and nothing tells which one asked")
	}
	is.Equal(strings.Count(e.log.String(), "level=WARN"), 2) // once for sampling, once for elicitation
	e.fromChild(strings.Replace(parkRoots, `"id":9`, `"id":29`, 1))
	is.Equal(e.child.sent.lines()[6], `{"jsonrpc":"2.0","id":29,"result":{"roots":`+sharedRoots+`}}`)
	is.Equal(len(e.client.all()), 0)

	// Call 2 is answered: call 1 is the only one, and the question is its.
	e.fromChild(`{"jsonrpc":"2.0","id":"mcp-stdio/serve/2","result":{"content":[]}}`)
	e.fromChild(strings.Replace(parkElicit, `"id":7`, `"id":27`, 1))
	got2 := e.client.all()
	is.Equal(len(got2), 2)
	is.Equal(got2[1].ID(), frame.ID(`"mcp-stdio/serve/1"`))
	is.Equal(got2[1].Get("result.resultType").String(), "input_required")
}

// A parked call's question is with its client: beside a running call, a
// new question is the running call's. With none running, it is the only
// parked call's; with several parked, nobody's.
func TestParkSharedRunningCallsFirst(t *testing.T) {
	is := is.New(t)
	e := newSharedParkEnv(t)
	e.fromChild(parkRoots)
	e.must(parkCall("1", `{}`, parkAllCaps, ""))
	e.fromChild(parkElicit) // call 1 parks
	is.Equal(len(e.client.all()), 1)
	e.must(parkCall("2", `{}`, parkAllCaps, ""))
	e.fromChild(strings.Replace(parkElicit, `"id":7`, `"id":17`, 1))
	got := e.client.all()
	is.Equal(len(got), 2) // call 2's input_required
	is.Equal(got[1].ID(), frame.ID(`"mcp-stdio/serve/2"`))
	is.Equal(got[1].Get("result.resultType").String(), "input_required")

	// Both parked, none running: a third question is nobody's.
	e.fromChild(strings.Replace(parkElicit, `"id":7`, `"id":27`, 1))
	is.Equal(len(e.client.all()), 2)
	last := e.child.sent.all()[len(e.child.sent.all())-1]
	is.Equal(last.ID(), frame.ID("27"))
	is.Equal(last.Get("error.message").String(), "no client can answer elicitation/create: it came while 2 calls waited for their clients' input on the server, and nothing tells which one asked")
}

// The only call in flight whose client declared nothing gets what such a
// client would give: a declined elicitation, a sampling error, the
// configured roots.
func TestParkSharedUndeclared(t *testing.T) {
	is := is.New(t)
	e := newSharedParkEnv(t)
	e.fromChild(parkRoots)
	e.must(parkCall("1", `{}`, `{}`, ""))
	e.fromChild(parkElicit)
	e.fromChild(parkSample)
	e.fromChild(strings.Replace(parkRoots, `"id":9`, `"id":19`, 1))
	got := e.child.sent.lines()[2:]
	is.Equal(got[0], `{"jsonrpc":"2.0","id":7,"result":{"action":"decline"}}`)
	is.Equal(frame.MustParse(got[1]).Get("error.code").Int(), int64(-32600))
	is.Equal(got[2], `{"jsonrpc":"2.0","id":19,"result":{"roots":`+sharedRoots+`}}`)
	is.Equal(len(e.client.all()), 0)
}

// The first roots/list is the connection's only during the child's
// start-up: within StartupGrace of the handshake's end. One that comes
// later, from what a call does, is that call's when it is the only one
// running.
func TestParkSharedFirstRootsAfterStartUpIsTheCalls(t *testing.T) {
	is := is.New(t)
	now := time.Unix(1000, 0)
	e := newParkEnv(t, func(o *ParkOptions) {
		o.Shared = NewChildAnswers(ChildAnswersOptions{Roots: []byte(sharedRoots), Logger: o.Logger,
			StartupGrace: time.Second, Now: func() time.Time { return now }})
		o.Shared.Started()
	})
	now = now.Add(time.Second) // the start-up is over
	e.must(parkCall("1", `{}`, parkAllCaps, ""))
	e.fromChild(parkRoots)
	got := e.client.all()
	is.Equal(len(got), 1)
	is.Equal(got[0].Get("result.resultType").String(), "input_required")
	is.Equal(got[0].Get("result.inputRequests.input-1.method").String(), "roots/list")
	is.Equal(len(e.child.sent.all()), 1) // only the call: nothing answered in the gateway's name
}

func TestChildAnswersFirstRootsDuringStartUp(t *testing.T) {
	is := is.New(t)
	now := time.Unix(1000, 0)
	a := NewChildAnswers(ChildAnswersOptions{Now: func() time.Time { return now }})
	a.Started()
	now = now.Add(DefaultChildStartupGrace - time.Millisecond)
	is.True(a.FirstRoots())  // 350 ms after its handshake, as server-everything asks: the connection's
	is.True(!a.FirstRoots()) // only the first
}

// During the gateway's handshake every request of the child is answered
// by the gateway (ping {}, roots/list the configured roots, its first);
// the rest goes on to the handshake.
func TestChildAnswersHandshake(t *testing.T) {
	is := is.New(t)
	a := NewChildAnswers(ChildAnswersOptions{})
	child, next := &recorder{}, &recorder{}
	h := a.Handshake(next, child)
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"roots/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tasks/list"}`,
		`{"jsonrpc":"2.0","id":0,"result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`,
	} {
		is.NoErr(h.Handle(context.Background(), frame.MustParse(m)))
	}
	is.Equal(child.lines(), []string{
		`{"jsonrpc":"2.0","id":1,"result":{"roots":[]}}`,
		`{"jsonrpc":"2.0","id":2,"result":{}}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"no client can answer elicitation/create: it came while the gateway was starting the server, before any call"}}`,
		`{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"method not found: tasks/list"}}`,
	})
	is.Equal(len(next.all()), 2)
	is.True(!a.FirstRoots()) // the handshake's was the first
}
