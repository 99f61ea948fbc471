package mw

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// fakeExchange is an Exchange in memory. Like the transport's writer,
// lines takes what is queued, naming the events NumberEvents asks it to
// name as it takes them; finish reports what was never taken.
type fakeExchange struct {
	method string
	sse    bool

	mu    sync.Mutex
	queue []fakeItem // sent, not taken yet
	taken []string   // message bytes, prefixed by "<id> " for an event id
	ended bool
	over  bool
	busy  bool // refuse anything but a response with frame.ErrBusy
	// overOnLast makes SendLast write and finish the exchange before it
	// returns, as a quick transport may (on a goroutine of its own).
	overOnLast bool
	hold       bool
	number     func(frame.Message) string
	onDone     []func([]frame.Message)
	// prime is the priming event, shown as the first line taken.
	prime  string
	primed bool // taken
}

type fakeItem struct {
	m  frame.Message
	id string
}

func newPOST(sse bool) *fakeExchange { return &fakeExchange{method: http.MethodPost, sse: sse} }

func newGET() *fakeExchange { return &fakeExchange{method: http.MethodGet, sse: true} }

func (x *fakeExchange) Method() string    { return x.method }
func (x *fakeExchange) EventStream() bool { return x.sse }

func (x *fakeExchange) Send(_ context.Context, m frame.Message, id string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case x.over || x.ended:
		return frame.ErrExchangeOver
	case x.busy && !m.Kind().IsResponse():
		return frame.ErrBusy
	}
	x.queue = append(x.queue, fakeItem{m: m, id: id})
	return nil
}

func (x *fakeExchange) SendLast(ctx context.Context, m frame.Message, id string) error {
	if err := x.Send(ctx, m, id); err != nil {
		return err
	}
	x.End()
	if x.overOnLast {
		x.lines()
		done := make(chan struct{})
		go func() {
			defer close(done)
			x.finish()
		}()
		<-done
	}
	return nil
}

func (x *fakeExchange) End() {
	x.mu.Lock()
	x.ended = true
	x.mu.Unlock()
}

func (x *fakeExchange) OnDone(f func([]frame.Message)) {
	x.mu.Lock()
	if !x.over {
		x.onDone = append(x.onDone, f)
		x.mu.Unlock()
		return
	}
	x.mu.Unlock()
	f(nil)
}

func (x *fakeExchange) PreferJSON() {}

func (x *fakeExchange) HoldHeader() {
	x.mu.Lock()
	x.hold = true
	x.mu.Unlock()
}

func (x *fakeExchange) NumberEvents(f func(frame.Message) string) {
	x.mu.Lock()
	x.number = f
	x.mu.Unlock()
}

func (x *fakeExchange) Prime(eventID string, retry time.Duration) {
	x.mu.Lock()
	x.prime = eventID + " prime"
	if retry > 0 {
		x.prime += " retry " + retry.String()
	}
	x.mu.Unlock()
}

func (x *fakeExchange) Cut() []frame.Message {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.over {
		return nil
	}
	var back []frame.Message
	for _, it := range x.queue {
		back = append(back, it.m)
	}
	x.queue = nil
	x.ended = true
	return back
}

// lines takes what is queued and returns everything taken so far: the
// priming event first ("<id> prime retry <d>"), then each message, after
// its event id if it has one.
func (x *fakeExchange) lines() []string {
	x.mu.Lock()
	items, number := x.queue, x.number
	x.queue = nil
	if x.prime != "" && !x.primed {
		x.taken = append(x.taken, x.prime)
		x.primed = true
	}
	x.mu.Unlock()
	for _, it := range items {
		if it.id == "" && number != nil {
			it.id = number(it.m) // as the writer does: no lock of ours held
		}
		line := it.m.String()
		if it.id != "" {
			line = it.id + " " + line
		}
		x.mu.Lock()
		x.taken = append(x.taken, line)
		x.mu.Unlock()
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]string(nil), x.taken...)
}

// firstHeader returns the side channel of the first message sent.
func (x *fakeExchange) firstHeader() http.Header {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.queue) == 0 {
		return nil
	}
	return x.queue[0].m.Header()
}

// finish makes the exchange over; what was never taken is reported
// unsent.
func (x *fakeExchange) finish() { x.goneUnheard()() }

// goneUnheard makes the exchange over (its client gone) and returns the
// function that runs its OnDone functions: in between, the exchange
// refuses every send while nobody has heard that it is over yet.
func (x *fakeExchange) goneUnheard() (report func()) {
	x.mu.Lock()
	x.over = true
	var unsent []frame.Message
	for _, it := range x.queue {
		unsent = append(unsent, it.m)
	}
	x.queue = nil
	hooks := x.onDone
	x.onDone = nil
	x.mu.Unlock()
	return func() {
		for _, f := range hooks {
			f(unsent)
		}
	}
}

func (x *fakeExchange) isEnded() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.ended
}

func (x *fakeExchange) setBusy(b bool) {
	x.mu.Lock()
	x.busy = b
	x.mu.Unlock()
}

// on returns ctx carrying x, as serve's transport hands a request over.
func on(ctx context.Context, x Exchange) context.Context { return WithExchange(ctx, x) }

// hand hands entry one message in ctx on a fresh exchange of method, as
// serve's transport would: body ("" for none) naming session sid in
// Mcp-Session-Id ("" for none). The exchange is returned as it is.
func hand(ctx context.Context, entry Handler, method, sid, body string) (*fakeExchange, error) {
	x := &fakeExchange{method: method, sse: true}
	var m frame.Message
	if body != "" {
		m = frame.MustParse(body)
	}
	if sid != "" {
		m = m.WithHeader(frame.HeaderSessionID, sid)
	}
	return x, entry.Handle(on(ctx, x), m)
}

// settle reads and finishes x unless it is a GET's, left open.
func settle(x *fakeExchange) {
	if x.method != http.MethodGet {
		x.lines()
		x.finish()
	}
}
