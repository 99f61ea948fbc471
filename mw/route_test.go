package mw

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// routeHarness is a routing stage in front of a recording server.
type routeHarness struct {
	conn   *Conn
	r      *router
	d      Duplex
	server *recorder
	inner  func(m frame.Message) error // what the chain inside returns
	timers *fakeTimers
}

func newRouteHarness(backlog int) *routeHarness {
	return newRouteHarnessWith(RouteOptions{Backlog: backlog}, "")
}

// newRouteHarnessWith builds the stage with o (its Conn and AfterFunc are
// the harness's) on a session that negotiated version ("" for one before
// its handshake).
func newRouteHarnessWith(o RouteOptions, version string) *routeHarness {
	h := &routeHarness{conn: NewConn(EraSession), server: &recorder{}, timers: &fakeTimers{}}
	if version != "" {
		h.conn.Initialized(frame.MustParse(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`),
			frame.MustParse(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"`+version+`"}}`))
	}
	server := HandlerFunc(func(ctx context.Context, m frame.Message) error {
		h.server.Handle(ctx, m)
		if h.inner != nil {
			return h.inner(m)
		}
		return nil
	})
	o.Conn, o.AfterFunc = h.conn, h.timers.AfterFunc
	h.r = newRouter(o.withDefaults(), Duplex{ToServer: server, ToClient: Discard()})
	h.d = Duplex{ToServer: HandlerFunc(h.r.toServer), ToClient: HandlerFunc(h.r.toClient)}
	return h
}

// fakeTimers is an AfterFunc whose timers fire when a test says so.
type fakeTimers struct {
	mu    sync.Mutex
	armed []*fakeTimer
}

type fakeTimer struct {
	d       time.Duration
	f       func()
	stopped bool
}

func (ft *fakeTimers) AfterFunc(d time.Duration, f func()) func() bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	tm := &fakeTimer{d: d, f: f}
	ft.armed = append(ft.armed, tm)
	return func() bool {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		was := !tm.stopped
		tm.stopped = true
		return was
	}
}

// fire runs every timer armed and not stopped, as if its time had come,
// and returns their durations.
func (ft *fakeTimers) fire() []time.Duration {
	ft.mu.Lock()
	var due []*fakeTimer
	for _, tm := range ft.armed {
		if !tm.stopped {
			tm.stopped = true
			due = append(due, tm)
		}
	}
	ft.armed = nil
	ft.mu.Unlock()
	var ds []time.Duration
	for _, tm := range due {
		tm.f()
		ds = append(ds, tm.d)
	}
	return ds
}

// stale returns the functions armed so far, stopped or not: a timer that
// fires after it was stopped (it raced its stop) must do nothing.
func (ft *fakeTimers) stale() []func() {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	var fs []func()
	for _, tm := range ft.armed {
		fs = append(fs, tm.f)
	}
	return fs
}

// post hands a POST's message on x to the stage.
func (h *routeHarness) post(t *testing.T, x Exchange, body string) error {
	t.Helper()
	return h.d.ToServer.Handle(on(t.Context(), x), frame.MustParse(body))
}

// fromServer hands a message of the server to the stage.
func (h *routeHarness) fromServer(t *testing.T, body string) {
	t.Helper()
	if err := h.d.ToClient.Handle(t.Context(), frame.MustParse(body)); err != nil {
		t.Fatal(err)
	}
}

// get opens a standalone stream on x.
func (h *routeHarness) get(t *testing.T, x Exchange, lastEventID string) error {
	t.Helper()
	m := frame.Message{}
	if lastEventID != "" {
		m = m.WithHeader(frame.HeaderLastEventID, lastEventID)
	}
	return h.d.ToServer.Handle(on(t.Context(), x), m)
}

