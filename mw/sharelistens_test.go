package mw

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// chanSink takes the messages handed to it, for a test to read in order.
type chanSink struct{ got chan frame.Message }

func newChanSink() *chanSink { return &chanSink{got: make(chan frame.Message, 4096)} }

func (c *chanSink) Handle(_ context.Context, m frame.Message) error {
	c.got <- m
	return nil
}

func (c *chanSink) next(t *testing.T) frame.Message {
	t.Helper()
	select {
	case m := <-c.got:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("nothing came")
		return frame.Message{}
	}
}

func (c *chanSink) none(t *testing.T) {
	t.Helper()
	select {
	case m := <-c.got:
		t.Fatalf("unexpected %s", m)
	default:
	}
}

// shareRig is ShareListens between a client side and a dual-era child.
type shareRig struct {
	d      Duplex
	ctl    *SharedListens
	conn   *Conn
	ctx    context.Context
	child  *chanSink
	client *chanSink
}

func newShareRig(t *testing.T, max int) *shareRig {
	t.Helper()
	stage, ctl := ShareListens(ShareListensOptions{MaxListens: max, Rand: zeros{}})
	r := &shareRig{ctl: ctl, conn: NewConn(EraStateless), child: newChanSink(), client: newChanSink()}
	r.ctx = WithConn(context.Background(), r.conn)
	r.d = stage(Duplex{ToServer: r.child, ToClient: r.client})
	t.Cleanup(func() {
		r.conn.Close(errors.New("test over"))
	})
	return r
}

const (
	upID0      = `"mcp-stdio/shared-listen/AAAAAAAAAAAAAAAA/1"`
	toolsOnly  = `{"toolsListChanged":true}`
	listenMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"mcp-stdio/serve-progress/x/1"}`
)

// listen sends listen L (a router-minted id, as a string) asking for
// notifications.
func (r *shareRig) listen(l, notifications string) error {
	return r.d.ToServer.Handle(r.ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"`+l+`","method":"subscriptions/listen","params":{"notifications":`+notifications+`,`+listenMeta+`}}`))
}

// fromChild has the child write m.
func (r *shareRig) fromChild(t *testing.T, m string) {
	t.Helper()
	if err := r.d.ToClient.Handle(r.ctx, frame.MustParse(m)); err != nil {
		t.Fatal(err)
	}
}

// byListen reads n messages client-bound and returns them by the
// subscription id (or response id) they carry.
func (r *shareRig) byListen(t *testing.T, n int) map[string]frame.Message {
	t.Helper()
	out := make(map[string]frame.Message, n)
	for range n {
		m := r.client.next(t)
		key := m.Get(mcp.ParamsSubscriptionID).Str
		if m.Kind().IsResponse() {
			key = m.Get("id").Str
		}
		if _, dup := out[key]; dup {
			t.Fatalf("two messages for %s", key)
		}
		out[key] = m
	}
	return out
}

func shareAck(sid string) string {
	return `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":` + sid + `}}}`
}

// Listens asking for the same notifications share one listen on the
// child: it sees one request, without the progress token; each listen gets
// its own ack and its own copy of every event, under its own id, and one
// that joins after the ack gets it at once.
func TestShareListensOneListenOnTheChild(t *testing.T) {
	is := is.New(t)
	r := newShareRig(t, 0)
	const n = 300
	for i := range n {
		is.NoErr(r.listen(fmt.Sprint("L", i), toolsOnly))
	}
	up := r.child.next(t)
	is.Equal(up.String(), `{"jsonrpc":"2.0","id":`+upID0+`,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	r.child.none(t) // one listen for the 300

	r.fromChild(t, shareAck(upID0))
	acks := r.byListen(t, n)
	for i := range n {
		l := fmt.Sprint("L", i)
		is.Equal(acks[l].String(), shareAck(`"`+l+`"`))
	}
	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":`+upID0+`}}}`)
	events := r.byListen(t, n)
	for i := range n {
		l := fmt.Sprint("L", i)
		is.Equal(events[l].String(), `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"`+l+`"}}}`)
	}

	is.NoErr(r.listen("late", `{"promptsListChanged":false,"toolsListChanged":true}`)) // the same, spelled otherwise
	is.Equal(r.client.next(t).String(), shareAck(`"late"`))
	r.child.none(t)

	is.NoErr(r.listen("other", `{"promptsListChanged":true}`)) // another filter: another listen on the child
	other := r.child.next(t)
	is.Equal(other.ID(), frame.ID(`"mcp-stdio/shared-listen/AAAAAAAAAAAAAAAA/2"`))
	r.client.none(t)
}

