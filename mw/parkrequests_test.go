package mw

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// parkAllCaps declares every kind of input a child may ask for.
const parkAllCaps = `{"elicitation":{},"sampling":{},"roots":{}}`

// parkEnv is ParkChildRequests between a recorder standing for the router
// and a fake child driven by the test, with a clock and timers it moves.
type parkEnv struct {
	t        *testing.T
	ctx      context.Context
	conn     *Conn
	toServer Handler
	child    *fakeServer // what reached the child; child.up is the stage's client-bound entry
	client   *recorder
	log      *transporttest.SyncBuffer
	now      time.Time
	timers   []*parkTimer
}

type parkTimer struct {
	d       time.Duration
	f       func()
	stopped bool
}

func newParkEnv(t *testing.T, edit ...func(*ParkOptions)) *parkEnv {
	e := &parkEnv{t: t, now: time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)}
	e.conn = NewConn(EraSession)
	e.conn.SetPrincipal("alice")
	e.ctx = WithConn(t.Context(), e.conn)
	log, buf := testLogger()
	e.log = buf
	o := ParkOptions{
		StateKey:  parkKey,
		ReplicaID: "replica-a",
		Now:       func() time.Time { return e.now },
		AfterFunc: func(d time.Duration, f func()) func() bool {
			tm := &parkTimer{d: d, f: f}
			e.timers = append(e.timers, tm)
			return func() bool {
				was := !tm.stopped
				tm.stopped = true
				return was
			}
		},
		Logger: log,
	}
	for _, f := range edit {
		f(&o)
	}
	e.child = &fakeServer{}
	e.toServer, e.client = pipeline(e.child, ParkChildRequests(o))
	return e
}

// send hands the stage a server-bound message.
func (e *parkEnv) send(m string) error {
	return e.toServer.Handle(e.ctx, frame.MustParse(m))
}

// must sends m and fails the test on an error.
func (e *parkEnv) must(m string) {
	e.t.Helper()
	if err := e.send(m); err != nil {
		e.t.Fatalf("send %s: %v", m, err)
	}
}

// fromChild hands the stage a message of the child.
func (e *parkEnv) fromChild(m string) {
	e.t.Helper()
	if err := e.child.up.Handle(e.ctx, frame.MustParse(m)); err != nil {
		e.t.Fatalf("from child %s: %v", m, err)
	}
}

// fire runs the live timers, as if their time had come.
func (e *parkEnv) fire() {
	for _, tm := range e.timers {
		if !tm.stopped {
			tm.stopped = true
			tm.f()
		}
	}
}

// lastState returns the requestState of the last message the client got.
func (e *parkEnv) lastState() string {
	e.t.Helper()
	got := e.client.all()
	if len(got) == 0 {
		e.t.Fatal("the client got nothing")
	}
	s := got[len(got)-1].Get("result.requestState").String()
	if s == "" {
		e.t.Fatalf("no requestState in %s", got[len(got)-1])
	}
	return s
}

// clientLines returns the client's lines with each requestState value
// replaced by "…", for comparing.
func (e *parkEnv) clientLines() []string {
	var out []string
	for _, m := range e.client.all() {
		if s := m.Get("result.requestState"); s.Exists() {
			m, _ = m.Set("result.requestState", []byte(`"…"`))
		}
		out = append(out, m.String())
	}
	return out
}

// parkCall is a 2026-07-28 tools/call under the minted id
// "mcp-stdio/serve/<n>" with arguments args, capabilities caps and more
// params (",…") after _meta.
func parkCall(n, args, caps, more string) string {
	return `{"jsonrpc":"2.0","id":"mcp-stdio/serve/` + n + `","method":"tools/call","params":{"name":"ask","arguments":` + args +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}` + more + `}}`
}

// parkRetry is parkCall with inputResponses and requestState.
func parkRetry(n, args, responses, state string) string {
	return parkCall(n, args, parkAllCaps, `,"inputResponses":`+responses+`,"requestState":"`+state+`"`)
}

const (
	parkElicit  = `{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}`
	parkSample  = `{"jsonrpc":"2.0","id":8,"method":"sampling/createMessage","params":{"messages":[],"maxTokens":10}}`
	parkRoots   = `{"jsonrpc":"2.0","id":9,"method":"roots/list"}`
	parkAccept  = `{"action":"accept","content":{"name":"Ada"}}`
	parkOutcome = `{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","result":{"content":[{"type":"text","text":"hi Ada"}]}}`
)

