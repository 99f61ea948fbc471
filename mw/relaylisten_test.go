package mw

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// listenServer stands for a 2026-07-28 server behind a streaming HTTP
// transport: a subscriptions/listen request's Handle runs as long as the
// stream does, delivering its acknowledgement and then whatever the test
// pushes client-bound meanwhile. Every other request is answered {}.
type listenServer struct {
	up Late // the chain's client-bound entry

	mu      sync.Mutex
	got     []frame.Message
	listens []*fakeListen
	// holdAck makes the next listens wait for ack() before acknowledging.
	holdAck bool
	// refuse lists how the next listens fail before their
	// acknowledgement: a JSON-RPC error (a message) or a Go error.
	refuse []any
}

// fakeListen is one listen stream of listenServer.
type fakeListen struct {
	req    frame.Message
	ackNow chan struct{}
	push   chan frame.Message
	end    chan frame.Message // a final message (or none) and the end of the stream
	// linger, when set, keeps the stream delivering pushes after its
	// context ended, until it is closed: a transport that still hands on
	// what it read before the close took effect.
	linger chan struct{}
	ended  chan struct{} // closed when Handle returned
}

func (s *listenServer) Handle(ctx context.Context, m frame.Message) error {
	s.mu.Lock()
	s.got = append(s.got, m)
	s.mu.Unlock()
	if m.Method() != listenMethod {
		if m.IsRequest() {
			return s.up.Handle(ctx, frame.ResultResponse(m.ID(), []byte(`{}`)))
		}
		return nil
	}
	l := &fakeListen{
		req:    m,
		ackNow: make(chan struct{}),
		push:   make(chan frame.Message),
		end:    make(chan frame.Message),
		ended:  make(chan struct{}),
	}
	s.mu.Lock()
	s.listens = append(s.listens, l)
	hold := s.holdAck
	var refuse any
	if len(s.refuse) > 0 {
		refuse, s.refuse = s.refuse[0], s.refuse[1:]
	}
	s.mu.Unlock()
	defer close(l.ended)
	switch r := refuse.(type) {
	case error:
		return r
	case string:
		return s.up.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":`+string(m.ID())+`,"error":`+r+`}`))
	}
	if hold {
		select {
		case <-l.ackNow:
		case <-ctx.Done():
			return ctx.Err()
		case final := <-l.end:
			return s.finish(ctx, final)
		}
	}
	id := string(m.ID())
	ack := `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":` + id + `},"notifications":` + m.Get("params.notifications").Raw + `}}`
	if err := s.up.Handle(ctx, frame.MustParse(ack)); err != nil {
		return err
	}
	done := ctx.Done()
	for {
		select {
		case <-done:
			if l.linger == nil {
				return ctx.Err()
			}
			done = nil
		case <-l.linger:
			return ctx.Err()
		case n := <-l.push:
			if err := s.up.Handle(ctx, n); err != nil {
				return err
			}
		case final := <-l.end:
			return s.finish(ctx, final)
		}
	}
}

// finish ends a listen's stream: with its final message, or broken.
func (s *listenServer) finish(ctx context.Context, final frame.Message) error {
	if final.Len() > 0 {
		return s.up.Handle(ctx, final)
	}
	return errors.New("stream broke")
}

// listen returns the i-th listen the server got.
func (s *listenServer) listen(t *testing.T, i int) *fakeListen {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if i >= len(s.listens) {
		t.Fatalf("the server got %d listens, want at least %d", len(s.listens), i+1)
	}
	return s.listens[i]
}

// count returns how many listens the server got.
func (s *listenServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.listens)
}

// received returns the bytes of every message the server got.
func (s *listenServer) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.got {
		out = append(out, m.String())
	}
	return out
}

// notify pushes a notification on the listen, tagged with its id.
func (l *fakeListen) notify(method, params string) {
	l.push <- frame.MustParse(`{"jsonrpc":"2.0","method":"` + method + `","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":` + string(l.req.ID()) + `}` + params + `}}`)
	synctest.Wait()
}

// open reports whether the listen's stream is still open.
func (l *fakeListen) open() bool { return !isClosed(l.ended) }