// A listen beyond MaxListens is refused with 503, Retry-After and an
// error that names the bound; the child sees nothing of it. One that
// leaves makes room.
func TestShareListensCap(t *testing.T) {
	is := is.New(t)
	r := newShareRig(t, 5)
	for i := range 5 {
		is.NoErr(r.listen(fmt.Sprint("L", i), toolsOnly))
	}
	r.child.next(t)
	err := r.listen("L5", toolsOnly)
	var st *frame.StatusError
	is.True(errors.As(err, &st))
	is.Equal(st.Code, http.StatusServiceUnavailable)
	is.Equal(st.Header.Get("Retry-After"), "1")
	is.Equal(string(st.Body), `{"jsonrpc":"2.0","id":"L5","error":{"code":-32603,"message":"this server already has 5 listeners, the most the gateway allows (--max-listens); try again later"}}`)
	r.child.none(t)

	is.NoErr(r.d.ToServer.Handle(r.ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L0"}}`)))
	r.child.none(t) // swallowed: the child never saw L0
	is.NoErr(r.listen("L5", toolsOnly))
}

// When the last listen sharing the child's leaves, the child's listen is
// cancelled; frames that still come for it are dropped, and the next
// listen opens another.
func TestShareListensCancelsWhenTheLastLeaves(t *testing.T) {
	is := is.New(t)
	r := newShareRig(t, 0)
	cancel := func(l string) {
		is.NoErr(r.d.ToServer.Handle(r.ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"`+l+`"}}`)))
	}
	is.NoErr(r.listen("a", toolsOnly))
	is.NoErr(r.listen("b", toolsOnly))
	r.child.next(t)
	cancel("a")
	r.child.none(t)
	cancel("b")
	is.Equal(r.child.next(t).String(), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+upID0+`,"reason":"no client listens any more"}}`)
	r.fromChild(t, shareAck(upID0))
	r.fromChild(t, `{"jsonrpc":"2.0","id":`+upID0+`,"result":{"resultType":"complete"}}`)
	r.client.none(t)
	is.NoErr(r.listen("c", toolsOnly))
	is.Equal(r.child.next(t).ID(), frame.ID(`"mcp-stdio/shared-listen/AAAAAAAAAAAAAAAA/2"`))
}

// The child's answer to its listen ends every listen sharing it, each
// with the answer under its own id: an error before the ack too.
func TestShareListensChildEndsItsListen(t *testing.T) {
	is := is.New(t)
	r := newShareRig(t, 0)
	is.NoErr(r.listen("a", toolsOnly))
	is.NoErr(r.listen("b", toolsOnly))
	r.child.next(t)
	r.fromChild(t, `{"jsonrpc":"2.0","id":`+upID0+`,"error":{"code":-32602,"message":"no"}}`)
	got := r.byListen(t, 2)
	is.Equal(got[`a`].String(), `{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"no"}}`)
	is.Equal(got[`b`].String(), `{"jsonrpc":"2.0","id":"b","error":{"code":-32602,"message":"no"}}`)

	is.NoErr(r.listen("c", toolsOnly))
	up := r.child.next(t).ID()
	r.fromChild(t, shareAck(string(up)))
	is.Equal(r.client.next(t).String(), shareAck(`"c"`))
	r.fromChild(t, `{"jsonrpc":"2.0","id":`+string(up)+`,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":`+string(up)+`}}}`)
	is.Equal(r.client.next(t).String(), `{"jsonrpc":"2.0","id":"c","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"c"}}}`)
	// The router's cancel after the end is swallowed.
	is.NoErr(r.d.ToServer.Handle(r.ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c"}}`)))
	r.child.none(t)
}

// Close ends every listen with its final frame and cancels the child's
// listens; later listens are refused.
func TestShareListensClose(t *testing.T) {
	is := is.New(t)
	r := newShareRig(t, 0)
	is.NoErr(r.listen("a", toolsOnly))
	is.NoErr(r.listen("b", toolsOnly))
	r.child.next(t)
	r.fromChild(t, shareAck(upID0))
	r.byListen(t, 2)
	is.NoErr(r.ctl.Close(context.Background()))
	got := r.byListen(t, 2)
	for _, l := range []string{"a", "b"} {
		is.Equal(got[l].String(), `{"jsonrpc":"2.0","id":"`+l+`","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"`+l+`"}}}`)
	}
	is.Equal(r.child.next(t).String(), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+upID0+`,"reason":"the gateway is shutting down"}}`)
	var st *frame.StatusError
	is.True(errors.As(r.listen("c", toolsOnly), &st))
	is.Equal(st.Code, http.StatusServiceUnavailable)
	is.Equal(st.Header.Get("Retry-After"), "1")
	is.NoErr(r.ctl.Close(context.Background())) // again: nothing left
	r.client.none(t)
}

// A child that exits takes its listens with it (the router answers
// them); later listens are refused until the pool starts another child.
func TestShareListensForgetsAnExitedChild(t *testing.T) {
	is := is.New(t)
	r := newShareRig(t, 0)
	is.NoErr(r.listen("a", toolsOnly))
	r.child.next(t)
	r.conn.Close(errors.New("exited"))
	var st *frame.StatusError
	is.True(errors.As(r.listen("b", toolsOnly), &st))
	is.Equal(st.Code, http.StatusServiceUnavailable)
	is.NoErr(r.ctl.Close(context.Background()))
	r.client.none(t)
	r.child.none(t)
}

// Other messages pass both ways untouched.
func TestShareListensPassesTheRest(t *testing.T) {
	is := is.New(t)
	r := newShareRig(t, 0)
	call := `{"jsonrpc":"2.0","id":"mcp-stdio/serve/x/1","method":"tools/call","params":{"name":"a"}}`
	is.NoErr(r.d.ToServer.Handle(r.ctx, frame.MustParse(call)))
	is.Equal(r.child.next(t).String(), call)
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":"mcp-stdio/serve/x/1","result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"mcp-stdio/serve/x/2"}}}`,
	} {
		r.fromChild(t, m)
		is.Equal(r.client.next(t).String(), m)
	}
}

// Listens come and go from many goroutines while the child sends events:
// no race, and every goroutine of the stage ends.
func TestShareListensConcurrent(t *testing.T) {
	r := newShareRig(t, 0)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				l := fmt.Sprintf("g%d-%d", g, i)
				if err := r.listen(l, toolsOnly); err != nil {
					t.Error(err)
					return
				}
				_ = r.d.ToServer.Handle(r.ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"`+l+`"}}`))
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			_ = r.d.ToClient.Handle(r.ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":`+upID0+`}}}`))
		}
	})
	wg.Wait()
	if err := r.ctl.Close(context.Background()); err != nil && !strings.Contains(err.Error(), "context") {
		t.Fatal(err)
	}
}