// refused checks that err is serve's 400 with -32602 whose message holds
// why.
func refused(t *testing.T, err error, why string) {
	t.Helper()
	var se *frame.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("want a refusal, got %v", err)
	}
	body := frame.MustParse(string(se.Body))
	if se.Code != 400 || body.Get("error.code").Int() != -32602 || !strings.Contains(body.Get("error.message").String(), why) {
		t.Fatalf("want 400 -32602 %q, got %d %s", why, se.Code, se.Body)
	}
}

func TestParkOneRound(t *testing.T) {
	is := is.New(t)
	e := newParkEnv(t)
	call := parkCall("1", `{"q":1}`, `{"elicitation":{}}`, "")
	e.must(call)
	is.Equal(e.child.sent.lines(), []string{call}) // the call reaches the child as it is

	e.fromChild(parkElicit)
	is.Equal(e.clientLines(), []string{
		`{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","result":{"resultType":"input_required","inputRequests":{"input-1":{"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}},"requestState":"…"}}`,
	})
	is.Equal(len(e.timers), 1)
	is.Equal(e.timers[0].d, DefaultStateTTL)

	e.must(parkRetry("2", `{"q":1}`, `{"input-1":`+parkAccept+`}`, e.lastState()))
	is.Equal(e.child.sent.lines()[1:], []string{`{"jsonrpc":"2.0","id":7,"result":` + parkAccept + `}`}) // the answer, not the call again
	is.True(e.timers[0].stopped)                                                                         // no longer waiting to be abandoned

	e.fromChild(parkOutcome)
	is.Equal(e.clientLines()[1:], []string{`{"jsonrpc":"2.0","id":"mcp-stdio/serve/2","result":{"content":[{"type":"text","text":"hi Ada"}]}}`})
	is.Equal(len(e.child.sent.all()), 2)
}

func TestParkTwoRounds(t *testing.T) {
	is := is.New(t)
	e := newParkEnv(t)
	e.must(parkCall("1", `{}`, parkAllCaps, ""))
	e.fromChild(parkElicit)
	e.must(parkRetry("2", `{}`, `{"input-1":`+parkAccept+`}`, e.lastState()))

	e.fromChild(parkSample)
	is.Equal(e.clientLines()[1:], []string{
		`{"jsonrpc":"2.0","id":"mcp-stdio/serve/2","result":{"resultType":"input_required","inputRequests":{"input-2":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":10}}},"requestState":"…"}}`,
	})
	sample := `{"role":"assistant","content":{"type":"text","text":"x"},"model":"m"}`
	e.must(parkRetry("3", `{}`, `{"input-2":`+sample+`}`, e.lastState()))
	is.Equal(e.child.sent.lines()[2:], []string{`{"jsonrpc":"2.0","id":8,"result":` + sample + `}`})

	e.fromChild(parkOutcome)
	is.Equal(e.client.all()[2].String(), `{"jsonrpc":"2.0","id":"mcp-stdio/serve/3","result":{"content":[{"type":"text","text":"hi Ada"}]}}`)
}

func TestParkReasksMissingInputResponses(t *testing.T) {
	is := is.New(t)
	e := newParkEnv(t)
	e.must(parkCall("1", `{}`, parkAllCaps, ""))
	e.fromChild(parkElicit)
	e.fromChild(parkRoots) // parked too, for the next round
	is.Equal(len(e.client.all()), 1)

	e.must(parkRetry("2", `{}`, `{}`, e.lastState())) // nothing answered
	is.Equal(e.clientLines()[1:], []string{
		`{"jsonrpc":"2.0","id":"mcp-stdio/serve/2","result":{"resultType":"input_required","inputRequests":{"input-1":{"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}},"input-2":{"method":"roots/list"}},"requestState":"…"}}`,
	})
	is.Equal(len(e.child.sent.all()), 1) // nothing for the child yet

	roots := `{"roots":[{"uri":"file:///w"}]}`
	e.must(parkRetry("3", `{}`, `{"input-2":`+roots+`}`, e.lastState())) // one answered
	is.Equal(e.child.sent.lines()[1:], []string{`{"jsonrpc":"2.0","id":9,"result":` + roots + `}`})
	is.Equal(e.clientLines()[2:], []string{
		`{"jsonrpc":"2.0","id":"mcp-stdio/serve/3","result":{"resultType":"input_required","inputRequests":{"input-1":{"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}},"requestState":"…"}}`,
	})

	e.must(parkRetry("4", `{}`, `{"input-1":`+parkAccept+`,"extra":{"x":1},"input-2":{"roots":[]}}`, e.lastState())) // extras ignored
	is.Equal(e.child.sent.lines()[2:], []string{`{"jsonrpc":"2.0","id":7,"result":` + parkAccept + `}`})
	e.fromChild(parkOutcome)
	is.Equal(e.client.all()[3].ID(), frame.ID(`"mcp-stdio/serve/4"`))
}