// The server's answer to the host's initialize, as part A records it.
const (
	hostInitialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`
	capsAll        = `{"tools":{"listChanged":true},"prompts":{},"resources":{"subscribe":true,"listChanged":true}}`
	capsSubscribe  = `{"resources":{"subscribe":true}}`
)

// listenChain wires a ListenBridge between a recorder standing for a
// session-era host and s, on a 2026-07-28 connection whose handshake is
// recorded with the server capabilities caps.
func listenChain(s *listenServer, caps string, o ListenOptions) (ctx context.Context, toServer Handler, client *recorder, conn *Conn) {
	conn = NewConn(EraStateless)
	conn.Initialized(frame.MustParse(hostInitialize),
		frame.MustParse(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"serverInfo":{"name":"modern","version":"1"}}}`))
	if o.Sleep == nil {
		o.Sleep = func(context.Context, time.Duration) error { return nil }
	}
	client = &recorder{}
	d := Chain(ListenBridge(o))(Duplex{ToServer: s, ToClient: client})
	s.up.Bind(d.ToClient)
	return WithConn(context.Background(), conn), d.ToServer, client, conn
}

// send hands the chain one line from the host and lets it settle.
func sendCtx(t *testing.T, ctx context.Context, h Handler, line string) {
	t.Helper()
	if err := h.Handle(ctx, frame.MustParse(line)); err != nil {
		t.Fatalf("Handle(%s): %v", line, err)
	}
	synctest.Wait()
}

const initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`

func TestListenBridgeOpensAndTranslates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		srv := &listenServer{}
		ctx, up, client, conn := listenChain(srv, capsAll, ListenOptions{})
		defer conn.Close(errors.New("the end"))

		sendCtx(t, ctx, up, initialized)
		is.Equal(srv.received(), []string{
			initialized,
			`{"jsonrpc":"2.0","id":"mcp-stdio/listen/1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"resourcesListChanged":true}}}`,
		}) // the host's initialized, then the bridge's listen for what the server advertises
		is.Equal(len(client.all()), 0) // the acknowledgement is swallowed

		l := srv.listen(t, 0)
		l.notify("notifications/tools/list_changed", "")
		l.notify("notifications/resources/list_changed", `,"x":1.50`)
		is.Equal(client.lines(), []string{
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`,
			`{"jsonrpc":"2.0","method":"notifications/resources/list_changed","params":{"x":1.50}}`,
		}) // plain session-era notifications, every other byte kept

		// Other _meta keys stay; only the subscription id goes.
		l.push <- frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"traceparent":"00-a-b-01","io.modelcontextprotocol/subscriptionId":"mcp-stdio/listen/1"}}}`)
		synctest.Wait()
		is.Equal(client.lines()[2], `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"traceparent":"00-a-b-01"}}}`)

		// A later request passes, and opens nothing more.
		sendCtx(t, ctx, up, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		is.Equal(srv.count(), 1)
		is.Equal(client.lines()[3], `{"jsonrpc":"2.0","id":1,"result":{}}`)

		conn.Close(errors.New("the end"))
		synctest.Wait()
		is.True(!l.open()) // the connection's end closes the listen
	})
}

func TestListenBridgeStartsAtFirstRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		srv := &listenServer{}
		ctx, up, _, conn := listenChain(srv, capsAll, ListenOptions{})
		defer conn.Close(errors.New("the end"))

		// A stage outside swallowed notifications/initialized: the first
		// request starts the bridge.
		sendCtx(t, ctx, up, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		is.Equal(srv.count(), 1)
	})
}

func TestListenBridgeWaitsForTheHandshake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		srv := &listenServer{}
		conn := NewConn(EraStateless)
		client := &recorder{}
		d := Chain(ListenBridge(ListenOptions{}))(Duplex{ToServer: srv, ToClient: client})
		srv.up.Bind(d.ToClient)
		ctx := WithConn(context.Background(), conn)
		defer conn.Close(errors.New("the end"))

		sendCtx(t, ctx, d.ToServer, hostInitialize) // not recorded yet
		is.Equal(srv.count(), 0)
		conn.Initialized(frame.MustParse(hostInitialize), frame.MustParse(`{"jsonrpc":"2.0","id":0,"result":{"capabilities":`+capsAll+`}}`))
		sendCtx(t, ctx, d.ToServer, initialized)
		is.Equal(srv.count(), 1)
	})
}

func TestListenBridgeSubscribeSwaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		srv := &listenServer{}
		ctx, up, client, conn := listenChain(srv, capsAll, ListenOptions{})
		defer conn.Close(errors.New("the end"))
		sendCtx(t, ctx, up, initialized)
		first := srv.listen(t, 0)

		sendCtx(t, ctx, up, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"file:///a"}}`)
		is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","id":2,"result":{}}`}) // answered locally
		is.Equal(srv.count(), 2)
		second := srv.listen(t, 1)
		is.Equal(second.req.String(), `{"jsonrpc":"2.0","id":"mcp-stdio/listen/2","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["file:///a"]}}}`)
		is.True(!first.open()) // closed once the new one was acknowledged
		is.True(second.open())

		second.notify("notifications/resources/updated", `,"uri":"file:///a/b"`)
		is.Equal(client.lines()[1], `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a/b"}}`)

		// A second URI adds to the set, in order; the same one again
		// changes nothing.
		sendCtx(t, ctx, up, `{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"file:///b"}}`)
		sendCtx(t, ctx, up, `{"jsonrpc":"2.0","id":"4","method":"resources/subscribe","params":{"uri":"file:///b"}}`)
		is.Equal(srv.count(), 3)
		is.Equal(srv.listen(t, 2).req.Get("params.notifications.resourceSubscriptions").Raw, `["file:///a","file:///b"]`)
		is.True(!second.open())
		is.Equal(client.lines()[2:], []string{`{"jsonrpc":"2.0","id":3,"result":{}}`, `{"jsonrpc":"2.0","id":"4","result":{}}`})

		for _, m := range srv.received() {
			is.True(frame.MustParse(m).Method() != "resources/subscribe") // never reaches the server
		}
	})
}