func TestRouteResponsesGoToTheirPOST(t *testing.T) {
	is := is.New(t)
	h := newRouteHarness(0)
	a, b := newPOST(true), newPOST(false)
	is.NoErr(h.post(t, a, `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`))
	is.NoErr(h.post(t, b, `[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"2","method":"ping"}]`))
	is.Equal(len(h.server.all()), 2) // passed on as they came

	h.fromServer(t, `{"jsonrpc":"2.0","id":"2","result":{}}`)
	h.fromServer(t, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	h.fromServer(t, `{"jsonrpc":"2.0","id":9,"result":{}}`) // nobody waits: dropped
	is.Equal(a.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":{}}`})
	is.True(a.isEnded())  // its one request is answered
	is.True(!b.isEnded()) // 2 is still due
	h.fromServer(t, `{"jsonrpc":"2.0","id":2,"result":{}}`)
	is.Equal(b.lines(), []string{`{"jsonrpc":"2.0","id":"2","result":{}}`, `{"jsonrpc":"2.0","id":2,"result":{}}`})
	is.True(b.isEnded())
}

func TestRouteServerMessages(t *testing.T) {
	is := is.New(t)
	h := newRouteHarness(0)
	jsonPOST, older, newer, get := newPOST(false), newPOST(true), newPOST(true), newGET()

	h.fromServer(t, `{"jsonrpc":"2.0","method":"early"}`) // no stream yet: kept
	is.NoErr(h.post(t, jsonPOST, `{"jsonrpc":"2.0","id":1,"method":"a"}`))
	is.NoErr(h.post(t, older, `{"jsonrpc":"2.0","id":2,"method":"b","params":{"_meta":{"progressToken":"t2"}}}`))
	is.NoErr(h.post(t, newer, `{"jsonrpc":"2.0","id":3,"method":"c","params":{"_meta":{"progressToken":7}}}`))
	is.NoErr(h.get(t, get, ""))
	is.Equal(get.lines(), []string{`g1 {"jsonrpc":"2.0","method":"early"}`}) // the backlog first

	h.fromServer(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}`)
	h.fromServer(t, `{"jsonrpc":"2.0","id":"s1","method":"elicitation/create"}`)
	is.Equal(newer.lines(), []string{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}`})
	is.Equal(older.lines(), []string{`{"jsonrpc":"2.0","id":"s1","method":"elicitation/create"}`}) // the oldest stream
	is.Equal(len(jsonPOST.lines()), 0)                                                             // JSON carries only its answer

	older.setBusy(true) // its handler is still writing to the server
	h.fromServer(t, `{"jsonrpc":"2.0","method":"n1"}`)
	is.Equal(newer.lines()[1], `{"jsonrpc":"2.0","method":"n1"}`) // passed over to the next
	h.fromServer(t, `{"jsonrpc":"2.0","id":3,"result":{}}`)
	h.fromServer(t, `{"jsonrpc":"2.0","method":"n2"}`)
	is.Equal(get.lines()[1], `g2 {"jsonrpc":"2.0","method":"n2"}`) // the standalone stream
}

func TestRouteStandaloneStream(t *testing.T) {
	is := is.New(t)
	h := newRouteHarness(2)
	h.fromServer(t, `{"jsonrpc":"2.0","method":"a"}`)
	h.fromServer(t, `{"jsonrpc":"2.0","method":"b"}`)
	h.fromServer(t, `{"jsonrpc":"2.0","method":"c"}`) // the backlog holds 2: a is dropped

	first := newGET()
	is.NoErr(h.get(t, first, ""))
	is.Equal(first.lines(), []string{`g1 {"jsonrpc":"2.0","method":"b"}`, `g2 {"jsonrpc":"2.0","method":"c"}`})
	h.fromServer(t, `{"jsonrpc":"2.0","method":"d"}`)
	first.finish() // d was never taken (nor named)

	h.fromServer(t, `{"jsonrpc":"2.0","method":"e"}`)
	again := newGET()
	is.NoErr(h.get(t, again, "g1")) // resumes after g1
	is.Equal(again.lines(), []string{
		`g2 {"jsonrpc":"2.0","method":"c"}`, // kept events after g1, with their ids
		`g3 {"jsonrpc":"2.0","method":"d"}`, // d went back to the backlog, ahead of e
		`g4 {"jsonrpc":"2.0","method":"e"}`,
	})
}

