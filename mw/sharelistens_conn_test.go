package mw

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	"go.uber.org/goleak"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// connChild is a server that serves listens itself, over one
// connection. perConn models the Go SDK's server: one listen per kind of
// notification on the connection (a later listen asking for a kind takes
// it), and the end of any listen drops them all. Otherwise each listen
// has its own kinds, and its end drops only them.
type connChild struct {
	perConn  bool
	hold     bool // it answers a cancel only when released
	out      Handler
	in       chan childItem
	done     chan struct{}
	listened chan frame.ID // each listen it gets

	mu      sync.Mutex
	open    map[frame.ID]listenFilter // its listens not ended
	byKind  map[string]frame.ID       // perConn: the listen each kind goes to
	maxOpen int                       // the most listens open at once
	listens []frame.Message           // the listen requests it got
	held    []frame.ID                // cancelled listens not answered yet
}

type childItem struct {
	m  frame.Message
	fn func()
}

// newConnChild starts the child behind a ShareListens built with o; it
// stops with the test, which then checks that no goroutine of the stage
// (or the child) is left.
func newConnChild(t *testing.T, perConn bool, o ShareListensOptions) (*shareRig, *connChild) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	o.Rand = zeros{}
	stage, ctl := ShareListens(o)
	c := &connChild{perConn: perConn, in: make(chan childItem, 4096), done: make(chan struct{}), listened: make(chan frame.ID, 4096),
		open: make(map[frame.ID]listenFilter), byKind: make(map[string]frame.ID)}
	r := &shareRig{ctl: ctl, conn: NewConn(EraStateless), client: newChanSink()}
	r.ctx = WithConn(context.Background(), r.conn)
	r.d = stage(Duplex{ToServer: HandlerFunc(func(_ context.Context, m frame.Message) error {
		c.in <- childItem{m: m}
		return nil
	}), ToClient: r.client})
	c.out = r.d.ToClient
	go c.run(r.ctx)
	t.Cleanup(func() {
		close(c.in)
		<-c.done
		r.conn.Close(errors.New("test over"))
	})
	return r, c
}

func (c *connChild) run(ctx context.Context) {
	defer close(c.done)
	for it := range c.in {
		if it.fn != nil {
			it.fn()
			continue
		}
		c.take(ctx, it.m)
	}
}

// sync returns once the child has taken everything sent to it before.
func (c *connChild) sync() {
	done := make(chan struct{})
	c.in <- childItem{fn: func() { close(done) }}
	<-done
}

// change has the child's kind ("tools", "prompts") change.
func (c *connChild) change(ctx context.Context, kind string) {
	c.in <- childItem{fn: func() {
		c.mu.Lock()
		var to []frame.ID
		if c.perConn {
			if id, ok := c.byKind[kind]; ok {
				to = append(to, id)
			}
		} else {
			for id, f := range c.open {
				if _, ok := f.kind(kind + "ListChanged"); ok {
					to = append(to, id)
				}
			}
			slices.Sort(to)
		}
		c.mu.Unlock()
		for _, id := range to {
			_ = c.out.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/`+kind+`/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":`+string(id)+`}}}`))
		}
	}}
}

func (c *connChild) take(ctx context.Context, m frame.Message) {
	switch {
	case m.Method() == listenMethod:
		id := m.ID()
		f := parseFilter(m.Get("params.notifications"))
		c.listened <- id
		c.mu.Lock()
		c.listens = append(c.listens, m)
		if f.hasURI("bad") { // as the Go SDK's: the kinds are taken, the subscribe fails, the listen ends
			if c.perConn {
				clear(c.byKind)
			}
			c.mu.Unlock()
			_ = c.out.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":`+string(id)+`,"error":{"code":-32602,"message":"no such resource"}}`))
			return
		}
		c.open[id] = f
		c.maxOpen = max(c.maxOpen, len(c.open))
		if c.perConn {
			for _, k := range f.kinds {
				c.byKind[strings.TrimSuffix(k.name, "ListChanged")] = id
			}
		}
		c.mu.Unlock()
		_ = c.out.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":`+m.Get("params.notifications").Raw+`,"_meta":{"io.modelcontextprotocol/subscriptionId":`+string(id)+`}}}`))
	case m.Method() == cancelMethod:
		id, _ := cancelledRequestID(m)
		c.mu.Lock()
		_, ok := c.open[id]
		delete(c.open, id)
		if ok && c.perConn {
			clear(c.byKind)
		}
		if ok && c.hold {
			c.held = append(c.held, id)
			ok = false
		}
		c.mu.Unlock()
		if ok {
			c.answer(ctx, id)
		}
	}
}

// answer sends the final result of listen id.
func (c *connChild) answer(ctx context.Context, id frame.ID) {
	_ = c.out.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":`+string(id)+`}}}`))
}