func TestListenBridgeUnsubscribe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		srv := &listenServer{}
		ctx, up, client, conn := listenChain(srv, capsSubscribe, ListenOptions{})
		defer conn.Close(errors.New("the end"))
		sendCtx(t, ctx, up, initialized)
		is.Equal(srv.count(), 0) // nothing to listen for yet

		sendCtx(t, ctx, up, `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///a"}}`)
		sendCtx(t, ctx, up, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"file:///b"}}`)
		is.Equal(srv.count(), 2)
		sendCtx(t, ctx, up, `{"jsonrpc":"2.0","id":3,"method":"resources/unsubscribe","params":{"uri":"file:///a"}}`)
		is.Equal(srv.count(), 3)
		is.Equal(srv.listen(t, 2).req.String(), `{"jsonrpc":"2.0","id":"mcp-stdio/listen/3","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["file:///b"]}}}`)

		sendCtx(t, ctx, up, `{"jsonrpc":"2.0","id":4,"method":"resources/unsubscribe","params":{"uri":"file:///never"}}`)
		is.Equal(srv.count(), 3) // not subscribed: nothing changes

		sendCtx(t, ctx, up, `{"jsonrpc":"2.0","id":5,"method":"resources/unsubscribe","params":{"uri":"file:///b"}}`)
		is.Equal(srv.count(), 3)
		is.True(!srv.listen(t, 2).open()) // nothing left to listen for: closed, none opened

		sendCtx(t, ctx, up, `{"jsonrpc":"2.0","id":6,"method":"resources/subscribe","params":{"uri":7}}`)
		is.Equal(client.lines(), []string{
			`{"jsonrpc":"2.0","id":1,"result":{}}`,
			`{"jsonrpc":"2.0","id":2,"result":{}}`,
			`{"jsonrpc":"2.0","id":3,"result":{}}`,
			`{"jsonrpc":"2.0","id":4,"result":{}}`,
			`{"jsonrpc":"2.0","id":5,"result":{}}`,
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"resources/subscribe: params.uri must be a string"}}`,
		})
	})
}

func TestListenBridgeReopensWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		var (
			mu     sync.Mutex
			sleeps []time.Duration
		)
		srv := &listenServer{}
		ctx, up, client, conn := listenChain(srv, capsAll, ListenOptions{
			Sleep: func(_ context.Context, d time.Duration) error {
				mu.Lock()
				sleeps = append(sleeps, d)
				mu.Unlock()
				return nil
			},
		})
		defer conn.Close(errors.New("the end"))
		sendCtx(t, ctx, up, initialized)

		// The stream breaks; the next two attempts fail before their
		// acknowledgement, with a Go error and with a JSON-RPC error.
		srv.mu.Lock()
		srv.refuse = []any{errors.New("HTTP 503"), `{"code":-32603,"message":"busy"}`}
		srv.mu.Unlock()
		srv.listen(t, 0).end <- frame.Message{}
		synctest.Wait()
		is.Equal(srv.count(), 4)
		is.True(srv.listen(t, 3).open())

		// The server ends it with its final result: swallowed, and the
		// count started again at the acknowledgement.
		l := srv.listen(t, 3)
		l.end <- frame.MustParse(`{"jsonrpc":"2.0","id":` + string(l.req.ID()) + `,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":` + string(l.req.ID()) + `}}}`)
		synctest.Wait()
		is.Equal(srv.count(), 5)
		is.True(srv.listen(t, 4).open())

		mu.Lock()
		is.Equal(sleeps, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, time.Second})
		mu.Unlock()
		is.Equal(len(client.all()), 0) // nothing of it reaches the host
		for i := range 5 {
			is.Equal(srv.listen(t, i).req.Get("params").Raw, `{"notifications":{"toolsListChanged":true,"resourcesListChanged":true}}`)
		}

		srv.listen(t, 4).notify("notifications/tools/list_changed", "")
		is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`})
	})
}

func TestListenBackoff(t *testing.T) {
	is := is.New(t)
	var got []time.Duration
	for n := 1; n <= 8; n++ {
		got = append(got, ListenBackoff(n))
	}
	is.Equal(got, []time.Duration{1e9, 2e9, 4e9, 8e9, 16e9, 30e9, 30e9, 30e9})
}

// Across a swap, every event is delivered, and the old listen's copy of
// an event the new one delivered is not.
func TestListenBridgeSwapLosesAndDoublesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		srv := &listenServer{}
		ctx, up, client, conn := listenChain(srv, capsAll, ListenOptions{})
		defer conn.Close(errors.New("the end"))
		sendCtx(t, ctx, up, initialized)
		old := srv.listen(t, 0)
		old.linger = make(chan struct{}) // still delivering after it is closed, until released

		srv.mu.Lock()
		srv.holdAck = true
		srv.mu.Unlock()
		sendCtx(t, ctx, up, `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///a"}}`)
		fresh := srv.listen(t, 1)

		// Before the new listen is acknowledged the old one reports.
		old.notify("notifications/tools/list_changed", `,"n":1`)
		close(fresh.ackNow)
		synctest.Wait()

		// Both open: the same event on both is delivered once, whichever
		// listen the server wrote first…
		fresh.notify("notifications/tools/list_changed", `,"n":2`)
		old.notify("notifications/tools/list_changed", `,"n":2`)
		// …an event only the old one saw is delivered…
		old.notify("notifications/resources/list_changed", `,"n":3`)
		// …and the new listen's events are never dropped: an old copy
		// that comes first is the one double left.
		old.notify("notifications/tools/list_changed", `,"n":4`)
		fresh.notify("notifications/tools/list_changed", `,"n":4`)
		fresh.notify("notifications/resources/updated", `,"uri":"file:///a"`)

		close(old.linger)
		synctest.Wait()
		is.True(!old.open())
		// Once the old one is gone, nothing is de-duplicated.
		fresh.notify("notifications/tools/list_changed", `,"n":2`)

		is.Equal(client.lines(), []string{
			`{"jsonrpc":"2.0","id":1,"result":{}}`,
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"n":1}}`,
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"n":2}}`,
			`{"jsonrpc":"2.0","method":"notifications/resources/list_changed","params":{"n":3}}`,
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"n":4}}`,
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"n":4}}`,
			`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"}}`,
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"n":2}}`,
		})
	})
}

// A new listen that fails before its acknowledgement leaves the old one
// open and reporting.
func TestListenBridgeFailedSwapKeepsTheOldListen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		srv := &listenServer{}
		backoff := make(chan time.Duration)
		ctx, up, client, conn := listenChain(srv, capsAll, ListenOptions{
			Sleep: func(_ context.Context, d time.Duration) error { backoff <- d; return nil },
		})
		defer conn.Close(errors.New("the end"))
		sendCtx(t, ctx, up, initialized)
		old := srv.listen(t, 0)

		srv.mu.Lock()
		srv.holdAck = true
		srv.mu.Unlock()
		sendCtx(t, ctx, up, `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///a"}}`)
		srv.mu.Lock()
		srv.holdAck = false
		srv.mu.Unlock()
		srv.listen(t, 1).end <- frame.Message{} // breaks before its acknowledgement
		synctest.Wait()
		is.True(old.open()) // still reporting during the backoff
		old.notify("notifications/tools/list_changed", "")

		is.Equal(<-backoff, time.Second)
		synctest.Wait()
		is.Equal(srv.count(), 3) // tried again
		is.True(!old.open())     // and the old one closed at that one's acknowledgement
		srv.listen(t, 2).notify("notifications/resources/updated", `,"uri":"file:///a"`)
		is.Equal(client.lines(), []string{
			`{"jsonrpc":"2.0","id":1,"result":{}}`,
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`,
			`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"}}`,
		})
	})
}