// A new GET takes over from the standalone stream still open (its
// connection may have died unnoticed): the old one ends, what it had not
// taken goes to the new one, and so does everything later.
func TestRouteNewestGETWins(t *testing.T) {
	is := is.New(t)
	h := newRouteHarness(0)
	stale := newGET()
	is.NoErr(h.get(t, stale, ""))
	h.fromServer(t, `{"jsonrpc":"2.0","method":"a"}`)
	is.Equal(stale.lines(), []string{`g1 {"jsonrpc":"2.0","method":"a"}`}) // written, never read
	h.fromServer(t, `{"jsonrpc":"2.0","method":"b"}`)                      // queued on the stale stream

	fresh := newGET()
	is.NoErr(h.get(t, fresh, "")) // no 409
	is.True(stale.isEnded())
	h.fromServer(t, `{"jsonrpc":"2.0","method":"c"}`)
	is.Equal(fresh.lines(), []string{`g2 {"jsonrpc":"2.0","method":"b"}`, `g3 {"jsonrpc":"2.0","method":"c"}`})
	is.Equal(stale.lines(), []string{`g1 {"jsonrpc":"2.0","method":"a"}`}) // nothing more

	stale.finish() // the old connection's end changes nothing
	h.fromServer(t, `{"jsonrpc":"2.0","method":"d"}`)
	is.Equal(fresh.lines()[2], `g4 {"jsonrpc":"2.0","method":"d"}`)

	// A client that says what it saw gets it again on the stream that
	// takes over.
	third := newGET()
	is.NoErr(h.get(t, third, "g2"))
	is.True(fresh.isEnded())
	is.Equal(third.lines(), []string{`g3 {"jsonrpc":"2.0","method":"c"}`, `g4 {"jsonrpc":"2.0","method":"d"}`})
}

func TestRouteCancel(t *testing.T) {
	is := is.New(t)
	h := newRouteHarness(0)
	sse, json := newPOST(true), newPOST(false)
	is.NoErr(h.post(t, sse, `{"jsonrpc":"2.0","id":1,"method":"slow"}`))
	is.NoErr(h.post(t, json, `{"jsonrpc":"2.0","id":2,"method":"slow"}`))
	is.NoErr(h.post(t, newPOST(false), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`))
	is.NoErr(h.post(t, newPOST(false), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`))
	is.True(sse.isEnded())
	is.Equal(len(sse.lines()), 0) // the stream simply ends
	is.True(json.isEnded())
	is.Equal(json.lines(), []string{`{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"request cancelled"}}`})
	h.fromServer(t, `{"jsonrpc":"2.0","id":1,"result":{}}`) // late: nobody waits
	is.Equal(len(sse.lines()), 0)

	// A request the chain inside did not deliver because it was cancelled
	// is finished too.
	h.inner = func(m frame.Message) error { return frame.ErrCancelled }
	again := newPOST(true)
	is.NoErr(h.post(t, again, `{"jsonrpc":"2.0","id":3,"method":"slow"}`))
	is.True(again.isEnded())
	h.inner = func(m frame.Message) error { return &CancelledError{IDs: []frame.ID{"5"}} }
	batch := newPOST(false)
	is.NoErr(h.post(t, batch, `[{"jsonrpc":"2.0","id":4,"method":"a"},{"jsonrpc":"2.0","id":5,"method":"b"}]`))
	is.Equal(batch.lines(), []string{`{"jsonrpc":"2.0","id":5,"error":{"code":-32000,"message":"request cancelled"}}`})
	is.True(!batch.isEnded()) // 4 is still due
}