// release has the child answer the cancels it held.
func (c *connChild) release(ctx context.Context) {
	c.in <- childItem{fn: func() {
		c.mu.Lock()
		held := c.held
		c.held = nil
		c.mu.Unlock()
		for _, id := range held {
			c.answer(ctx, id)
		}
	}}
}

// nextListen returns the id of the next listen the child gets.
func (c *connChild) nextListen(t *testing.T) frame.ID {
	t.Helper()
	select {
	case id := <-c.listened:
		return id
	case <-time.After(5 * time.Second):
		t.Fatal("the child got no listen")
		return ""
	}
}

// noListen checks that the child has got no listen since nextListen.
func (c *connChild) noListen(t *testing.T) {
	t.Helper()
	c.sync()
	select {
	case id := <-c.listened:
		t.Fatalf("the child got listen %s", id)
	default:
	}
}

// gotFrames is what clients got, by listen, as words: "ack <its
// notifications>", "tools", "prompts", "end".
type gotFrames map[string][]string

func (g gotFrames) add(m frame.Message) {
	key := m.Get(mcp.ParamsSubscriptionID).Str
	what := strings.TrimSuffix(strings.TrimPrefix(m.Method(), "notifications/"), "/list_changed")
	switch {
	case m.Kind().IsResponse():
		key, what = m.Get("id").Str, "end"
	case m.Method() == listenAckMethod:
		what = "ack " + m.Get("params.notifications").Raw
	}
	g[key] = append(g[key], what)
}

// read adds the frames the clients get until n came, or until listen l
// has n frames when l is given.
func (r *shareRig) read(t *testing.T, g gotFrames, n int, l ...string) {
	t.Helper()
	if len(l) > 0 {
		for len(g[l[0]]) < n {
			g.add(r.client.next(t))
		}
		return
	}
	for range n {
		g.add(r.client.next(t))
	}
}

// finish closes every listen and adds all the clients got since.
func (r *shareRig) finish(t *testing.T, g gotFrames) {
	t.Helper()
	if err := r.ctl.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case m := <-r.client.got:
			g.add(m)
		default:
			return
		}
	}
}

