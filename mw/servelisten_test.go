package mw

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// allCaps is an initialize result's capabilities advertising every kind
// a listen can ask for.
const allCaps = `{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true}}`

// listenChild stands for a session-era child behind ServeListen: it
// records what reaches it and answers resources/subscribe and
// resources/unsubscribe at once, as its reader would.
type listenChild struct {
	up  Late
	got chan frame.Message

	mu sync.Mutex
	// refuse lists URIs whose subscribe gets an error answer.
	refuse map[string]bool
	// hold, when set, makes the next subscribe wait for it to close.
	hold chan struct{}
}

func (c *listenChild) Handle(ctx context.Context, m frame.Message) error {
	c.got <- m
	switch m.Method() {
	case "resources/subscribe", "resources/unsubscribe":
		c.mu.Lock()
		refuse, hold := c.refuse[m.Get("params.uri").String()], c.hold
		c.hold = nil
		c.mu.Unlock()
		if hold != nil && m.Method() == "resources/subscribe" {
			<-hold
		}
		if refuse && m.Method() == "resources/subscribe" {
			return c.up.Handle(ctx, frame.ErrorResponse(m.ID(), frame.CodeMethodNotFound, "no subscriptions here"))
		}
		return c.up.Handle(ctx, frame.ResultResponse(m.ID(), []byte(`{}`)))
	}
	return nil
}

// next returns the next message that reached the child.
func (c *listenChild) next(t *testing.T) frame.Message {
	t.Helper()
	select {
	case m := <-c.got:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("nothing reached the child")
		return frame.Message{}
	}
}

// none fails when a message reached the child and was not taken.
func (c *listenChild) none(t *testing.T) {
	t.Helper()
	select {
	case m := <-c.got:
		t.Fatalf("the child got %s", m)
	default:
	}
}

// listenClient stands for the Router above ServeListen: it keeps what is
// handed client-bound. block, when set, holds each list_changed it is
// handed until the context ends, after saying so on entered.
type listenClient struct {
	got     chan frame.Message
	block   bool
	entered chan struct{}
}

func (c *listenClient) Handle(ctx context.Context, m frame.Message) error {
	if c.block && strings.HasSuffix(m.Method(), "/list_changed") {
		c.entered <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}
	c.got <- m
	return nil
}

// next returns the next message handed client-bound.
func (c *listenClient) next(t *testing.T) string {
	t.Helper()
	select {
	case m := <-c.got:
		return m.String()
	case <-time.After(5 * time.Second):
		t.Fatal("nothing reached the client")
		return ""
	}
}

// none fails when a message was handed client-bound and not taken.
func (c *listenClient) none(t *testing.T) {
	t.Helper()
	select {
	case m := <-c.got:
		t.Fatalf("the client got %s", m)
	default:
	}
}

// listenRig is ServeListen between a listenClient and a listenChild,
// for a child that answered initialize with caps.
type listenRig struct {
	ctx    context.Context
	conn   *Conn
	d      Duplex
	ctl    *ListenStreams
	child  *listenChild
	client *listenClient
	logs   *transporttest.SyncBuffer
}

func newListenRig(t *testing.T, caps string, maxListens ...int) *listenRig {
	t.Helper()
	conn := NewConn(EraSession)
	conn.Initialized(
		frame.MustParse(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"elicitation":{},"roots":{}},"clientInfo":{"name":"mcp-stdio","version":"1"}}}`),
		frame.MustParse(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"serverInfo":{"name":"child","version":"1"}}}`),
	)
	log, logs := testLogger()
	o := ServeListenOptions{Logger: log, Rand: zeros{}}
	if len(maxListens) > 0 {
		o.MaxListens = maxListens[0]
	}
	stage, ctl := ServeListen(o)
	r := &listenRig{
		ctx:    WithConn(context.Background(), conn),
		conn:   conn,
		ctl:    ctl,
		child:  &listenChild{got: make(chan frame.Message, 4096), refuse: map[string]bool{}},
		client: &listenClient{got: make(chan frame.Message, 4096), entered: make(chan struct{}, 1)},
		logs:   logs,
	}
	r.d = stage(Duplex{ToServer: r.child, ToClient: r.client})
	r.child.up.Bind(r.d.ToClient)
	t.Cleanup(func() { conn.Close(errors.New("test over")) })
	return r
}