func TestRouteInnerFailure(t *testing.T) {
	is := is.New(t)
	h := newRouteHarness(0)
	fail := errors.New("the server is gone")
	h.inner = func(frame.Message) error { return fail }
	x := newPOST(true)
	is.True(errors.Is(h.post(t, x, `{"jsonrpc":"2.0","id":1,"method":"a"}`), fail)) // for the transport to answer
	h.inner = nil
	y := newPOST(true)
	is.NoErr(h.post(t, y, `{"jsonrpc":"2.0","id":1,"method":"a"}`)) // the id is free again
	h.fromServer(t, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	is.Equal(len(x.lines()), 0)
	is.Equal(len(y.lines()), 1)
}

// The connection ends while a POST's request is on its way to the server
// (the server died, so the write fails): the request is answered once,
// with "session ended" on its exchange, and the failure is not handed to
// the transport to answer again (an HTTP+SSE client would get both: the
// error on its stream and an error status to its POST).
func TestRouteInnerFailureAsTheConnectionEnds(t *testing.T) {
	is := is.New(t)
	h := newRouteHarness(0)
	h.inner = func(frame.Message) error {
		h.conn.Close(errors.New("the server process exited"))
		return errors.New("write |1: broken pipe")
	}
	x := newPOST(true)
	is.NoErr(h.post(t, x, `{"jsonrpc":"2.0","id":1,"method":"a"}`)) // answered already: nothing for the transport
	is.Equal(x.lines(), []string{`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"session ended: the server process exited"}}`})
	is.True(x.isEnded())
}

func TestRouteAbandonedPOST(t *testing.T) {
	is := is.New(t)
	h := newRouteHarness(0)
	x := newPOST(true)
	is.NoErr(h.post(t, x, `{"jsonrpc":"2.0","id":1,"method":"a"}`))
	h.fromServer(t, `{"jsonrpc":"2.0","method":"log"}`)
	x.finish()                                              // its client went away before the log was taken
	h.fromServer(t, `{"jsonrpc":"2.0","id":1,"result":{}}`) // dropped
	get := newGET()
	is.NoErr(h.get(t, get, ""))
	is.Equal(get.lines(), []string{`g1 {"jsonrpc":"2.0","method":"log"}`}) // routed again
}

func TestRouteConnectionEnd(t *testing.T) {
	is := is.New(t)
	h := newRouteHarness(0)
	x, get := newPOST(false), newGET()
	is.NoErr(h.post(t, x, `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"}]`))
	is.NoErr(h.get(t, get, ""))
	h.conn.Close(errors.New("idle timeout"))
	got := strings.Join(x.lines(), "\n")
	is.True(strings.Contains(got, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"session ended: idle timeout"}}`))
	is.True(strings.Contains(got, `{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"session ended: idle timeout"}}`))
	is.True(x.isEnded())
	is.True(get.isEnded())

	err := h.post(t, newPOST(true), `{"jsonrpc":"2.0","id":3,"method":"a"}`)
	var st *frame.StatusError
	is.True(errors.As(err, &st))
	is.Equal(st.Code, http.StatusNotFound)
	h.fromServer(t, `{"jsonrpc":"2.0","method":"late"}`) // dropped, no panic
}

func TestRouteOutsideHTTP(t *testing.T) {
	is := is.New(t)
	h := newRouteHarness(0)
	is.NoErr(h.d.ToServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"a"}`)))
	is.Equal(len(h.server.all()), 1) // a message without an exchange passes
}

