package mw

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func cancelFor(id string) frame.Message {
	return frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"user"}}`)
}

func responseFor(id string) frame.Message {
	return frame.MustParse(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`)
}

// cancelHarness is a cancel filter between a recorder for the client and a
// recorder for the server.
type cancelHarness struct {
	clock  *fakeClock
	f      *cancelFilter
	d      Duplex
	server *recorder
	client *recorder
}

func newCancelHarness() *cancelHarness {
	h := &cancelHarness{clock: &fakeClock{t: time.Unix(1000, 0)}, server: &recorder{}, client: &recorder{}}
	h.f = newCancelFilter(CancelOptions{Now: h.clock.Now}, Duplex{ToServer: h.server, ToClient: h.client})
	h.d = Duplex{ToServer: HandlerFunc(h.f.toServer), ToClient: HandlerFunc(h.f.toClient)}
	return h
}

func (h *cancelHarness) recordedLen() int {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	return len(h.f.recorded)
}

func TestCancelFilterDropsLateResponse(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	h := newCancelHarness()

	is.NoErr(h.d.ToServer.Handle(ctx, cancelFor("1")))
	is.NoErr(h.d.ToClient.Handle(ctx, responseFor("1")))
	is.NoErr(h.d.ToClient.Handle(ctx, responseFor("2")))
	is.NoErr(h.d.ToClient.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"late"}}`)))

	is.Equal(h.client.lines(), []string{`{"jsonrpc":"2.0","id":2,"result":{}}`}) // only the uncancelled response
	is.Equal(h.server.lines(), []string{cancelFor("1").String()})                // the cancel is forwarded unchanged
}

func TestCancelFilterIDs(t *testing.T) {
	tests := []struct {
		name      string
		cancelled string
		response  string
		dropped   bool
	}{
		{"number", `7`, `7`, true},
		{"zero is tracked", `0`, `0`, true},
		{"string", `"abc"`, `"abc"`, true},
		{"number does not match string", `1`, `"1"`, false},
		{"string does not match number", `"1"`, `1`, false},
		{"1 does not match 1.0", `1`, `1.0`, false},
		{"negative", `-3`, `-3`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			h := newCancelHarness()
			is.NoErr(h.d.ToServer.Handle(t.Context(), cancelFor(tt.cancelled)))
			is.NoErr(h.d.ToClient.Handle(t.Context(), responseFor(tt.response)))
			is.Equal(len(h.client.all()) == 0, tt.dropped)
		})
	}
}

func TestCancelFilterIgnoresMalformedCancels(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":null}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"x":1}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[1]}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":true}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled"}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"method":"notifications/cancelled","requestId":1}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"requestId":1,"note":"\"method\":\"notifications/cancelled\""}}`,
	} {
		t.Run(line, func(t *testing.T) {
			is := is.New(t)
			h := newCancelHarness()
			is.NoErr(h.d.ToServer.Handle(t.Context(), frame.MustParse(line)))
			is.Equal(h.server.lines(), []string{line}) // forwarded unchanged
			is.Equal(h.recordedLen(), 0)               // nothing recorded
			is.NoErr(h.d.ToClient.Handle(t.Context(), responseFor("1")))
			is.NoErr(h.d.ToClient.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`)))
			is.Equal(len(h.client.all()), 2) // both pass
		})
	}
}

func TestCancelFilterPassesWhatIsNotAResponse(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	h := newCancelHarness()
	is.NoErr(h.d.ToServer.Handle(ctx, cancelFor("1")))

	pass := []string{
		`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}`, // server→client request, colliding id
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}`,
		`[{"jsonrpc":"2.0","id":1,"result":{}}]`, // batch
		`{"id":1}`,                               // malformed
		`"junk"`,
	}
	for _, line := range pass {
		is.NoErr(h.d.ToClient.Handle(ctx, frame.MustParse(line)))
	}
	is.Equal(h.client.lines(), pass)
}

func TestCancelFilterTTL(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	h := newCancelHarness()
	is.NoErr(h.d.ToServer.Handle(ctx, cancelFor("1")))

	h.clock.Advance(DefaultCancelTTL - time.Nanosecond)
	is.NoErr(h.d.ToClient.Handle(ctx, responseFor("1")))
	is.Equal(len(h.client.all()), 0) // still remembered just before the TTL

	h.clock.Advance(time.Nanosecond)
	is.NoErr(h.d.ToClient.Handle(ctx, responseFor("1")))
	is.Equal(len(h.client.all()), 1) // forgotten at the TTL
	is.Equal(h.recordedLen(), 0)
}

func TestCancelFilterCustomTTL(t *testing.T) {
	is := is.New(t)
	clock := &fakeClock{t: time.Unix(0, 0)}
	client := &recorder{}
	d := CancelFilter(CancelOptions{TTL: time.Second, Now: clock.Now})(Duplex{ToServer: &recorder{}, ToClient: client})
	is.NoErr(d.ToServer.Handle(t.Context(), cancelFor("1")))
	clock.Advance(time.Second)
	is.NoErr(d.ToClient.Handle(t.Context(), responseFor("1")))
	is.Equal(len(client.all()), 1)
}

func TestCancelFilterSweepsExpired(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	h := newCancelHarness()
	for i := range cancelSweepAt {
		is.NoErr(h.d.ToServer.Handle(ctx, cancelFor(strconv.Itoa(i))))
	}
	is.Equal(h.recordedLen(), cancelSweepAt) // no sweep at the threshold

	h.clock.Advance(DefaultCancelTTL)
	is.NoErr(h.d.ToServer.Handle(ctx, cancelFor(`"fresh"`)))
	is.Equal(h.recordedLen(), 1) // growing past the threshold swept the expired ids
}

func TestCancelFilterHardCap(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	h := newCancelHarness()
	n := cancelMaxIDs + 10
	for i := range n {
		is.NoErr(h.d.ToServer.Handle(ctx, cancelFor(strconv.Itoa(i))))
	}
	is.Equal(h.recordedLen(), cancelMaxIDs)
	is.NoErr(h.d.ToClient.Handle(ctx, responseFor("0")))
	is.NoErr(h.d.ToClient.Handle(ctx, responseFor("9")))
	is.NoErr(h.d.ToClient.Handle(ctx, responseFor("10")))
	is.NoErr(h.d.ToClient.Handle(ctx, responseFor(strconv.Itoa(n-1))))
	is.Equal(h.client.lines(), []string{responseFor("0").String(), responseFor("9").String()}) // the oldest were evicted

	// Cancelling an id again refreshes it rather than adding an entry.
	is.NoErr(h.d.ToServer.Handle(ctx, cancelFor("10")))
	is.Equal(h.recordedLen(), cancelMaxIDs)
	is.NoErr(h.d.ToServer.Handle(ctx, cancelFor(`"new"`)))
	is.NoErr(h.d.ToClient.Handle(ctx, responseFor("10")))
	is.Equal(len(h.client.all()), 2) // 10 survived the eviction of the oldest
}

func TestCancelFilterAbortsInFlightRequest(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	entered := make(chan struct{})
	var observed error
	var forwarded recorder
	client := &recorder{}
	server := HandlerFunc(func(ctx context.Context, m frame.Message) error {
		if m.Kind() != frame.Request {
			return forwarded.Handle(ctx, m)
		}
		close(entered)
		<-ctx.Done()
		observed = ctx.Err()
		return &frame.SendError{Sent: true, Err: ctx.Err()}
	})
	d := CancelFilter(CancelOptions{})(Duplex{ToServer: server, ToClient: client})

	done := make(chan error, 1)
	go func() {
		done <- d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"slow"}}`))
	}()
	<-entered
	is.NoErr(d.ToServer.Handle(ctx, cancelFor("0")))
	is.True(errors.Is(<-done, frame.ErrCancelled))                 // no answer is due for the cancelled request
	is.True(errors.Is(observed, context.Canceled))                 // the inner chain saw its context cancelled
	is.Equal(forwarded.lines(), []string{cancelFor("0").String()}) // and the cancel went upstream

	is.NoErr(d.ToClient.Handle(ctx, responseFor("0")))
	is.Equal(len(client.all()), 0) // a late answer is dropped
}

func TestCancelFilterOtherRequestsUnaffected(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	fail := errors.New("boom")
	server := HandlerFunc(func(ctx context.Context, m frame.Message) error {
		if m.ID() == "2" {
			return fail
		}
		return ctx.Err()
	})
	d := CancelFilter(CancelOptions{})(Duplex{ToServer: server, ToClient: &recorder{}})
	is.NoErr(d.ToServer.Handle(ctx, cancelFor(`"2"`)))
	err := d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	is.True(errors.Is(err, fail)) // cancelling "2" leaves 2 alone
	is.NoErr(d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)))
}

func TestCancelFilterCancelBeforeRequest(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	h := newCancelHarness()
	is.NoErr(h.d.ToServer.Handle(ctx, cancelFor("4")))
	err := h.d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{}}`))
	is.True(errors.Is(err, frame.ErrCancelled))                   // no answer is due
	is.Equal(h.server.lines(), []string{cancelFor("4").String()}) // the overtaken request is never sent
}