// listen sends a subscriptions/listen under the minted-looking id n with
// the notifications filter, in the context of exchange x (none when nil).
func (r *listenRig) listen(n int, filter string, x Exchange) error {
	ctx := r.ctx
	if x != nil {
		ctx = WithExchange(ctx, x)
	}
	return r.d.ToServer.Handle(ctx, frame.MustParse(fmt.Sprintf(`{"jsonrpc":"2.0","id":"mcp-stdio/serve/%d","method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"notifications":%s}}`, n, filter)))
}

// cancel sends the Router's notifications/cancelled for listen n.
func (r *listenRig) cancel(t *testing.T, n int) {
	t.Helper()
	err := r.d.ToServer.Handle(r.ctx, frame.MustParse(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"mcp-stdio/serve/%d"}}`, n)))
	is.New(t).NoErr(err)
}

// fromChild hands line client-bound as the child's reader would.
func (r *listenRig) fromChild(t *testing.T, line string) {
	t.Helper()
	is.New(t).NoErr(r.d.ToClient.Handle(r.ctx, frame.MustParse(line)))
}

// ack is the acknowledgement of listen n honouring notifications.
func ack(n int, notifications string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":%s,"_meta":{"io.modelcontextprotocol/subscriptionId":"mcp-stdio/serve/%d"}}}`, notifications, n)
}

// stamped is a notification of method for listen n, with params' other
// members first.
func stamped(n int, method, params string) string {
	if params != "" {
		params += ","
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"%s","params":{%s"_meta":{"io.modelcontextprotocol/subscriptionId":"mcp-stdio/serve/%d"}}}`, method, params, n)
}

// orderedClient records, for each message handed client-bound, how many
// messages had reached the child by then.
type orderedClient struct {
	child *listenChild
	mu    sync.Mutex
	seen  []string
}

func (c *orderedClient) Handle(_ context.Context, m frame.Message) error {
	c.mu.Lock()
	c.seen = append(c.seen, fmt.Sprintf("%d %s", len(c.child.got), m))
	c.mu.Unlock()
	return nil
}

func TestServeListenAckFirstAndBeforeSubscribe(t *testing.T) {
	is := is.New(t)
	r := newListenRig(t, allCaps)
	oc := &orderedClient{child: r.child}
	stage, _ := ServeListen(ServeListenOptions{Rand: zeros{}})
	r.d = stage(Duplex{ToServer: r.child, ToClient: oc})
	r.child.up.Bind(r.d.ToClient)

	is.NoErr(r.listen(7, `{"toolsListChanged":true,"resourceSubscriptions":["file:///a"]}`, nil))
	sub := r.child.next(t) // the subscribe comes after the ack was handed on
	is.Equal(sub.String(), `{"jsonrpc":"2.0","id":"mcp-stdio/serve-listen/AAAAAAAAAAAAAAAA/1","method":"resources/subscribe","params":{"uri":"file:///a"}}`)
	oc.mu.Lock()
	defer oc.mu.Unlock()
	is.Equal(oc.seen, []string{
		`0 {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["file:///a"]},"_meta":{"io.modelcontextprotocol/subscriptionId":"mcp-stdio/serve/7"}}}`,
	}) // the ack, with nothing at the child yet; the subscribe's answer swallowed
}

func TestServeListenHonouredSubset(t *testing.T) {
	for _, tc := range []struct {
		name, caps, filter, want string
	}{
		{"all asked, all advertised", allCaps,
			`{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["u"]}`,
			`{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["u"]}`},
		{"only what is asked", allCaps, `{"promptsListChanged":true}`, `{"promptsListChanged":true}`},
		{"false is not asking", allCaps, `{"toolsListChanged":false,"promptsListChanged":"true"}`, `{}`},
		{"un-advertised kinds omitted", `{"tools":{"listChanged":true},"prompts":{},"resources":{"listChanged":false}}`,
			`{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["u"]}`,
			`{"toolsListChanged":true}`},
		{"subscriptions need resources.subscribe", `{"resources":{"listChanged":true}}`,
			`{"resourcesListChanged":true,"resourceSubscriptions":["u"]}`, `{"resourcesListChanged":true}`},
		{"no capabilities", `{}`, `{"toolsListChanged":true,"resourceSubscriptions":["u"]}`, `{}`},
		{"an empty list is honoured empty", allCaps, `{"resourceSubscriptions":[]}`, `{"resourceSubscriptions":[]}`},
		{"unknown members ignored", allCaps, `{"toolsListChanged":true,"future":true}`, `{"toolsListChanged":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			r := newListenRig(t, tc.caps)
			is.NoErr(r.listen(1, tc.filter, nil))
			is.Equal(r.client.next(t), ack(1, tc.want))
		})
	}
}