// On a session of 2025-11-25, a POST's event stream has ids and opens
// with a priming event that names the retry time; 2025-06-18 has the ids
// only. JSON answers and the initialize's stream have none.
func TestRoutePOSTStreamIDs(t *testing.T) {
	is := is.New(t)
	h := newRouteHarnessWith(RouteOptions{Retry: 1500 * time.Millisecond}, "2025-11-25")
	a, json, b := newPOST(true), newPOST(false), newPOST(true)
	is.NoErr(h.post(t, a, `{"jsonrpc":"2.0","id":1,"method":"a","params":{"_meta":{"progressToken":"t"}}}`))
	is.NoErr(h.post(t, json, `{"jsonrpc":"2.0","id":2,"method":"j"}`))
	is.NoErr(h.post(t, b, `{"jsonrpc":"2.0","id":3,"method":"b"}`))
	h.fromServer(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`)
	h.fromServer(t, `{"jsonrpc":"2.0","id":2,"result":{}}`)
	h.fromServer(t, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	h.fromServer(t, `{"jsonrpc":"2.0","id":3,"result":{}}`)
	is.Equal(a.lines(), []string{
		`p1-0 prime retry 1.5s`,
		`p1-1 {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
		`p1-2 {"jsonrpc":"2.0","id":1,"result":{}}`,
	})
	is.Equal(json.lines(), []string{`{"jsonrpc":"2.0","id":2,"result":{}}`})
	is.Equal(b.lines(), []string{`p2-0 prime retry 1.5s`, `p2-1 {"jsonrpc":"2.0","id":3,"result":{}}`}) // ids unique in the session

	older := newRouteHarnessWith(RouteOptions{}, "2025-06-18")
	c := newPOST(true)
	is.NoErr(older.post(t, c, `{"jsonrpc":"2.0","id":1,"method":"a"}`))
	older.fromServer(t, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	is.Equal(c.lines(), []string{`p1-1 {"jsonrpc":"2.0","id":1,"result":{}}`}) // no priming event before 2025-11-25

	none := newRouteHarnessWith(RouteOptions{Retry: -1}, "2025-11-25")
	d := newPOST(true)
	is.NoErr(none.post(t, d, `{"jsonrpc":"2.0","id":1,"method":"a"}`))
	is.Equal(d.lines(), []string{`p1-0 prime`}) // no retry field
}

// The client of a POST stream goes away mid-call: the stream waits for
// it, with what it had not taken and what comes later (its progress, its
// answer), and a GET with Last-Event-ID resumes it: the kept events after
// that id, then the rest, and the GET ends after the answer.
func TestRoutePOSTStreamResumes(t *testing.T) {
	is := is.New(t)
	h := newRouteHarnessWith(RouteOptions{}, "2025-11-25")
	standalone := newGET()
	is.NoErr(h.get(t, standalone, ""))
	x := newPOST(true)
	is.NoErr(h.post(t, x, `{"jsonrpc":"2.0","id":1,"method":"slow","params":{"_meta":{"progressToken":7}}}`))
	h.fromServer(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}`)
	is.Equal(x.lines(), []string{`p1-0 prime retry 2s`, `p1-1 {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}`})
	h.fromServer(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":2}}`)
	x.finish() // the connection drops: progress 2 was never taken

	h.fromServer(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":3}}`) // waits with the stream
	h.fromServer(t, `{"jsonrpc":"2.0","method":"notifications/message"}`)                                            // not the stream's
	h.fromServer(t, `{"jsonrpc":"2.0","id":1,"result":{"done":true}}`)                                               // waits too
	is.Equal(standalone.lines(), []string{`g1 {"jsonrpc":"2.0","method":"notifications/message"}`})

	resumed := newGET()
	is.NoErr(h.get(t, resumed, "p1-0"))
	is.Equal(resumed.lines(), []string{
		`p1-1 {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}`, // sent again
		`p1-2 {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":2}}`,
		`p1-3 {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":3}}`,
		`p1-4 {"jsonrpc":"2.0","id":1,"result":{"done":true}}`,
	})
	is.True(resumed.isEnded()) // as the POST would have
	is.True(!standalone.isEnded())
	is.Equal(h.timers.fire(), []time.Duration(nil)) // the wait was stopped
	resumed.finish()

	// A client that did not get the answer after all (its connection
	// died unnoticed) can come back for it while the stream is kept.
	again := newGET()
	is.NoErr(h.get(t, again, "p1-3"))
	is.True(again.isEnded())
	is.Equal(again.lines(), []string{`p1-4 {"jsonrpc":"2.0","id":1,"result":{"done":true}}`})
	again.finish()
	is.True(!standalone.isEnded()) // and the standalone stream stays
	h.timers.fire()                // kept for one to two ResumeGrace
	still := newGET()
	is.NoErr(h.get(t, still, "p1-3"))
	is.Equal(len(still.lines()), 1)
	h.timers.fire()
	late := newGET()
	is.NoErr(h.get(t, late, "p1-3")) // let go: it ends at once
	is.True(late.isEnded())
	is.Equal(len(late.lines()), 0)
}

// A resume that comes while the POST's own exchange still looks open (the
// connection died unnoticed) takes the stream over; the answer then goes
// to the GET, and the old exchange's end changes nothing.
func TestRoutePOSTStreamTakeover(t *testing.T) {
	is := is.New(t)
	h := newRouteHarnessWith(RouteOptions{}, "2025-11-25")
	x := newPOST(true)
	is.NoErr(h.post(t, x, `{"jsonrpc":"2.0","id":"c","method":"slow"}`))
	h.fromServer(t, `{"jsonrpc":"2.0","method":"n1"}`) // the oldest open stream carries it
	is.Equal(x.lines()[1], `p1-1 {"jsonrpc":"2.0","method":"n1"}`)
	h.fromServer(t, `{"jsonrpc":"2.0","method":"n2"}`) // queued, never taken

	get := newGET()
	is.NoErr(h.get(t, get, "p1-0"))
	is.True(x.isEnded())
	is.Equal(get.lines(), []string{`p1-1 {"jsonrpc":"2.0","method":"n1"}`, `p1-2 {"jsonrpc":"2.0","method":"n2"}`})
	x.finish()
	h.fromServer(t, `{"jsonrpc":"2.0","method":"n3"}`) // the stream is open on the GET now
	h.fromServer(t, `{"jsonrpc":"2.0","id":"c","result":{}}`)
	is.Equal(get.lines()[2:], []string{`p1-3 {"jsonrpc":"2.0","method":"n3"}`, `p1-4 {"jsonrpc":"2.0","id":"c","result":{}}`})
	is.True(get.isEnded())
	is.Equal(len(x.lines()), 2) // nothing more on the old one
}

// A response that finds its POST's exchange over, before anyone heard of
// it, is not lost: the stream waits for its client with it.
func TestRouteResponseAsTheConnectionDrops(t *testing.T) {
	is := is.New(t)
	h := newRouteHarnessWith(RouteOptions{}, "2025-11-25")
	x := newPOST(true)
	is.NoErr(h.post(t, x, `{"jsonrpc":"2.0","id":1,"method":"a"}`))
	x.lines()
	report := x.goneUnheard()
	h.fromServer(t, `{"jsonrpc":"2.0","method":"n"}`) // refused by the dead exchange: kept for its stream
	h.fromServer(t, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	report()
	get := newGET()
	is.NoErr(h.get(t, get, "p1-0"))
	is.Equal(get.lines(), []string{`p1-1 {"jsonrpc":"2.0","method":"n"}`, `p1-2 {"jsonrpc":"2.0","id":1,"result":{}}`})
	is.True(get.isEnded())
}

// A stream whose client does not come back within ResumeGrace is let go:
// its answer is dropped with a warning, its other messages go to the
// session's standalone stream, and a late resume ends at once. A timer
// that fires after a resume stopped it does nothing.
func TestRouteResumeGraceExpires(t *testing.T) {
	is := is.New(t)
	log, logs := testLogger()
	h := newRouteHarnessWith(RouteOptions{ResumeGrace: 45 * time.Second, Logger: log}, "2025-11-25")
	x := newPOST(true)
	is.NoErr(h.post(t, x, `{"jsonrpc":"2.0","id":1,"method":"slow","params":{"_meta":{"progressToken":"t"}}}`))
	x.lines()
	x.finish()
	h.fromServer(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`)
	h.fromServer(t, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	is.Equal(h.timers.fire(), []time.Duration{45 * time.Second})
	is.True(strings.Contains(logs.String(), "did not come back to resume it"))

	get := newGET()
	is.NoErr(h.get(t, get, "p1-0"))
	is.True(get.isEnded())
	is.Equal(len(get.lines()), 0)
	standalone := newGET()
	is.NoErr(h.get(t, standalone, ""))
	is.Equal(standalone.lines(), []string{`g1 {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`})

	// Resumed in time, then its timer fires late: nothing happens.
	y := newPOST(true)
	is.NoErr(h.post(t, y, `{"jsonrpc":"2.0","id":2,"method":"slow"}`))
	y.lines()
	y.finish()
	late := h.timers.stale()
	resumed := newGET()
	is.NoErr(h.get(t, resumed, "p2-0"))
	for _, f := range late {
		f()
	}
	h.fromServer(t, `{"jsonrpc":"2.0","id":2,"result":{}}`)
	is.Equal(resumed.lines(), []string{`p2-1 {"jsonrpc":"2.0","id":2,"result":{}}`})
}

// A client of 2025-06-18 whose stream never gave it an event id cannot
// resume it: the stream is let go at once, as before.
func TestRouteUnresumableStreamIsLetGo(t *testing.T) {
	is := is.New(t)
	h := newRouteHarnessWith(RouteOptions{}, "2025-06-18")
	x := newPOST(true)
	is.NoErr(h.post(t, x, `{"jsonrpc":"2.0","id":1,"method":"a"}`))
	x.finish()
	is.Equal(len(h.timers.stale()), 0) // nothing waits
	h.fromServer(t, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	get := newGET()
	is.NoErr(h.get(t, get, "p1-0"))
	is.True(get.isEnded())
}

// At most keptStreams streams wait for their clients; the oldest is let
// go first.
func TestRouteWaitingStreamsAreBounded(t *testing.T) {
	is := is.New(t)
	h := newRouteHarnessWith(RouteOptions{}, "2025-11-25")
	for i := range keptStreams + 1 {
		x := newPOST(true)
		is.NoErr(h.post(t, x, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"slow"}`, i)))
		x.finish()
	}
	first := newGET()
	is.NoErr(h.get(t, first, "p1-0"))
	is.True(first.isEnded()) // let go
	last := newGET()
	is.NoErr(h.get(t, last, fmt.Sprintf("p%d-0", keptStreams+1)))
	is.True(!last.isEnded()) // still due
}