func (r *shareRig) cancel(t *testing.T, l string) {
	t.Helper()
	if err := r.d.ToServer.Handle(r.ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"`+l+`"}}`)); err != nil {
		t.Fatal(err)
	}
}

const (
	promptsOnly  = `{"promptsListChanged":true}`
	toolsPrompts = `{"toolsListChanged":true,"promptsListChanged":true}`
)

// One client's listen ending does not silence another's, on a child that
// keeps listens per connection (the Go SDK's server) or per listen,
// whichever listen came first; and a listen asking for a kind another
// already asks for does not take it from the other. Each client gets each
// change it asked for once, and its own acknowledgement.
func TestShareListensOneEndingKeepsTheOthers(t *testing.T) {
	for _, perConn := range []bool{true, false} {
		t.Run(fmt.Sprint("perConn=", perConn), func(t *testing.T) {
			for _, tc := range []struct {
				name      string
				first     string // asks for it, then
				second    string // asks for it; then
				leaves    string // "a" or "b" leaves, and
				stays     string // the other's
				change    string // kind changes
				ackFirst  string
				ackSecond string
			}{
				{"the first leaves", promptsOnly, toolsOnly, "a", "b", "tools", promptsOnly, toolsOnly},
				{"the second leaves", toolsOnly, promptsOnly, "b", "a", "tools", toolsOnly, promptsOnly},
				{"a wider second leaves", toolsOnly, toolsPrompts, "b", "a", "tools", toolsOnly, `{"toolsListChanged":true,"promptsListChanged":true}`},
				{"a wider first leaves", toolsPrompts, toolsOnly, "a", "b", "tools", toolsPrompts, toolsOnly},
			} {
				t.Run(tc.name, func(t *testing.T) {
					is := is.New(t)
					r, c := newConnChild(t, perConn, ShareListensOptions{})
					is.NoErr(r.listen("a", tc.first))
					c.sync()
					is.NoErr(r.listen("b", tc.second))
					c.sync()
					c.change(r.ctx, "tools") // both listening
					c.sync()
					got := gotFrames{}
					r.read(t, got, 2+strings.Count(tc.first+tc.second, "tools"))
					r.cancel(t, tc.leaves)
					c.sync()
					c.change(r.ctx, tc.change)
					c.sync()
					r.finish(t, got)
					acks := map[string]string{"a": "ack " + tc.ackFirst, "b": "ack " + tc.ackSecond}
					asks := map[string]string{"a": tc.first, "b": tc.second}
					want := []string{acks[tc.stays]}
					if strings.Contains(asks[tc.stays], "tools") {
						want = append(want, "tools")
					}
					want = append(want, "tools", "end")
					is.Equal(got[tc.stays], want) // the one that stays
					want = []string{acks[tc.leaves]}
					if strings.Contains(asks[tc.leaves], "tools") {
						want = append(want, "tools")
					}
					is.Equal(got[tc.leaves], want) // the one that left: nothing after
				})
			}
		})
	}
}

// A listen sent to the child after the stage cancelled every listen
// there waits until the child has ended them, so that their ends cannot
// drop it; at most ListenDrainWait when the child does not answer.
func TestShareListensWaitsForCancelledListens(t *testing.T) {
	is := is.New(t)
	timers := &manualTimers{}
	r, c := newConnChild(t, true, ShareListensOptions{AfterFunc: timers.AfterFunc})
	c.hold = true
	is.NoErr(r.listen("a", toolsOnly))
	first := c.nextListen(t)
	r.cancel(t, "a") // the last: the child's listen is cancelled
	is.NoErr(r.listen("b", toolsOnly))
	c.noListen(t) // b waits for the end of a's
	c.release(r.ctx)
	second := c.nextListen(t)
	is.True(second != first)
	c.sync()
	c.change(r.ctx, "tools")
	c.sync()
	got := gotFrames{}
	r.read(t, got, 2, "b")
	is.Equal(got["b"], []string{"ack " + toolsOnly, "tools"})

	r.cancel(t, "b")
	is.NoErr(r.listen("c", promptsOnly))
	c.noListen(t)
	timers.fire() // the child never answers: c goes after ListenDrainWait
	c.nextListen(t)
	c.sync()
	c.change(r.ctx, "prompts")
	c.sync()
	r.read(t, got, 2, "c")
	is.Equal(got["c"], []string{"ack " + promptsOnly, "prompts"})
	c.release(r.ctx) // a late end of a cancelled listen changes nothing
	c.sync()
	c.change(r.ctx, "prompts")
	c.sync()
	r.finish(t, got)
	is.Equal(got["c"], []string{"ack " + promptsOnly, "prompts", "prompts", "end"})
}

// A client asking for ever new URIs while another listens does not pile
// listens onto the child: beyond MaxParkedListens parked there, the stage
// cancels all and opens one again, and the other client keeps getting its
// events, on either kind of child.
func TestShareListensBoundsParkedListens(t *testing.T) {
	for _, perConn := range []bool{true, false} {
		t.Run(fmt.Sprint("perConn=", perConn), func(t *testing.T) {
			is := is.New(t)
			timers := &manualTimers{}
			r, c := newConnChild(t, perConn, ShareListensOptions{AfterFunc: timers.AfterFunc})
			c.hold = true // nothing drains until the timer fires
			is.NoErr(r.listen("k", toolsOnly))
			c.nextListen(t)
			for i := range MaxParkedListens + 1 {
				x := fmt.Sprint("x", i)
				is.NoErr(r.listen(x, `{"resourceSubscriptions":["file:///`+x+`"]}`))
				c.sync()
				r.cancel(t, x)
			}
			c.mu.Lock()
			is.True(c.maxOpen <= MaxParkedListens+1) // the parked ones and the current one
			is.Equal(len(c.open), 0)                 // the reset cancelled them all
			n := len(c.listens)
			c.mu.Unlock()
			is.Equal(n, MaxParkedListens+1)
			timers.fire()
			c.sync()
			c.mu.Lock()
			is.Equal(len(c.open), 1) // opened again
			is.True(strings.HasPrefix(c.listens[len(c.listens)-1].Get("params.notifications").Raw, `{"toolsListChanged":true`))
			c.mu.Unlock()
			c.change(r.ctx, "tools")
			c.sync()
			got := gotFrames{}
			r.finish(t, got)
			is.Equal(got["k"], []string{"ack " + toolsOnly, "tools", "end"})
		})
	}
}

// A listen that makes the child's fail (here a URI it refuses, which on
// the Go SDK's server also drops the connection's other listens) gets the
// error; the listens acknowledged before keep being served.
func TestShareListensWideningFails(t *testing.T) {
	for _, perConn := range []bool{true, false} {
		t.Run(fmt.Sprint("perConn=", perConn), func(t *testing.T) {
			is := is.New(t)
			r, c := newConnChild(t, perConn, ShareListensOptions{})
			is.NoErr(r.listen("a", toolsOnly))
			c.sync()
			is.NoErr(r.listen("b", `{"resourceSubscriptions":["bad"]}`))
			c.sync()
			got := gotFrames{}
			r.read(t, got, 2)
			is.Equal(got["b"], []string{"end"})
			for range 3 { // a's, a's and b's, a's again
				c.nextListen(t)
			}
			c.sync()
			c.change(r.ctx, "tools")
			c.sync()
			r.finish(t, got)
			is.Equal(got["a"], []string{"ack " + toolsOnly, "tools", "end"})
			c.mu.Lock()
			is.Equal(len(c.listens), 3) // a's, a's and b's, a's again
			c.mu.Unlock()
		})
	}
}