func TestCancelFilterConcurrent(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	client := &recorder{}
	server := HandlerFunc(func(ctx context.Context, m frame.Message) error { return nil })
	d := CancelFilter(CancelOptions{})(Duplex{ToServer: server, ToClient: client})
	var wg sync.WaitGroup
	for i := range 50 {
		id := strconv.Itoa(i)
		wg.Go(func() {
			_ = d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`))
			_ = d.ToServer.Handle(ctx, cancelFor(id))
			_ = d.ToClient.Handle(ctx, responseFor(id))
			_ = d.ToClient.Handle(ctx, responseFor(`"`+id+`"`))
		})
	}
	wg.Wait()
	is.Equal(len(client.all()), 50) // every numeric id dropped, every string id passed
	for _, l := range client.lines() {
		is.True(strings.Contains(l, `"id":"`))
	}
}

func FuzzCancelledRequestID(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	f.Add(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a\"b"}}`)
	f.Add(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":null}}`)
	f.Add(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":[]}`)
	f.Add(`{"method":"notifications/cancelled","params":{"requestId":1e400}}`)
	f.Add(`[1,2]`)
	f.Add(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"requestId":2}}`)
	f.Add(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}}`)
	f.Fuzz(func(t *testing.T, line string) {
		m, err := frame.Parse([]byte(line))
		if err != nil {
			return
		}
		id, ok := cancelledRequestID(m)
		if !ok {
			return
		}
		p, err := frame.Parse([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{}}`))
		if err != nil || p.ID() != id {
			t.Fatalf("id %q from %q does not round-trip as an id", id, line)
		}
	})
}

// A server that ends a request's stream when it hears the cancel makes the
// request fail before the filter aborts it: still no answer is due.
func TestCancelFilterRequestFailingOnItsCancel(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	entered, ended, returned := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	server := HandlerFunc(func(ctx context.Context, m frame.Message) error {
		switch {
		case m.IsRequest():
			close(entered)
			<-ended
			return &frame.SendError{Sent: true, Err: frame.ErrStreamEnded}
		case m.Method() == cancelMethod:
			close(ended)               // the server ends the request's stream …
			is.True(<-returned != nil) // … and the request has failed before the cancel is through
		}
		return nil
	})
	d := CancelFilter(CancelOptions{})(Duplex{ToServer: HandlerFunc(func(ctx context.Context, m frame.Message) error {
		err := server.Handle(ctx, m)
		if m.IsRequest() {
			returned <- err
		}
		return err
	}), ToClient: Discard()})

	done := make(chan error, 1)
	go func() {
		done <- d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow"}}`))
	}()
	<-entered
	is.NoErr(d.ToServer.Handle(ctx, cancelFor("7")))
	is.True(errors.Is(<-done, frame.ErrCancelled)) // not the stream's error: no answer is due
}