// parked returns an env with call 1 parked on an elicitation, and its
// requestState.
func parked(t *testing.T, edit ...func(*ParkOptions)) (*parkEnv, string) {
	e := newParkEnv(t, edit...)
	e.must(parkCall("1", `{"q":1,"r":[1,"é"]}`, parkAllCaps, ""))
	e.fromChild(parkElicit)
	return e, e.lastState()
}

// parkUntouched checks that the child got only the call, and the client
// only the input_required.
func parkUntouched(t *testing.T, e *parkEnv) {
	t.Helper()
	if n, m := len(e.child.sent.all()), len(e.client.all()); n != 1 || m != 1 {
		t.Fatalf("child got %d messages, client %d; want 1 and 1", n, m)
	}
}

func TestParkRefusesATamperedState(t *testing.T) {
	e, state := parked(t)
	b := []byte(state)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	refused(t, e.send(parkRetry("2", `{"q":1,"r":[1,"é"]}`, `{"input-1":`+parkAccept+`}`, string(b))), "failed authentication")
	refused(t, e.send(parkRetry("3", `{"q":1,"r":[1,"é"]}`, `{}`, "not-a-state!")), "malformed")
	refused(t, e.send(parkCall("4", `{"q":1,"r":[1,"é"]}`, parkAllCaps, `,"inputResponses":{},"requestState":42`)), "not a string")
	refused(t, e.send(parkCall("5", `{"q":1,"r":[1,"é"]}`, parkAllCaps, `,"inputResponses":{}`)), "without params.requestState")
	parkUntouched(t, e)

	// The genuine state still holds.
	e.must(parkRetry("6", `{"q":1,"r":[1,"é"]}`, `{"input-1":`+parkAccept+`}`, state))
	is.New(t).Equal(len(e.child.sent.all()), 2)
}

func TestParkRefusesAnExpiredState(t *testing.T) {
	e, state := parked(t)
	e.now = e.now.Add(DefaultStateTTL + time.Millisecond)
	refused(t, e.send(parkRetry("2", `{"q":1,"r":[1,"é"]}`, `{"input-1":`+parkAccept+`}`, state)), "expired")
	parkUntouched(t, e)
}

func TestParkRefusesAnotherPrincipal(t *testing.T) {
	e, state := parked(t)
	e.conn.SetPrincipal("mallory")
	refused(t, e.send(parkRetry("2", `{"q":1,"r":[1,"é"]}`, `{"input-1":`+parkAccept+`}`, state)), "another principal")
	parkUntouched(t, e)
}

func TestParkRefusesAnotherReplica(t *testing.T) {
	_, state := parked(t)
	other := newParkEnv(t, func(o *ParkOptions) { o.ReplicaID = "replica-b" }) // same key
	refused(t, other.send(parkRetry("2", `{"q":1,"r":[1,"é"]}`, `{"input-1":`+parkAccept+`}`, state)), "another replica")
	is.New(t).Equal(len(other.child.sent.all()), 0)
}

func TestParkRefusesAReplay(t *testing.T) {
	is := is.New(t)
	e, state := parked(t)
	retry := parkRetry("2", `{"q":1,"r":[1,"é"]}`, `{"input-1":`+parkAccept+`}`, state)
	e.must(retry)
	refused(t, e.send(strings.Replace(retry, "serve/2", "serve/3", 1)), "used already")
	is.Equal(len(e.child.sent.all()), 2) // one answer to the elicitation, no second call

	e.fromChild(parkOutcome) // the outcome still reaches the genuine retry
	is.Equal(e.client.all()[1].ID(), frame.ID(`"mcp-stdio/serve/2"`))
}

