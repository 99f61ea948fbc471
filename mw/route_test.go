package mw

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// routeHarness is a routing stage in front of a recording server.
type routeHarness struct {
	conn   *Conn
	d      Duplex
	server *recorder
	inner  func(m frame.Message) error // what the chain inside returns
}

func newRouteHarness(backlog int) *routeHarness {
	h := &routeHarness{conn: NewConn(EraSession), server: &recorder{}}
	server := HandlerFunc(func(ctx context.Context, m frame.Message) error {
		h.server.Handle(ctx, m)
		if h.inner != nil {
			return h.inner(m)
		}
		return nil
	})
	h.d = Route(RouteOptions{Conn: h.conn, Backlog: backlog})(Duplex{ToServer: server, ToClient: Discard()})
	return h
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

// FuzzReplayFrom feeds arbitrary Last-Event-ID values (a client's header)
// to the standalone stream's replay: nothing may panic, and what it
// replays is a run of kept events after the one named.
func FuzzReplayFrom(f *testing.F) {
	for _, s := range []string{"", "g0", "g1", "g3", "g4", "g99", "g-1", "g18446744073709551615", "x7", "g", "G2", "g01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, last string) {
		r := &router{log: loggerOrDiscard(nil), getEvents: events{prefix: "g"}}
		for range 5 {
			r.getEvents.name(frame.MustParse(`{"jsonrpc":"2.0","method":"n"}`))
		}
		r.getEvents.sent = r.getEvents.sent[2:] // g3, g4 and g5 are kept
		got := r.replayFrom(last)
		if len(got) > 3 {
			t.Fatalf("replayed %d events from %q", len(got), last)
		}
		for i, e := range got {
			if want := "g" + strconv.Itoa(6-len(got)+i); e.id != want {
				t.Fatalf("replay from %q: event %d is %s, want %s", last, i, e.id, want)
			}
		}
	})
}
