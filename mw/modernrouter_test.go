package mw

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// asyncChild stands for a child process: it records what it is sent and
// answers later, when the test says so, on the test's goroutine.
type asyncChild struct {
	up   Late
	mu   sync.Mutex
	got  []frame.Message
	seen chan frame.Message
}

func newAsyncChild() *asyncChild { return &asyncChild{seen: make(chan frame.Message, 64)} }

func (c *asyncChild) Handle(_ context.Context, m frame.Message) error {
	c.mu.Lock()
	c.got = append(c.got, m)
	c.mu.Unlock()
	c.seen <- m
	return nil
}

// next returns the next message the child was sent.
func (c *asyncChild) next(t *testing.T) frame.Message {
	t.Helper()
	select {
	case m := <-c.seen:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("the child was sent nothing")
		return frame.Message{}
	}
}

// say has the child write m.
func (c *asyncChild) say(t *testing.T, m string) {
	t.Helper()
	if err := c.up.Handle(context.Background(), frame.MustParse(m)); err != nil {
		t.Fatal(err)
	}
}

func routerChain(t *testing.T, conn *Conn, wait time.Duration) (Handler, *asyncChild) {
	t.Helper()
	child := newAsyncChild()
	d := Chain(ModernRouter(ModernRouterOptions{Conn: conn, FirstAnswerWait: wait}))(Duplex{ToServer: child, ToClient: Discard()})
	child.up.Bind(d.ToClient)
	return d.ToServer, child
}

// handleAsync runs h.Handle on its own goroutine; the channel gets its error.
func handleAsync(h Handler, ctx context.Context, m string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- h.Handle(ctx, frame.MustParse(m)) }()
	return done
}

func TestModernRouterKeepsConcurrentClientsApart(t *testing.T) {
	is := is.New(t)
	h, child := routerChain(t, NewConn(EraStateless), time.Minute)
	x1, x2 := newPOST(false), newPOST(false)
	d1 := handleAsync(h, on(context.Background(), x1), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`)
	m1 := child.next(t)
	d2 := handleAsync(h, on(context.Background(), x2), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b"}}`)
	m2 := child.next(t)
	is.True(m1.ID() != m2.ID()) // the same client id, two ids on the child
	is.True(strings.HasPrefix(string(m1.ID()), `"mcp-stdio/serve/`))
	is.Equal(m1.Get("params.name").String(), "a")
	// Answered in the other order, each reaches its own client.
	child.say(t, `{"jsonrpc":"2.0","id":`+string(m2.ID())+`,"result":{"n":"b"}}`)
	child.say(t, `{"jsonrpc":"2.0","id":`+string(m1.ID())+`,"result":{"n":"a"}}`)
	is.NoErr(<-d1)
	is.NoErr(<-d2)
	is.Equal(x1.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":{"n":"a"}}`})
	is.Equal(x2.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":{"n":"b"}}`})
	is.True(x1.isEnded() && x2.isEnded())
}

func TestModernRouterErrorFirstKeepsItsStatus(t *testing.T) {
	is := is.New(t)
	h, child := routerChain(t, NewConn(EraStateless), time.Minute)
	x := newPOST(true)
	done := handleAsync(h, on(context.Background(), x), `{"jsonrpc":"2.0","id":"q","method":"nope"}`)
	m := child.next(t)
	child.say(t, `{"jsonrpc":"2.0","id":`+string(m.ID())+`,"error":{"code":-32601,"message":"no such method"}}`)
	err := <-done
	var st *frame.StatusError
	is.True(errors.As(err, &st))
	is.Equal(st.Code, http.StatusNotFound)
	is.Equal(string(st.Body), `{"jsonrpc":"2.0","id":"q","error":{"code":-32601,"message":"no such method"}}`)
}

func TestModernRouterStreamsProgressThenTheResult(t *testing.T) {
	is := is.New(t)
	h, child := routerChain(t, NewConn(EraStateless), time.Minute)
	x := newPOST(true)
	done := handleAsync(h, on(context.Background(), x), `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"tok"}}}`)
	m := child.next(t)
	tok := m.Get("params._meta.progressToken").Raw
	is.True(strings.HasPrefix(tok, `"mcp-stdio/serve-progress/`))
	child.say(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`+tok+`,"progress":1}}`)
	is.NoErr(<-done) // the notification started the answer
	child.say(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"someone-else","progress":1}}`)
	child.say(t, `{"jsonrpc":"2.0","id":`+string(m.ID())+`,"error":{"code":-32601,"message":"late"}}`)
	is.Equal(x.lines(), []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":1}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"late"}}`, // after the stream started, in it
	})
	is.True(x.isEnded())
}