func TestParkBindsTheRequest(t *testing.T) {
	e, state := parked(t)
	answer := `{"input-1":` + parkAccept + `}`
	refused(t, e.send(parkRetry("2", `{"q":2,"r":[1,"é"]}`, answer, state)), "another request")
	refused(t, e.send(parkRetry("3", `{"q":1,"r":["é",1]}`, answer, state)), "another request")
	refused(t, e.send(strings.Replace(parkRetry("4", `{"q":1,"r":[1,"é"]}`, answer, state), `"name":"ask"`, `"name":"tell"`, 1)), "another request")
	parkUntouched(t, e)

	// The same call encoded again: members reordered, white space, escapes,
	// another spelling of the number.
	e.must(parkRetry("5", `{ "r" : [1.0e0, "\u00e9"], "q" : 10E-1 }`, answer, state))
	is.New(t).Equal(len(e.child.sent.all()), 2)
}

func TestParkRequestHashIgnoresMetaAndTreatsNoArgumentsAlike(t *testing.T) {
	is := is.New(t)
	h := func(s string) [32]byte { return requestHash(frame.MustParse(s)) }
	base := h(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`)
	is.Equal(base, h(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a","arguments":{},"_meta":{"progressToken":3}}}`))
	is.Equal(base, h(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":null,"name":"a","requestState":"x","inputResponses":{}}}`))
	is.True(base != h(`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"a"}}`))
	is.True(base != h(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":null}}}`))
	r := h(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a"}}`)
	is.Equal(r, h(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:\/\/\/a"}}`))
	is.True(r != h(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///b"}}`))
}

func TestCanonNumber(t *testing.T) {
	is := is.New(t)
	for raw, want := range map[string]string{
		"0": "0", "-0": "0", "0.000": "0", "0e5": "0",
		"1": "1e0", "1.0": "1e0", "10e-1": "1e0", "1E0": "1e0", "0.1e1": "1e0", "1e+0": "1e0",
		"100": "1e2", "-2.50": "-25e-1", "12345678901234567890123": "12345678901234567890123e0",
		"12345678901234567890124": "12345678901234567890124e0",
		"1e99999999999":           "1e99999999999",
	} {
		is.Equal(canonNumber(raw), want) // raw
	}
}

func TestParkAbandonsACallWithNoRetry(t *testing.T) {
	is := is.New(t)
	e, state := parked(t)
	e.fire()
	got := e.child.sent.lines()[1:]
	is.Equal(len(got), 2)
	// The cancel first, so that the child cannot carry on with the call on
	// the error, then the error for the parked elicitation.
	is.Equal(got[0], `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"mcp-stdio/serve/1","reason":"the client did not come back for the call"}}`)
	is.Equal(frame.MustParse(got[1]).ID(), frame.ID("7"))
	is.Equal(frame.MustParse(got[1]).Get("error.code").Int(), int64(-32603))

	refused(t, e.send(parkRetry("2", `{"q":1,"r":[1,"é"]}`, `{"input-1":`+parkAccept+`}`, state)), "abandoned")
	is.Equal(len(e.child.sent.all()), 3)
	e.fromChild(parkOutcome) // a late answer of the child is the router's to drop
	is.Equal(e.client.all()[1].String(), parkOutcome)
}

func TestParkForgetsEverythingWhenTheChildEnds(t *testing.T) {
	is := is.New(t)
	e, state := parked(t)
	// Another child of the same gateway (same key and replica), as the
	// pool starts after the first one died.
	next := newParkEnv(t)
	next.conn.SetPrincipal("alice")

	e.conn.Close(errors.New("child exited"))
	is.True(e.timers[0].stopped)
	answer := `{"input-1":` + parkAccept + `}`
	refused(t, e.send(parkRetry("2", `{"q":1,"r":[1,"é"]}`, answer, state)), "has ended")
	refused(t, next.send(parkRetry("2", `{"q":1,"r":[1,"é"]}`, answer, state)), "has ended")
	is.Equal(len(e.child.sent.all()), 1)
	is.Equal(len(next.child.sent.all()), 0)
}

func TestParkRefusesAmbiguousRequests(t *testing.T) {
	is := is.New(t)
	e := newParkEnv(t)
	e.must(parkCall("1", `{}`, `{"elicitation":{}}`, ""))
	e.must(parkCall("2", `{}`, `{"elicitation":{},"sampling":{}}`, ""))
	e.fromChild(parkElicit)
	e.fromChild(strings.Replace(parkElicit, `"id":7`, `"id":17`, 1))
	got := e.child.sent.all()[2:]
	is.Equal(len(got), 2)
	for _, m := range got {
		is.Equal(m.Get("error.code").Int(), int64(-32603))
		is.True(strings.Contains(m.Get("error.message").String(), "any of 2 calls"))
	}
	is.Equal(strings.Count(e.log.String(), "level=WARN"), 1) // one warning, saying what to do
	is.True(strings.Contains(e.log.String(), "one call that may ask for input at a time"))
	is.Equal(len(e.client.all()), 0)

	// Only one of them declared sampling: that one is asked.
	e.fromChild(parkSample)
	is.Equal(e.client.all()[0].ID(), frame.ID(`"mcp-stdio/serve/2"`))
}

// TestParkPrefersARunningCall: a call parked on its input_required
// waits for the client; its child asks nothing more for it, so the
// child's next question belongs to the call that is running, even when
// both clients declared the capability.
func TestParkPrefersARunningCall(t *testing.T) {
	is := is.New(t)
	e := newParkEnv(t)
	e.must(parkCall("1", `{}`, parkAllCaps, ""))
	e.fromChild(parkElicit) // call 1 parks
	e.must(parkCall("2", `{}`, parkAllCaps, ""))
	e.fromChild(strings.Replace(parkElicit, `"id":7`, `"id":17`, 1))
	got := e.client.all()
	is.Equal(len(got), 2)
	is.Equal(got[1].ID(), frame.ID(`"mcp-stdio/serve/2"`))
	is.Equal(got[1].Get("result.inputRequests.input-1.method").String(), "elicitation/create")
	is.Equal(len(e.child.sent.all()), 2) // the two calls; no error to the child
	is.True(!strings.Contains(e.log.String(), "level=WARN"))

	// With both parked, a question has no call to prefer.
	e.fromChild(strings.Replace(parkElicit, `"id":7`, `"id":27`, 1))
	last := e.child.sent.all()[2]
	is.Equal(last.Get("error.code").Int(), int64(-32603))
	is.True(strings.Contains(last.Get("error.message").String(), "any of 2 calls"))

	// A running call whose client did not declare elicitation: the
	// question is its, so it is declined, not given to a parked call.
	e.must(parkCall("3", `{}`, `{"sampling":{}}`, ""))
	e.fromChild(strings.Replace(parkElicit, `"id":7`, `"id":37`, 1))
	is.Equal(e.child.sent.lines()[4], `{"jsonrpc":"2.0","id":37,"result":{"action":"decline"}}`)
	e.fromChild(parkSample) // its own question is its
	is.Equal(e.client.all()[2].ID(), frame.ID(`"mcp-stdio/serve/3"`))
}

// TestParkGathersTheRequestsOfARound: with Gather, the requests the child
// sends together reach the client in one round when the gather timer
// fires; a request for the parked call after that waits for the next
// round.
func TestParkGathersTheRequestsOfARound(t *testing.T) {
	is := is.New(t)
	e := newParkEnv(t, func(o *ParkOptions) { o.Gather = 25 * time.Millisecond })
	e.must(parkCall("1", `{}`, parkAllCaps, ""))
	e.fromChild(parkElicit)
	e.fromChild(parkSample)
	e.fromChild(parkRoots)
	is.Equal(len(e.client.all()), 0) // gathering
	is.Equal(len(e.timers), 1)
	is.Equal(e.timers[0].d, 25*time.Millisecond)

	e.fire()
	is.Equal(e.clientLines(), []string{
		`{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","result":{"resultType":"input_required","inputRequests":{` +
			`"input-1":{"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}},` +
			`"input-2":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":10}},` +
			`"input-3":{"method":"roots/list"}},"requestState":"…"}}`,
	})
	is.Equal(len(e.timers), 2)
	is.Equal(e.timers[1].d, DefaultStateTTL) // parked now

	sample := `{"role":"assistant","content":{"type":"text","text":"x"},"model":"m"}`
	e.must(parkRetry("2", `{}`, `{"input-1":`+parkAccept+`,"input-2":`+sample+`,"input-3":{"roots":[]}}`, e.lastState()))
	is.Equal(e.child.sent.lines()[1:], []string{
		`{"jsonrpc":"2.0","id":7,"result":` + parkAccept + `}`,
		`{"jsonrpc":"2.0","id":8,"result":` + sample + `}`,
		`{"jsonrpc":"2.0","id":9,"result":{"roots":[]}}`,
	})
	e.fromChild(parkOutcome)
	is.Equal(e.client.all()[1].String(), `{"jsonrpc":"2.0","id":"mcp-stdio/serve/2","result":{"content":[{"type":"text","text":"hi Ada"}]}}`)
}

// TestParkGatherEndsWithTheCall: the call's outcome, its cancel or the
// child's end during a Gather stop the timer; the requests gathered for a
// call that is over get errors and the client no round.
func TestParkGatherEndsWithTheCall(t *testing.T) {
	gather := func(o *ParkOptions) { o.Gather = time.Second }
	t.Run("outcome", func(t *testing.T) {
		is := is.New(t)
		e := newParkEnv(t, gather)
		e.must(parkCall("1", `{}`, parkAllCaps, ""))
		e.fromChild(parkElicit)
		e.fromChild(parkOutcome)
		is.True(e.timers[0].stopped)
		is.Equal(e.client.lines(), []string{parkOutcome})
		got := e.child.sent.all()[1]
		is.Equal(got.ID(), frame.ID("7"))
		is.Equal(got.Get("error.code").Int(), int64(-32603))
	})
	t.Run("cancel", func(t *testing.T) {
		is := is.New(t)
		e := newParkEnv(t, gather)
		e.must(parkCall("1", `{}`, parkAllCaps, ""))
		e.fromChild(parkElicit)
		e.must(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"mcp-stdio/serve/1"}}`)
		is.True(e.timers[0].stopped)
		is.Equal(len(e.client.all()), 0)
		got := e.child.sent.lines()[1:]
		is.Equal(len(got), 2)
		is.Equal(frame.MustParse(got[0]).Method(), "notifications/cancelled")    // the cancel first
		is.Equal(frame.MustParse(got[1]).Get("error.code").Int(), int64(-32603)) // then the gathered elicitation
	})
	t.Run("child ends", func(t *testing.T) {
		is := is.New(t)
		e := newParkEnv(t, gather)
		e.must(parkCall("1", `{}`, parkAllCaps, ""))
		e.fromChild(parkElicit)
		e.conn.Close(errors.New("child exited"))
		is.True(e.timers[0].stopped)
		e.timers[0].f() // a timer that fired anyway does nothing
		is.Equal(len(e.client.all()), 0)
	})
}

func TestParkAnswersUndeclaredCapabilities(t *testing.T) {
	is := is.New(t)
	e := newParkEnv(t)
	e.must(parkCall("1", `{}`, `{"roots":{}}`, ""))
	e.must(parkCall("2", `{}`, `{"elicitation":{"form":{}}}`, ""))
	e.fromChild(parkSample)
	e.fromChild(`{"jsonrpc":"2.0","id":10,"method":"elicitation/create","params":{"mode":"url","url":"https://x.test","message":"go"}}`)
	got := e.child.sent.lines()[2:]
	is.Equal(len(got), 2)
	is.Equal(frame.MustParse(got[0]).Get("error.code").Int(), int64(-32600))    // sampling: an error
	is.Equal(got[1], `{"jsonrpc":"2.0","id":10,"result":{"action":"decline"}}`) // elicitation: declined
	is.Equal(len(e.client.all()), 0)

	// Roots with none that declared them: none are shared.
	e2 := newParkEnv(t)
	e2.must(parkCall("1", `{}`, `{"sampling":{}}`, ""))
	e2.fromChild(parkRoots)
	is.Equal(e2.child.sent.lines()[1:], []string{`{"jsonrpc":"2.0","id":9,"result":{"roots":[]}}`})
	is.Equal(len(e2.client.all()), 0)
}

func TestParkAnswersPingAndRefusesOtherRequests(t *testing.T) {
	is := is.New(t)
	e := newParkEnv(t)
	e.fromChild(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	e.fromChild(`{"jsonrpc":"2.0","id":3,"method":"tasks/list"}`)
	got := e.child.sent.lines()
	is.Equal(got[0], `{"jsonrpc":"2.0","id":"p","result":{}}`)
	is.Equal(frame.MustParse(got[1]).Get("error.code").Int(), int64(-32601))
	is.Equal(len(e.client.all()), 0)
}

func TestParkHoldsTheOutcomeUntilTheRetry(t *testing.T) {
	is := is.New(t)
	e, state := parked(t)
	e.fromChild(parkOutcome) // the child finished while the client was away
	is.Equal(len(e.client.all()), 1)
	e.must(parkRetry("2", `{"q":1,"r":[1,"é"]}`, `{}`, state))
	is.Equal(e.client.all()[1].String(), `{"jsonrpc":"2.0","id":"mcp-stdio/serve/2","result":{"content":[{"type":"text","text":"hi Ada"}]}}`)
	is.Equal(frame.MustParse(e.child.sent.lines()[1]).Get("error.code").Int(), int64(-32603)) // the elicitation left is told
}

func TestParkAbandonsAFinishedCallWithoutCancelling(t *testing.T) {
	is := is.New(t)
	e, _ := parked(t)
	e.fromChild(parkOutcome)
	e.fire()
	got := e.child.sent.all()[1:]
	is.Equal(len(got), 1) // the elicitation told, no cancel for a call that is over
	is.Equal(got[0].ID(), frame.ID("7"))
	is.Equal(len(e.client.all()), 1) // the held outcome is dropped
}

func TestParkCancels(t *testing.T) {
	is := is.New(t)
	e, state := parked(t)
	cancel := func(n string) string {
		return `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"mcp-stdio/serve/` + n + `","reason":"gone"}}`
	}
	e.must(cancel("1")) // the client's stream closed after input_required
	is.Equal(len(e.child.sent.all()), 1)

	e.must(parkRetry("2", `{"q":1,"r":[1,"é"]}`, `{"input-1":`+parkAccept+`}`, state))
	e.must(cancel("2")) // the retry's client went away
	is.Equal(e.child.sent.lines()[2:], []string{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"mcp-stdio/serve/1","reason":"gone"}}`})

	e.must(cancel("99")) // not a call of the stage's
	is.Equal(e.child.sent.lines()[3], cancel("99"))
}

func TestParkCapsRounds(t *testing.T) {
	is := is.New(t)
	e := newParkEnv(t, func(o *ParkOptions) { o.MaxRounds = 1 })
	e.must(parkCall("1", `{}`, parkAllCaps, ""))
	e.fromChild(parkElicit)
	e.must(parkRetry("2", `{}`, `{"input-1":`+parkAccept+`}`, e.lastState()))
	e.fromChild(parkRoots)
	is.Equal(e.client.all()[1].ID(), frame.ID(`"mcp-stdio/serve/2"`))
	is.Equal(e.client.all()[1].Get("error.code").Int(), int64(-32603))
	got := e.child.sent.lines()[2:]
	is.Equal(len(got), 2)
	is.Equal(frame.MustParse(got[0]).Method(), "notifications/cancelled")
	is.Equal(frame.MustParse(got[1]).ID(), frame.ID("9"))
}

func TestParkPointsProgressAtTheRetry(t *testing.T) {
	is := is.New(t)
	e := newParkEnv(t)
	token := func(m, tok string) string {
		return strings.Replace(m, `"_meta":{`, `"_meta":{"progressToken":"`+tok+`",`, 1)
	}
	progress := func(tok string) string {
		return `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"` + tok + `","progress":1}}`
	}
	e.must(token(parkCall("1", `{}`, parkAllCaps, ""), "t1"))
	e.fromChild(progress("t1")) // before any round: as it is
	e.fromChild(parkElicit)
	e.must(token(parkRetry("2", `{}`, `{"input-1":`+parkAccept+`}`, e.lastState()), "t2"))
	e.fromChild(progress("t1")) // the child knows the first token; the retry waits under the second
	got := e.client.lines()
	is.Equal(got[0], progress("t1"))
	is.Equal(got[2], progress("t2"))
}

func TestParkRunsConcurrentRetriesOnce(t *testing.T) {
	is := is.New(t)
	e, state := parked(t)
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			errs <- e.send(parkRetry(strconv.Itoa(10+i), `{"q":1,"r":[1,"é"]}`, `{"input-1":`+parkAccept+`}`, state))
		}()
	}
	ok := 0
	for range n {
		if err := <-errs; err == nil {
			ok++
		} else {
			refused(t, err, "used already")
		}
	}
	is.Equal(ok, 1)                      // one retry holds
	is.Equal(len(e.child.sent.all()), 2) // the call, and one answer to its elicitation
}