func TestServeListenNotificationsRequired(t *testing.T) {
	is := is.New(t)
	r := newListenRig(t, allCaps)
	is.NoErr(r.d.ToServer.Handle(r.ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","method":"subscriptions/listen","params":{}}`)))
	is.Equal(r.client.next(t), `{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","error":{"code":-32602,"message":"subscriptions/listen: params.notifications must be an object"}}`)
	r.child.none(t)
}

func TestServeListenResourceSubscriptionsSanitised(t *testing.T) {
	is := is.New(t)
	r := newListenRig(t, allCaps)
	is.NoErr(r.listen(1, `{"resourceSubscriptions":[1,"file:///a",null,"","file:///a","file:\/\/\/b",{"uri":"x"},"file:///A"]}`, nil))
	is.Equal(r.client.next(t), ack(1, `{"resourceSubscriptions":["file:///a","file:\/\/\/b","file:///A"]}`))
	var got []string
	for range 3 {
		got = append(got, r.child.next(t).Get("params.uri").Raw)
	}
	is.Equal(got, []string{`"file:///a"`, `"file:\/\/\/b"`, `"file:///A"`}) // each once, as the client spelt it
}

func TestServeListenResourceSubscriptionsCapped(t *testing.T) {
	is := is.New(t)
	r := newListenRig(t, allCaps)
	var uris, want []string
	for i := range MaxListenResourceSubscriptions + 10 {
		u := fmt.Sprintf(`"r:%d"`, i)
		uris = append(uris, u)
		if i == 3 {
			uris = append(uris, u) // a duplicate does not count
		}
		if i < MaxListenResourceSubscriptions {
			want = append(want, u)
		}
	}
	is.NoErr(r.listen(1, `{"resourceSubscriptions":[`+strings.Join(uris, ",")+`]}`, nil))
	is.Equal(r.client.next(t), ack(1, `{"resourceSubscriptions":[`+strings.Join(want, ",")+`]}`))
	for i := range MaxListenResourceSubscriptions {
		is.Equal(r.child.next(t).Get("params.uri").Raw, want[i])
	}
	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"r:256"}}`) // truncated: not honoured
	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"r:255"}}`)
	is.Equal(r.client.next(t), stamped(1, "notifications/resources/updated", `"uri":"r:255"`))
}

func TestServeListenFanOutByKind(t *testing.T) {
	is := is.New(t)
	r := newListenRig(t, allCaps)
	is.NoErr(r.listen(1, `{"toolsListChanged":true}`, nil))
	is.Equal(r.client.next(t), ack(1, `{"toolsListChanged":true}`))
	is.NoErr(r.listen(2, `{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true}`, nil))
	is.Equal(r.client.next(t), ack(2, `{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true}`))

	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}`)
	is.Equal(r.client.next(t), stamped(2, "notifications/prompts/list_changed", ""))
	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/resources/list_changed","params":{"_meta":{"k":1}}}`)
	is.Equal(r.client.next(t), `{"jsonrpc":"2.0","method":"notifications/resources/list_changed","params":{"_meta":{"k":1,"io.modelcontextprotocol/subscriptionId":"mcp-stdio/serve/2"}}}`)

	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`)
	got := []string{r.client.next(t), r.client.next(t)}
	if got[0] > got[1] {
		got[0], got[1] = got[1], got[0]
	}
	is.Equal(got, []string{stamped(1, "notifications/tools/list_changed", ""), stamped(2, "notifications/tools/list_changed", "")})

	// A log line is never put on a listen: it passes on as it came, to
	// the Router, which has nowhere to put it.
	msg := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`
	r.fromChild(t, msg)
	is.Equal(r.client.next(t), msg)
	// Nor does anything else the stage does not own change.
	other := `{"jsonrpc":"2.0","id":"mcp-stdio/serve/9","result":{"tools":[]}}`
	r.fromChild(t, other)
	is.Equal(r.client.next(t), other)
	r.client.none(t)
}