func TestModernRouterRoutesListenFramesBySubscriptionID(t *testing.T) {
	is := is.New(t)
	h, child := routerChain(t, NewConn(EraStateless), time.Minute)
	x := newPOST(true)
	done := handleAsync(h, on(context.Background(), x), `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`)
	m := child.next(t)
	sid := string(m.ID())
	child.say(t, `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":`+sid+`}}}`)
	is.NoErr(<-done)
	child.say(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":`+sid+`}}}`)
	child.say(t, `{"jsonrpc":"2.0","id":`+sid+`,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":`+sid+`}}}`)
	is.Equal(x.lines(), []string{
		`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}`,
		`{"jsonrpc":"2.0","id":"L","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}`,
	})
}

func TestModernRouterCancelsWhatItsClientLeft(t *testing.T) {
	is := is.New(t)
	h, child := routerChain(t, NewConn(EraStateless), time.Millisecond)
	x := newPOST(true)
	is.NoErr(<-handleAsync(h, on(context.Background(), x), `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow"}}`))
	m := child.next(t)
	x.finish() // the client went away before the answer
	cancel := child.next(t)
	is.Equal(cancel.Method(), "notifications/cancelled")
	is.Equal(frame.ID(cancel.Get("params.requestId").Raw), m.ID())
	// A late answer goes nowhere.
	child.say(t, `{"jsonrpc":"2.0","id":`+string(m.ID())+`,"result":{}}`)
}

func TestModernRouterRetargetsAClientsCancel(t *testing.T) {
	is := is.New(t)
	h, child := routerChain(t, NewConn(EraStateless), time.Millisecond)
	x := newPOST(true)
	is.NoErr(<-handleAsync(h, on(context.Background(), x), `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow"}}`))
	m := child.next(t)
	is.NoErr(h.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`)))
	cancel := child.next(t)
	is.Equal(frame.ID(cancel.Get("params.requestId").Raw), m.ID())
	x.finish()
}

func TestModernRouterAnswersInFlightWhenTheServerExits(t *testing.T) {
	is := is.New(t)
	conn := NewConn(EraStateless)
	h, child := routerChain(t, conn, time.Minute)
	x := newPOST(false)
	done := handleAsync(h, on(context.Background(), x), `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow"}}`)
	child.next(t)
	conn.Close(errors.New("exited"))
	is.NoErr(<-done)
	is.Equal(x.lines(), []string{`{"jsonrpc":"2.0","id":9,"error":{"code":-32603,"message":"the server process exited before it answered"}}`})
	// Later requests are refused at once.
	err := h.Handle(on(context.Background(), newPOST(false)), frame.MustParse(`{"jsonrpc":"2.0","id":10,"method":"tools/list"}`))
	var st *frame.StatusError
	is.True(errors.As(err, &st))
	is.Equal(st.Code, http.StatusServiceUnavailable)
}

func TestModernRouterRefusesServerRequestsNoStageTook(t *testing.T) {
	is := is.New(t)
	_, child := routerChain(t, NewConn(EraStateless), time.Minute)
	child.say(t, `{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}`)
	got := child.next(t)
	code, ok := got.ErrorCode()
	is.True(ok)
	is.Equal(code, frame.CodeMethodNotFound)
	is.Equal(got.ID(), frame.ID(`"s1"`))
}

func TestModernRouterRestoresTheIDOfARefusal(t *testing.T) {
	is := is.New(t)
	refuse := HandlerFunc(func(_ context.Context, m frame.Message) error {
		return Refuse(http.StatusServiceUnavailable, m.ID(), frame.CodeInternalError, "too many")
	})
	h := ModernRouter(ModernRouterOptions{})(Duplex{ToServer: refuse, ToClient: Discard()}).ToServer
	err := h.Handle(on(context.Background(), newPOST(true)), frame.MustParse(`{"jsonrpc":"2.0","id":"mine","method":"subscriptions/listen","params":{}}`))
	var st *frame.StatusError
	is.True(errors.As(err, &st))
	is.Equal(st.Code, http.StatusServiceUnavailable)
	is.Equal(string(st.Body), `{"jsonrpc":"2.0","id":"mine","error":{"code":-32603,"message":"too many"}}`)
}

// zeros reads as an endless run of zero bytes: a fixed random part for the
// ids stages mint, "AAAAAAAAAAAAAAAA".
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// Two routers — two children — mint ids no one can guess from the other's:
// each has a random part of its own before its counter, and the progress
// tokens too.
func TestModernRouterMintsUnguessableIDs(t *testing.T) {
	is := is.New(t)
	shape := regexp.MustCompile(`^"mcp-stdio/serve(-progress)?/([A-Za-z0-9_-]{16})/([0-9]+)"$`)
	mint := func() (id, tok []string) {
		h, child := routerChain(t, NewConn(EraStateless), time.Minute)
		x := newPOST(false)
		done := handleAsync(h, on(context.Background(), x), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"progressToken":"p"}}}`)
		m := child.next(t)
		child.say(t, `{"jsonrpc":"2.0","id":`+string(m.ID())+`,"result":{}}`)
		is.NoErr(<-done)
		id = shape.FindStringSubmatch(string(m.ID()))
		tok = shape.FindStringSubmatch(m.Get("params._meta.progressToken").Raw)
		is.True(id != nil && tok != nil) // mcp-stdio/serve/<random>/<n>, mcp-stdio/serve-progress/<random>/<n>
		return id, tok
	}
	id1, tok1 := mint()
	id2, tok2 := mint()
	is.Equal(id1[2], tok1[2])   // one random part per router
	is.True(id1[2] != id2[2])   // another router, another one
	is.Equal(id1[3], id2[3])    // the counters alone would collide
	is.True(tok1[0] != tok2[0]) // and so would the tokens
}

// The random part can be fixed, for transcripts, and a failing source
// leaves a counter (logged), never a crash.
func TestIDMinterRandomize(t *testing.T) {
	is := is.New(t)
	var g IDMinter
	is.Equal(g.Mint("s"), frame.ID(`"mcp-stdio/s/1"`))
	is.NoErr(g.Randomize(zeros{}))
	is.Equal(g.Mint("s"), frame.ID(`"mcp-stdio/s/AAAAAAAAAAAAAAAA/2"`))
	var f IDMinter
	is.True(f.Randomize(strings.NewReader("short")) != nil)
	is.Equal(f.Mint("s"), frame.ID(`"mcp-stdio/s/1"`))
	is.True(testing.AllocsPerRun(100, func() { g.Mint("serve") }) <= 1) // the id's bytes only
}
