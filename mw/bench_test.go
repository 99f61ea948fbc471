package mw

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// benchExchange is the cheapest Exchange: it counts what it is sent, and
// names each message's event as it is sent (a writer would name it as it
// takes it).
type benchExchange struct {
	method string
	sent   int
	ended  bool
	done   []func([]frame.Message)
	name   func(frame.Message) string
}

func (x *benchExchange) Method() string    { return x.method }
func (x *benchExchange) EventStream() bool { return true }
func (x *benchExchange) Send(_ context.Context, m frame.Message, id string) error {
	x.sent++
	if id == "" && x.name != nil {
		x.name(m)
	}
	return nil
}
func (x *benchExchange) SendLast(ctx context.Context, m frame.Message, id string) error {
	x.ended = true
	return x.Send(ctx, m, id)
}
func (x *benchExchange) End()                                      { x.ended = true }
func (x *benchExchange) OnDone(f func([]frame.Message))            { x.done = append(x.done, f) }
func (x *benchExchange) HoldHeader()                               {}
func (x *benchExchange) PreferJSON()                               {}
func (x *benchExchange) NumberEvents(f func(frame.Message) string) { x.name = f }
func (x *benchExchange) Prime(string, time.Duration)               {}
func (x *benchExchange) Cut() []frame.Message                      { x.ended = true; return nil }

// echoChild answers every request at once, client-bound, as a child's
// reader would; initialize with protocol version 2025-11-25.
type echoChild struct{ toClient Handler }

func (c *echoChild) Handle(ctx context.Context, m frame.Message) error {
	switch {
	case m.Method() == "initialize":
		return c.toClient.Handle(ctx, frame.ResultResponse(m.ID(), []byte(`{"protocolVersion":"2025-11-25"}`)))
	case m.IsRequest():
		return c.toClient.Handle(ctx, frame.ResultResponse(m.ID(), []byte(`{"content":[]}`)))
	}
	return nil
}
func (c *echoChild) Done() <-chan struct{}       { return nil }
func (c *echoChild) Close(context.Context) error { return nil }

// BenchmarkServeSessionChain is the cost of serve's session era per
// request, without HTTP and without a process: the version check, the
// session stage and a session's stages, from the request to its answer on
// the exchange.
func BenchmarkServeSessionChain(b *testing.B) {
	var sid string
	s := NewSessions(SessionsOptions{Open: func(_ context.Context, id string, conn *Conn) (Backend, error) {
		sid = id
		child := &echoChild{}
		d := Chain(
			Route(RouteOptions{Conn: conn}),
			RefuseDuplicateIDs(DuplicateIDsOptions{}),
			Unbatch(),
			CancelFilter(CancelOptions{}),
		)(Duplex{ToServer: child, ToClient: Discard()})
		child.toClient = d.ToClient
		return &chainBackend{entry: d.ToServer}, nil
	}})
	defer s.Close(context.Background())
	entry := Chain(CheckVersionHeader())(Duplex{ToServer: s, ToClient: Discard()}).ToServer
	init := &benchExchange{method: http.MethodPost}
	if err := entry.Handle(WithExchange(context.Background(), init), frame.MustParse(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)); err != nil {
		b.Fatal(err)
	}
	h := http.Header{}
	h.Set(frame.HeaderSessionID, sid)
	h.Set(frame.HeaderProtocolVersion, "2025-11-25")
	call := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`).WithHeaders(h)
	b.ReportAllocs()
	for b.Loop() {
		x := &benchExchange{method: http.MethodPost}
		if err := entry.Handle(WithExchange(context.Background(), x), call); err != nil {
			b.Fatal(err)
		}
		if x.sent != 1 || !x.ended {
			b.Fatal("not answered")
		}
		for _, f := range x.done {
			f(nil)
		}
	}
}

// chainBackend is a session's stages as its Backend.
type chainBackend struct{ entry Handler }

func (c *chainBackend) Handle(ctx context.Context, m frame.Message) error {
	return c.entry.Handle(ctx, m)
}
func (c *chainBackend) Done() <-chan struct{}       { return nil }
func (c *chainBackend) Close(context.Context) error { return nil }

// BenchmarkResponseCacheHit is the cost of a tools/list the response
// cache answers, through the relay's stages around it (pagination merge,
// then the cache), for a list of 20 tools: from the host's request to its
// answer handed client-bound.
func BenchmarkResponseCacheHit(b *testing.B) {
	result := benchToolsList(20)
	var sent int
	var up Late
	server := HandlerFunc(func(ctx context.Context, m frame.Message) error {
		sent++
		return up.Handle(ctx, frame.ResultResponse(m.ID(), result))
	})
	var answers int
	client := HandlerFunc(func(context.Context, frame.Message) error { answers++; return nil })
	d := Chain(PaginationMerge(PaginationOptions{}), ResponseCache(CacheOptions{}))(Duplex{ToServer: server, ToClient: client})
	up.Bind(d.ToClient)
	req := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":1}}}`)
	ctx := context.Background()
	if err := d.ToServer.Handle(ctx, req); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(result)))
	b.ReportAllocs()
	for b.Loop() {
		if err := d.ToServer.Handle(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	if sent != 1 || answers != b.N+1 {
		b.Fatalf("server asked %d times, %d answers for %d requests", sent, answers, b.N+1)
	}
}

// benchToolsList is a tools/list result of n tools of a typical size,
// with a ttlMs of an hour.
func benchToolsList(n int) []byte {
	b := []byte(`{"tools":[`)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, `{"name":"tool_%d","description":"Does thing number %d for the caller, with the options below.","inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"where"},"count":{"type":"integer","minimum":1}},"required":["path"]}}`, i, i)
	}
	return append(b, `],"ttlMs":3600000,"cacheScope":"public","resultType":"complete"}`...)
}