// A request whose Handle goes on after its answer passed (the relay's call
// parked for input, answered input_required) is not aborted by a cancel:
// the client only drops what it has. The cancel is still recorded and
// forwarded, and a request not answered yet is still aborted.
func TestCancelFilterLeavesAnAnsweredRequestRunning(t *testing.T) {
	synctest.Test(t, testCancelFilterLeavesAnAnsweredRequestRunning)
}

func testCancelFilterLeavesAnAnsweredRequestRunning(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	client, server := &recorder{}, &recorder{}
	var f *cancelFilter
	release := make(chan struct{})
	inner := HandlerFunc(func(ctx context.Context, m frame.Message) error {
		if m.Kind() != frame.Request {
			return server.Handle(ctx, m)
		}
		if m.ID() == "1" {
			if err := f.toClient(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}`)); err != nil {
				return err
			}
		}
		select { // the server still runs it
		case <-release:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	f = newCancelFilter(CancelOptions{}, Duplex{ToServer: inner, ToClient: client})
	answered, waiting := make(chan error, 1), make(chan error, 1)
	go func() { answered <- f.toServer(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`)) }()
	go func() { waiting <- f.toServer(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"tools/call"}`)) }()
	synctest.Wait()
	is.True(f.inflightAnswered("1"))

	is.NoErr(f.toServer(ctx, cancelFor("1")))
	is.NoErr(f.toServer(ctx, cancelFor("2")))
	is.Equal(len(server.all()), 2)                    // both cancels forwarded
	is.True(errors.Is(<-waiting, frame.ErrCancelled)) // the unanswered one aborted
	close(release)
	is.NoErr(<-answered) // the answered one ran to its end
	is.Equal(len(client.all()), 1)
}

// inflightAnswered reports whether a request with id is in flight and
// answered.
func (f *cancelFilter) inflightAnswered(id frame.ID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	rs := f.inflight[id]
	return len(rs) == 1 && rs[0].answered
}