func TestServeListenSwallowsUnwantedChanges(t *testing.T) {
	is := is.New(t)
	r := newListenRig(t, allCaps)
	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"x"}}`)
	is.NoErr(r.listen(1, `{"promptsListChanged":true}`, nil))
	is.Equal(r.client.next(t), ack(1, `{"promptsListChanged":true}`))
	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	r.client.none(t)
}

func TestServeListenUpdatedByExactURI(t *testing.T) {
	is := is.New(t)
	r := newListenRig(t, allCaps)
	is.NoErr(r.listen(1, `{"resourceSubscriptions":["file:///a"]}`, nil))
	r.client.next(t)
	is.NoErr(r.listen(2, `{"resourcesListChanged":true,"resourceSubscriptions":["file:///a/","file:///b"]}`, nil))
	r.client.next(t)

	for _, uri := range []string{"file:///A", "file:///a/x", "file://a", "file:///b/"} {
		r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"`+uri+`"}}`)
	}
	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":["file:///a"]}}`)
	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"}}`)
	is.Equal(r.client.next(t), stamped(1, "notifications/resources/updated", `"uri":"file:///a"`))
	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///b","title":"B"}}`)
	is.Equal(r.client.next(t), stamped(2, "notifications/resources/updated", `"uri":"file:///b","title":"B"`))
	r.client.none(t)
}

func TestServeListenRefCountedSubscribe(t *testing.T) {
	is := is.New(t)
	r := newListenRig(t, allCaps)
	is.NoErr(r.listen(1, `{"resourceSubscriptions":["x","y"]}`, nil))
	r.client.next(t)
	is.Equal(r.child.next(t).String(), `{"jsonrpc":"2.0","id":"mcp-stdio/serve-listen/AAAAAAAAAAAAAAAA/1","method":"resources/subscribe","params":{"uri":"x"}}`)
	is.Equal(r.child.next(t).String(), `{"jsonrpc":"2.0","id":"mcp-stdio/serve-listen/AAAAAAAAAAAAAAAA/2","method":"resources/subscribe","params":{"uri":"y"}}`)
	is.NoErr(r.listen(2, `{"resourceSubscriptions":["x","z"]}`, nil))
	r.client.next(t)
	is.Equal(r.child.next(t).String(), `{"jsonrpc":"2.0","id":"mcp-stdio/serve-listen/AAAAAAAAAAAAAAAA/3","method":"resources/subscribe","params":{"uri":"z"}}`)

	r.cancel(t, 1) // x is still held by listen 2
	is.Equal(r.child.next(t).String(), `{"jsonrpc":"2.0","id":"mcp-stdio/serve-listen/AAAAAAAAAAAAAAAA/4","method":"resources/unsubscribe","params":{"uri":"y"}}`)
	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"y"}}`)
	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"x"}}`)
	is.Equal(r.client.next(t), stamped(2, "notifications/resources/updated", `"uri":"x"`)) // listen 1 gets nothing more

	r.cancel(t, 2)
	got := []string{r.child.next(t).Get("params.uri").Str, r.child.next(t).Get("params.uri").Str}
	is.Equal(got, []string{"x", "z"})
	r.cancel(t, 2) // again: not a listen any more, passed on
	is.Equal(r.child.next(t).Method(), "notifications/cancelled")
	r.child.none(t) // the answers were swallowed, the listens' cancels too
	r.client.none(t)
}

func TestServeListenTeardownRace(t *testing.T) {
	is := is.New(t)
	r := newListenRig(t, allCaps)
	hold := make(chan struct{})
	r.child.hold = hold
	is.NoErr(r.listen(1, `{"resourceSubscriptions":["x"]}`, nil))
	r.client.next(t)
	is.Equal(r.child.next(t).Get("params.uri").Str, "x") // held: the lock is taken
	is.NoErr(r.listen(2, `{"resourceSubscriptions":["y"]}`, nil))
	r.client.next(t)
	r.cancel(t, 2) // its subscribe and its release both wait
	close(hold)
	r.settle()
	// Either the release ran first and y was never subscribed, or the
	// subscribe did and the release undid it: never an unsubscribe alone.
	var ys []string
	for len(r.child.got) > 0 {
		ys = append(ys, r.child.next(t).Method())
	}
	if len(ys) > 0 {
		is.Equal(ys, []string{"resources/subscribe", "resources/unsubscribe"})
	}
	r.cancel(t, 1)
	m := r.child.next(t)
	is.Equal(m.Method(), "resources/unsubscribe")
	is.Equal(m.Get("params.uri").Str, "x")
	r.settle()
	r.child.none(t)
}