// A 2026-07-28 host's own listen passes untouched, runs alongside its
// other requests, and ends when the host cancels it.
func TestListenBridgeModernHostPassesThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		srv := &listenServer{}
		conn := NewConn(EraStateless) // no initialize recorded: a modern host
		defer conn.Close(errors.New("the end"))
		client := &recorder{}
		d := Chain(ListenBridge(ListenOptions{}))(Duplex{ToServer: srv, ToClient: client})
		srv.up.Bind(d.ToClient)
		ctx := WithConn(context.Background(), conn)

		const listen = `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"toolsListChanged":true}}}`
		lctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- d.ToServer.Handle(lctx, frame.MustParse(listen)) }()
		synctest.Wait()

		const list = `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
		sendCtx(t, ctx, d.ToServer, list) // answered while the listen runs
		srv.listen(t, 0).notify("notifications/tools/list_changed", "")
		const sub = `{"jsonrpc":"2.0","id":9,"method":"resources/subscribe","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"uri":"file:///a"}}`
		sendCtx(t, ctx, d.ToServer, sub)

		is.Equal(srv.received(), []string{listen, list, sub}) // untouched, and no listen of the bridge's
		is.Equal(client.lines(), []string{
			`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"notifications":{"toolsListChanged":true}}}`,
			`{"jsonrpc":"2.0","id":8,"result":{}}`,
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}`,
			`{"jsonrpc":"2.0","id":9,"result":{}}`,
		})

		cancel()
		is.True(errors.Is(<-done, context.Canceled)) // the host's cancel ends it
		is.True(!srv.listen(t, 0).open())
	})
}

// On a session-era server the bridge does nothing.
func TestListenBridgeSessionEraUntouched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		srv := &listenServer{}
		ctx, up, client, conn := listenChain(srv, capsAll, ListenOptions{})
		defer conn.Close(errors.New("the end"))
		conn.SetEra(EraSession)
		const sub = `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///a"}}`
		sendCtx(t, ctx, up, initialized)
		sendCtx(t, ctx, up, sub)
		is.Equal(srv.received(), []string{initialized, sub})
		is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":{}}`}) // the server's answer
	})
}

// Every goroutine of the bridge ends with the connection, whatever it is
// doing: a listen open, one waiting for its acknowledgement, a backoff.
// synctest.Test fails if one is left blocked.
func TestListenBridgeEndsWithTheConnection(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(t *testing.T, srv *listenServer, ctx context.Context, up Handler)
	}{
		{"listening", func(*testing.T, *listenServer, context.Context, Handler) {}},
		{"swapping", func(t *testing.T, srv *listenServer, ctx context.Context, up Handler) {
			srv.mu.Lock()
			srv.holdAck = true
			srv.mu.Unlock()
			sendCtx(t, ctx, up, `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///a"}}`)
		}},
		{"backing off", func(t *testing.T, srv *listenServer, _ context.Context, _ Handler) {
			srv.listen(t, 0).end <- frame.Message{}
			synctest.Wait()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				is := is.New(t)
				srv := &listenServer{}
				ctx, up, _, conn := listenChain(srv, capsAll, ListenOptions{
					Sleep: func(ctx context.Context, _ time.Duration) error { <-ctx.Done(); return ctx.Err() },
				})
				sendCtx(t, ctx, up, initialized)
				tc.set(t, srv, ctx, up)
				conn.Close(errors.New("the end"))
				synctest.Wait()
				for i := range srv.count() {
					is.True(!srv.listen(t, i).open())
				}
			})
		})
	}
}

// A notification of a listen the bridge closed is not the host's.
func TestListenBridgeDropsLateNotifications(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		srv := &listenServer{}
		ctx, up, client, conn := listenChain(srv, capsAll, ListenOptions{})
		defer conn.Close(errors.New("the end"))
		sendCtx(t, ctx, up, initialized)
		late := frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"mcp-stdio/listen/99"}}}`)
		is.NoErr(srv.up.Handle(ctx, late))
		is.Equal(len(client.all()), 0)
	})
}