// FuzzReplayFrom feeds arbitrary Last-Event-ID values (a client's header)
// to a GET on a session with a standalone stream (g1 to g5 given, g3 to
// g5 kept) and a POST stream (p1-1 to p1-3): nothing may panic, and what
// the GET gets is a run of the kept events of one stream up to its latest.
func FuzzReplayFrom(f *testing.F) {
	for _, s := range []string{
		"", "g0", "g1", "g3", "g4", "g5", "g99", "g-1", "g18446744073709551615", "x7", "g", "G2", "g01",
		"p1-0", "p1-1", "p1-2", "p1-3", "p1-4", "p1-9", "p2-0", "p2-1", "p0-1", "p1", "p-1", "p1-", "p1--1", "p01-2", "P1-1", "p1-x",
		"p18446744073709551616-0", "p1-18446744073709551615", "p+1-1", "p1-+1", "p 1-1", "p1-1 ", "p1-1\n", "p1-1-1", "pg1", "gp1-1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, last string) {
		h := newRouteHarnessWith(RouteOptions{}, "2025-11-25")
		get := newGET()
		if err := h.get(t, get, ""); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			h.fromServer(t, `{"jsonrpc":"2.0","method":"n"}`)
		}
		get.lines()
		h.r.getEvents.sent = h.r.getEvents.sent[2:] // g3, g4 and g5 are kept
		x := newPOST(true)
		if err := h.post(t, x, `{"jsonrpc":"2.0","id":1,"method":"slow"}`); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			h.fromServer(t, `{"jsonrpc":"2.0","method":"n"}`)
		}
		x.lines()

		again := newGET()
		if err := h.get(t, again, last); err != nil {
			t.Fatal(err)
		}
		got := again.lines()
		var ids []string
		for _, l := range got {
			id, _, _ := strings.Cut(l, " ")
			ids = append(ids, id)
		}
		runs := [][]string{{"g3", "g4", "g5"}, {"p1-1", "p1-2", "p1-3"}}
		ok := len(ids) == 0
		for _, run := range runs {
			ok = ok || slices.Equal(ids, run[len(run)-min(len(ids), len(run)):])
		}
		if !ok {
			t.Fatalf("a GET with Last-Event-ID %q got %q", last, ids)
		}
		// The canonical ids replay exactly what follows them.
		want := map[string]int{"g0": 3, "g1": 3, "g2": 3, "g3": 2, "g4": 1, "p1-0": 3, "p1-1": 2, "p1-2": 1}
		if n, canonical := want[last]; canonical && len(ids) != n {
			t.Fatalf("a GET with Last-Event-ID %q got %q", last, ids)
		}
	})
}