// A listen asking for more than the child's listen has the child sent a
// wider one, the union of both; each client's ack is cut to what it
// asked for, and each gets only the events it asked for: the URIs it
// named (or under them), the kinds it named. The narrower listen's later
// frames are dropped.
func TestShareListensUnion(t *testing.T) {
	is := is.New(t)
	r := newShareRig(t, 0)
	const upID1 = `"mcp-stdio/shared-listen/AAAAAAAAAAAAAAAA/2"`
	is.NoErr(r.listen("a", `{"resourceSubscriptions":["file:///a"]}`))
	is.Equal(r.child.next(t).Get("params.notifications").Raw, `{"resourceSubscriptions":["file:///a"]}`)
	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":["file:///a"]},"_meta":{"io.modelcontextprotocol/subscriptionId":`+upID0+`}}}`)
	is.NoErr(r.listen("b", `{"resourceSubscriptions":["file:///b"],"toolsListChanged":true,"promptsListChanged":false}`))
	up := r.child.next(t)
	is.Equal(up.ID(), frame.ID(upID1))
	is.Equal(up.Get("params.notifications").Raw, `{"toolsListChanged":true,"resourceSubscriptions":["file:///a","file:///b"]}`)
	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a","_meta":{"io.modelcontextprotocol/subscriptionId":`+upID0+`}}}`) // before the wider ack: a's
	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":["file:///a","file:///b"],"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":`+upID1+`}}}`)
	for _, ev := range []string{
		`"method":"notifications/resources/updated","params":{"uri":"file:///a/x",`,
		`"method":"notifications/resources/updated","params":{"uri":"file:///b",`,
		`"method":"notifications/resources/updated","params":{"uri":"file:///c",`,
		`"method":"notifications/tools/list_changed","params":{`,
		`"method":"notifications/prompts/list_changed","params":{`,
	} {
		r.fromChild(t, `{"jsonrpc":"2.0",`+ev+`"_meta":{"io.modelcontextprotocol/subscriptionId":`+upID1+`}}}`)
	}
	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a","_meta":{"io.modelcontextprotocol/subscriptionId":`+upID0+`}}}`) // parked: dropped
	is.NoErr(r.ctl.Close(context.Background()))
	got := map[string][]string{}
	for {
		select {
		case m := <-r.client.got:
			key := m.Get(mcp.ParamsSubscriptionID).Str
			if m.Kind().IsResponse() {
				key = m.Get("id").Str
			}
			got[key] = append(got[key], m.String())
			continue
		default:
		}
		break
	}
	ev := func(l, method, params string) string {
		return `{"jsonrpc":"2.0","method":"notifications/` + method + `","params":{` + params + `"_meta":{"io.modelcontextprotocol/subscriptionId":"` + l + `"}}}`
	}
	end := func(l string) string {
		return `{"jsonrpc":"2.0","id":"` + l + `","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"` + l + `"}}}`
	}
	is.Equal(got["a"], []string{
		`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":["file:///a"]},"_meta":{"io.modelcontextprotocol/subscriptionId":"a"}}}`,
		ev("a", "resources/updated", `"uri":"file:///a",`),
		ev("a", "resources/updated", `"uri":"file:///a/x",`),
		end("a"),
	})
	is.Equal(got["b"], []string{
		`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":["file:///b"],"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":"b"}}}`,
		ev("b", "resources/updated", `"uri":"file:///b",`),
		ev("b", "tools/list_changed", ``),
		end("b"),
	})
	is.Equal(len(got), 2)
}