// settle waits for the goroutines of the rig's stage that take and let
// go of references.
func (r *listenRig) settle() {
	r.ctl.mu.Lock()
	defer r.ctl.mu.Unlock()
	for st := range r.ctl.stages {
		st.bg.Wait()
	}
}

func TestServeListenCap(t *testing.T) {
	is := is.New(t)
	r := newListenRig(t, allCaps, 4)
	for n := range 4 {
		is.NoErr(r.listen(n, `{"toolsListChanged":true}`, nil))
		r.client.next(t)
	}
	err := r.listen(9, `{"toolsListChanged":true}`, nil)
	var se *frame.StatusError
	is.True(errors.As(err, &se))
	is.Equal(se.Code, 503)
	is.Equal(se.Header.Get("Retry-After"), "1")
	is.Equal(string(se.Body), `{"jsonrpc":"2.0","id":"mcp-stdio/serve/9","error":{"code":-32603,"message":"this server already has 4 listeners, the most the gateway allows (--max-listens); try again later"}}`)
	is.True(strings.Contains(r.logs.String(), "raise --max-listens"))
	r.client.none(t) // no ack

	r.cancel(t, 0)
	is.NoErr(r.listen(10, `{"toolsListChanged":true}`, nil))
	is.Equal(r.client.next(t), ack(10, `{"toolsListChanged":true}`))
}

func TestServeListenOverflowEndsAbruptly(t *testing.T) {
	is := is.New(t)
	r := newListenRig(t, allCaps)
	r.client.block = true
	x := newPOST(true)
	is.NoErr(r.listen(1, `{"toolsListChanged":true,"resourceSubscriptions":["x"]}`, x))
	is.Equal(r.client.next(t), ack(1, `{"toolsListChanged":true,"resourceSubscriptions":["x"]}`))
	r.child.next(t) // subscribed

	change := `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`
	r.fromChild(t, change)
	<-r.client.entered // the delivery is stuck in the client
	for range ListenQueueSize {
		r.fromChild(t, change)
	}
	is.True(!x.isEnded()) // a full queue is not yet an overflow
	r.fromChild(t, change)
	is.True(x.isEnded()) // cut: no final frame
	is.Equal(r.child.next(t).Method(), "resources/unsubscribe")
	r.cancel(t, 1) // the Router's, once the exchange is over: swallowed
	r.fromChild(t, change)
	r.child.none(t)
	r.client.none(t)
	is.True(strings.Contains(r.logs.String(), "ended a listen whose client does not keep up"))
}

func TestServeListenChildDeathEndsAbruptly(t *testing.T) {
	is := is.New(t)
	r := newListenRig(t, allCaps)
	x := newPOST(true)
	is.NoErr(r.listen(1, `{"toolsListChanged":true,"resourceSubscriptions":["x"]}`, x))
	r.client.next(t)
	r.child.next(t)
	r.conn.Close(errors.New("the child exited"))
	is.True(x.isEnded())
	r.cancel(t, 1)  // the Router's: swallowed
	r.child.none(t) // no unsubscribe to a dead child, no cancel
	r.client.none(t)
}

func TestServeListenClientGone(t *testing.T) {
	is := is.New(t)
	r := newListenRig(t, allCaps)
	ctx, cancel := context.WithCancel(r.ctx)
	err := r.d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["x"]}}}`))
	is.NoErr(err)
	r.client.next(t)
	is.Equal(r.child.next(t).Method(), "resources/subscribe")
	cancel() // the client went away before the Router heard of it
	is.Equal(r.child.next(t).Method(), "resources/unsubscribe")
	r.cancel(t, 1) // then the Router's cancel: swallowed
	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"x"}}`)
	r.child.none(t)
	r.client.none(t)
}