// Streams kept after their answers are bounded: keptDone of them and
// keptDoneBytes of events, the oldest let go first.
func TestRouteFinishedStreamsAreBounded(t *testing.T) {
	is := is.New(t)
	h := newRouteHarnessWith(RouteOptions{}, "2025-11-25")
	call := func(id int, result string) {
		t.Helper()
		x := newPOST(true)
		is.NoErr(h.post(t, x, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"a"}`, id)))
		h.fromServer(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%s}`, id, result))
		x.lines()
		x.finish()
	}
	kept := func(stream int) bool {
		t.Helper()
		get := newGET()
		is.NoErr(h.get(t, get, fmt.Sprintf("p%d-0", stream)))
		return len(get.lines()) == 1
	}
	for i := range keptDone + 1 {
		call(i, `{}`)
	}
	is.True(!kept(1)) // the oldest, let go
	is.True(kept(2))
	is.True(kept(keptDone + 1))

	big := `{"s":"` + strings.Repeat("x", keptDoneBytes/2) + `"}`
	call(100, big)
	call(101, big) // together over the budget
	is.True(!kept(keptDone + 2))
	is.True(kept(keptDone + 3))
	is.True(!kept(2)) // the small ones went first
}

// Events replayed on a GET that broke before it wrote them are not sent
// twice by the next resume: they are kept events already.
func TestRouteReplaysAreNotDoubled(t *testing.T) {
	is := is.New(t)
	h := newRouteHarnessWith(RouteOptions{}, "2025-11-25")
	x := newPOST(true)
	is.NoErr(h.post(t, x, `{"jsonrpc":"2.0","id":1,"method":"slow"}`))
	h.fromServer(t, `{"jsonrpc":"2.0","method":"n1"}`)
	x.lines()
	x.finish()

	broken := newGET()
	is.NoErr(h.get(t, broken, "p1-0")) // replays p1-1 ...
	broken.finish()                    // ... which it never wrote
	again := newGET()
	is.NoErr(h.get(t, again, "p1-0"))
	h.fromServer(t, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	is.Equal(again.lines(), []string{`p1-1 {"jsonrpc":"2.0","method":"n1"}`, `p1-2 {"jsonrpc":"2.0","id":1,"result":{}}`})

	// The same for the standalone stream.
	get := newGET()
	is.NoErr(h.get(t, get, ""))
	h.fromServer(t, `{"jsonrpc":"2.0","method":"g"}`)
	get.lines()
	get.finish()
	broken = newGET()
	is.NoErr(h.get(t, broken, "g0"))
	broken.finish()
	again = newGET()
	is.NoErr(h.get(t, again, "g0"))
	is.Equal(again.lines(), []string{`g1 {"jsonrpc":"2.0","method":"g"}`})
}

// A resume that takes over from a GET which has not written its replay
// yet does not send the replayed events twice, under new ids: they are
// kept events, and the new GET replays them itself. The same for a GET
// that takes over the standalone stream.
func TestRouteTakeoverDoesNotRenameReplays(t *testing.T) {
	is := is.New(t)
	h := newRouteHarnessWith(RouteOptions{}, "2025-11-25")
	x := newPOST(true)
	is.NoErr(h.post(t, x, `{"jsonrpc":"2.0","id":1,"method":"slow"}`))
	h.fromServer(t, `{"jsonrpc":"2.0","method":"n1"}`)
	x.lines()
	x.finish()

	stale := newGET()
	is.NoErr(h.get(t, stale, "p1-0")) // p1-1 replayed, not taken yet
	h.fromServer(t, `{"jsonrpc":"2.0","method":"n2"}`)
	fresh := newGET()
	is.NoErr(h.get(t, fresh, "p1-0"))
	stale.finish()
	h.fromServer(t, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	is.Equal(fresh.lines(), []string{
		`p1-1 {"jsonrpc":"2.0","method":"n1"}`,
		`p1-2 {"jsonrpc":"2.0","method":"n2"}`,
		`p1-3 {"jsonrpc":"2.0","id":1,"result":{}}`,
	})

	get := newGET()
	is.NoErr(h.get(t, get, ""))
	h.fromServer(t, `{"jsonrpc":"2.0","method":"g"}`)
	get.lines()
	get.finish()
	stale = newGET()
	is.NoErr(h.get(t, stale, "g0")) // g1 replayed, not taken yet
	fresh = newGET()
	is.NoErr(h.get(t, fresh, "g0"))
	stale.finish()
	is.Equal(fresh.lines(), []string{`g1 {"jsonrpc":"2.0","method":"g"}`})
}