// modernEchoChild answers as a dual-era child's 2026-07-28 face would:
// tools/list with one tool, every other request at once, client-bound.
type modernEchoChild struct{ toClient Handler }

func (c *modernEchoChild) Handle(ctx context.Context, m frame.Message) error {
	switch {
	case m.Method() == "tools/list":
		return c.toClient.Handle(ctx, frame.ResultResponse(m.ID(), []byte(`{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}],"resultType":"complete"}`)))
	case m.IsRequest():
		return c.toClient.Handle(ctx, frame.ResultResponse(m.ID(), []byte(`{"content":[{"type":"text","text":"hello"}],"resultType":"complete"}`)))
	}
	return nil
}

// BenchmarkServeModernChain is the cost of serve's 2026-07-28 path per
// request, without HTTP and without a process, as
// BenchmarkServeSessionChain is the session era's: the ladder, the pool,
// and a dual-era child's stages (router, shared listens, parameter
// headers, awaited answers), from the request with its headers to its
// answer on the exchange.
func BenchmarkServeModernChain(b *testing.B) {
	pool := NewPool(PoolOptions{Start: func(context.Context, string) (Backend, error) {
		conn := NewConn(EraStateless)
		child := &modernEchoChild{}
		share, _ := ShareListens(ShareListensOptions{})
		d := Chain(
			ModernRouter(ModernRouterOptions{Conn: conn}),
			share,
			CheckParamHeaders(ParamCheckOptions{}),
			AwaitAnswers(conn),
		)(Duplex{ToServer: child, ToClient: Discard()})
		child.toClient = d.ToClient
		return &connBackend{entry: d.ToServer, conn: conn, done: make(chan struct{})}, nil
	}})
	defer pool.Close(context.Background())
	entry := Chain(ValidateModern(ModernLadderOptions{}), TraceContext(TraceOptions{}))(Duplex{ToServer: pool, ToClient: Discard()}).ToServer
	h := http.Header{}
	h.Set(frame.HeaderProtocolVersion, ModernVersion)
	h.Set("Mcp-Method", "tools/call")
	h.Set("Mcp-Name", "echo")
	call := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}`).WithHeaders(h)
	b.ReportAllocs()
	for b.Loop() {
		x := &benchExchange{method: http.MethodPost}
		if err := entry.Handle(WithExchange(context.Background(), x), call); err != nil {
			b.Fatal(err)
		}
		if x.sent != 1 || !x.ended {
			b.Fatal("not answered")
		}
		for _, f := range x.done {
			f(nil)
		}
	}
}

// connBackend is a pooled child's stages as its Backend, its connection
// in every message's context.
type connBackend struct {
	entry Handler
	conn  *Conn
	done  chan struct{}
}

func (c *connBackend) Handle(ctx context.Context, m frame.Message) error {
	return c.entry.Handle(WithConn(ctx, c.conn), m)
}
func (c *connBackend) Done() <-chan struct{}       { return c.done }
func (c *connBackend) Close(context.Context) error { close(c.done); return nil }