func TestServeListenGracefulEnd(t *testing.T) {
	is := is.New(t)
	r := newListenRig(t, allCaps)
	x := newPOST(true)
	is.NoErr(r.listen(1, `{"toolsListChanged":true,"resourceSubscriptions":["x"]}`, x))
	is.Equal(r.client.next(t), ack(1, `{"toolsListChanged":true,"resourceSubscriptions":["x"]}`))
	r.child.next(t)
	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	is.Equal(r.client.next(t), stamped(1, "notifications/tools/list_changed", ""))

	is.NoErr(r.ctl.Close(context.Background()))
	is.Equal(r.client.next(t), `{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"mcp-stdio/serve/1"}}}`)
	is.True(!x.isEnded()) // the final response ends it, the Router's business
	is.Equal(r.child.next(t).Method(), "resources/unsubscribe")

	err := r.listen(2, `{"toolsListChanged":true}`, nil)
	var se *frame.StatusError
	is.True(errors.As(err, &se))
	is.Equal(se.Code, 503)
	r.conn.Close(errors.New("the child was stopped")) // the first ending won
	r.client.none(t)
	is.True(!x.isEnded())
}

func TestServeListenGracefulEndTimesOut(t *testing.T) {
	is := is.New(t)
	r := newListenRig(t, allCaps)
	r.client.block = true
	x := newPOST(true)
	is.NoErr(r.listen(1, `{"toolsListChanged":true}`, x))
	r.client.next(t)
	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	<-r.client.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	is.Equal(r.ctl.Close(ctx), context.Canceled)
	is.True(x.isEnded()) // cut when the drain ran out
	r.client.none(t)
}

func TestServeListenSubscribeFailureLoggedOnce(t *testing.T) {
	is := is.New(t)
	r := newListenRig(t, allCaps)
	r.child.refuse["x"] = true
	is.NoErr(r.listen(1, `{"resourceSubscriptions":["x","y"]}`, nil))
	is.Equal(r.client.next(t), ack(1, `{"resourceSubscriptions":["x","y"]}`)) // the reply first
	r.child.next(t)
	r.child.next(t)
	is.NoErr(r.listen(2, `{"resourceSubscriptions":["x"]}`, nil)) // x held: no new subscribe
	r.client.next(t)

	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"x"}}`)
	got := []string{r.client.next(t), r.client.next(t)} // x is still honoured
	if got[0] > got[1] {
		got[0], got[1] = got[1], got[0]
	}
	is.Equal(got, []string{stamped(1, "notifications/resources/updated", `"uri":"x"`), stamped(2, "notifications/resources/updated", `"uri":"x"`)})
	is.Equal(strings.Count(r.logs.String(), "the child did not subscribe"), 1)
	is.True(strings.Contains(r.logs.String(), `listen="\"mcp-stdio/serve/1\"" uri=x`))

	// Every listen let go, then a new one: a new subscribe fails, and is
	// the new listen's to log.
	r.cancel(t, 1)
	r.cancel(t, 2)
	r.settle()
	is.Equal(r.child.next(t).Method(), "resources/unsubscribe")
	is.Equal(r.child.next(t).Method(), "resources/unsubscribe")
	is.NoErr(r.listen(3, `{"resourceSubscriptions":["x"]}`, nil))
	r.client.next(t)
	is.Equal(r.child.next(t).Method(), "resources/subscribe")
	r.settle()
	is.Equal(strings.Count(r.logs.String(), "the child did not subscribe"), 2)
}

func TestServeListenPassesTheRest(t *testing.T) {
	is := is.New(t)
	r := newListenRig(t, allCaps)
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"mcp-stdio/serve/1"}}`,
	} {
		is.NoErr(r.d.ToServer.Handle(r.ctx, frame.MustParse(line)))
		is.Equal(r.child.next(t).String(), line)
	}
	// A client's own subscribe, and its answer, are not the stage's.
	sub := `{"jsonrpc":"2.0","id":"mcp-stdio/serve/2","method":"resources/subscribe","params":{"uri":"x"}}`
	is.NoErr(r.d.ToServer.Handle(r.ctx, frame.MustParse(sub)))
	is.Equal(r.child.next(t).String(), sub)
	is.Equal(r.client.next(t), `{"jsonrpc":"2.0","id":"mcp-stdio/serve/2","result":{}}`)
	r.client.none(t)
}
