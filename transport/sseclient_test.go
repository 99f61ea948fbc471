package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sseServer is a scriptable HTTP+SSE (2024-11-05) server. Each GET on
// /sse is a stream the test feeds through its sseConn; every other
// request is a POST it records and answers with postStatus (202 by
// default), or with postReply when set.
type sseServer struct {
	url    string
	client *http.Client
	conns  chan *sseConn
	posts  chan ssePost

	postStatus atomic.Int32
	postReply  func(w http.ResponseWriter, body string) // optional
	// streamablePost, when set, answers POSTs to the stream's own URL (a
	// Streamable HTTP attempt) instead of recording them.
	streamablePost func(w http.ResponseWriter, r *http.Request)
}

type sseConn struct {
	events chan string   // raw stream text, written and flushed
	hangup chan struct{} // close to end the stream
	gone   chan struct{} // closed when the stream's handler returned
}

type ssePost struct {
	URI    string
	Body   string
	Header http.Header
}

func newSSEServer(t testing.TB) *sseServer {
	ls := &sseServer{conns: make(chan *sseConn, 16), posts: make(chan ssePost, 16)}
	srv, client := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/sse" {
			ls.stream(w, r)
			return
		}
		if r.URL.Path == "/sse" && ls.streamablePost != nil {
			ls.streamablePost(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		ls.posts <- ssePost{URI: r.URL.RequestURI(), Body: string(b), Header: r.Header.Clone()}
		if ls.postReply != nil {
			ls.postReply(w, string(b))
			return
		}
		code := int(ls.postStatus.Load())
		if code == 0 {
			code = http.StatusAccepted
		}
		w.WriteHeader(code)
	}))
	ls.url, ls.client = srv.URL, client
	return ls
}

func (ls *sseServer) stream(w http.ResponseWriter, r *http.Request) {
	conn := &sseConn{events: make(chan string, 16), hangup: make(chan struct{}), gone: make(chan struct{})}
	defer close(conn.gone)
	sseHeaders(w)
	ls.conns <- conn
	for {
		select {
		case ev := <-conn.events:
			flushWrite(w, ev)
		case <-conn.hangup:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// conn waits for the client's next GET.
func (ls *sseServer) conn(t testing.TB) *sseConn {
	t.Helper()
	select {
	case c := <-ls.conns:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for the SSE GET")
		return nil
	}
}

// post waits for the client's next POST.
func (ls *sseServer) post(t testing.TB) ssePost {
	t.Helper()
	select {
	case p := <-ls.posts:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a POST")
		return ssePost{}
	}
}

func (c *sseConn) endpoint(ep string) { c.events <- "event: endpoint\ndata: " + ep + "\n\n" }
func (c *sseConn) message(m string)   { c.events <- "event: message\ndata: " + m + "\n\n" }

// client returns an SSEClient for ls that reconnects at once.
func (ls *sseServer) newClient() (*SSEClient, *collector) {
	sink := newCollector()
	return &SSEClient{
		URL:            ls.url + "/sse",
		Client:         ls.client,
		ToClient:       sink,
		ReconnectDelay: func(int) time.Duration { return 0 },
	}, sink
}

// runSSE runs c until the test ends (or stop is called) and returns stop,
// which reports Run's result.
func runSSE(t testing.TB, c *SSEClient) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// handleAsync runs c.Handle on its own goroutine.
func handleAsync(ctx context.Context, h interface {
	Handle(context.Context, frame.Message) error
}, m string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- h.Handle(ctx, frame.MustParse(m)) }()
	return done
}

func result(t testing.TB, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for Handle")
		return nil
	}
}

func TestSSEClientRelativeEndpointAndMessages(t *testing.T) {
	is := is.New(t)
	ls := newSSEServer(t)
	c, sink := ls.newClient()
	c.Header = http.Header{"Authorization": {"Bearer t"}}
	runSSE(t, c)
	conn := ls.conn(t)
	conn.endpoint("/v1/messages/?sessionId=abc&token=xyz")
	<-c.Ready()

	done := handleAsync(context.Background(), c, pingReq)
	p := ls.post(t)
	is.Equal(p.URI, "/v1/messages/?sessionId=abc&token=xyz") // query kept (mcp-remote#196)
	is.Equal(p.Body, pingReq)
	is.Equal(p.Header.Get("Content-Type"), "application/json")
	is.Equal(p.Header.Get("Authorization"), "Bearer t")

	conn.events <- ": comment\n\n"
	conn.events <- "event: ping\ndata: {}\n\n"
	conn.events <- "event: keepalive\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"no\"}\n\n"
	conn.events <- "event: message\n\n" // no data
	conn.events <- "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n"
	conn.events <- "event: message\ndata: not json\n\n"
	conn.events <- "event: message\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":99,\"result\":{}}\n\n" // unknown id, multi-line
	conn.message(pingResp)
	is.NoErr(result(t, done))
	is.Equal(sink.lines(), []string{
		`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`,
		`{"jsonrpc":"2.0","id":99,"result":{}}`,
		pingResp,
	})
}

func TestSSEClientAbsoluteEndpoint(t *testing.T) {
	is := is.New(t)
	ls := newSSEServer(t)
	c, _ := ls.newClient()
	runSSE(t, c)
	ls.conn(t).endpoint(ls.url + "/other/post?x=1")
	is.NoErr(c.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)))
	is.Equal(ls.post(t).URI, "/other/post?x=1")
}

func TestSSEClientCRLF(t *testing.T) {
	is := is.New(t)
	ls := newSSEServer(t)
	c, sink := ls.newClient()
	runSSE(t, c)
	conn := ls.conn(t)
	conn.events <- "event: endpoint\r\ndata: /post?s=1\r\n\r\n"
	done := handleAsync(context.Background(), c, pingReq)
	is.Equal(ls.post(t).URI, "/post?s=1")
	conn.events <- "event: message\rdata: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\r\r"
	conn.events <- "event: message\r\ndata: " + pingResp + "\r\n\r\n"
	is.NoErr(result(t, done))
	is.Equal(sink.lines(), []string{`{"jsonrpc":"2.0","method":"n"}`, pingResp})
}

func TestSSEClientReconnectNeedsFreshEndpoint(t *testing.T) {
	is := is.New(t)
	ls := newSSEServer(t)
	c, _ := ls.newClient()
	var attempts []int
	var mu sync.Mutex
	c.ReconnectDelay = func(n int) time.Duration {
		mu.Lock()
		attempts = append(attempts, n)
		mu.Unlock()
		return 0
	}
	logs := &transporttest.SyncBuffer{}
	c.Logger = debugLogger(logs)
	runSSE(t, c)
	note := `{"jsonrpc":"2.0","method":"notifications/x"}`

	conn1 := ls.conn(t)
	conn1.endpoint("/a")
	is.NoErr(c.Handle(context.Background(), frame.MustParse(note)))
	is.Equal(ls.post(t).URI, "/a")

	close(conn1.hangup)
	conn2 := ls.conn(t) // reconnected; the endpoint /a was forgotten before this GET
	done := handleAsync(context.Background(), c, note)
	conn2.endpoint("/b")
	is.NoErr(result(t, done))
	is.Equal(ls.post(t).URI, "/b") // waited for the fresh endpoint
	select {
	case p := <-ls.posts:
		t.Fatalf("unexpected POST to %s", p.URI)
	default:
	}
	mu.Lock()
	is.Equal(attempts, []int{1})
	mu.Unlock()
	is.True(strings.Contains(logs.String(), "SSE stream ended; reconnecting"))
}

func TestSSEClientDropFailsWaitingRequests(t *testing.T) {
	is := is.New(t)
	ls := newSSEServer(t)
	c, sink := ls.newClient()
	runSSE(t, c)
	conn1 := ls.conn(t)
	conn1.endpoint("/post")

	waiting := handleAsync(context.Background(), c, pingReq)
	ls.post(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := handleAsync(ctx, c, `{"jsonrpc":"2.0","id":2,"method":"tools/call"}`)
	ls.post(t)
	cancel()
	is.True(errors.Is(result(t, cancelled), context.Canceled)) // a cancelled request just ends

	close(conn1.hangup)
	err := result(t, waiting)
	var se *frame.SendError
	is.True(errors.As(err, &se))
	is.True(se.Sent)
	is.True(errors.Is(err, frame.ErrStreamEnded))

	// After reconnecting, the same id can be sent again and is answered.
	conn2 := ls.conn(t)
	conn2.endpoint("/post2")
	again := handleAsync(context.Background(), c, pingReq)
	is.Equal(ls.post(t).URI, "/post2")
	conn2.message(pingResp)
	is.NoErr(result(t, again))
	is.Equal(sink.lines(), []string{pingResp})
}

func TestSSEClientEndpointUnavailable(t *testing.T) {
	check := func(is *is.I, err error) {
		var se *frame.SendError
		is.True(errors.As(err, &se))
		is.True(!se.Sent)
		is.True(errors.Is(err, ErrEndpointUnavailable))
		is.True(errors.Is(err, frame.ErrUnavailable)) // not retried on top of the wait
		is.Equal(err.Error(), "SSE endpoint unavailable")
	}
	t.Run("no endpoint event", func(t *testing.T) {
		is := is.New(t)
		ls := newSSEServer(t)
		c, _ := ls.newClient()
		c.EndpointWait = 30 * time.Millisecond // the behaviour under test
		runSSE(t, c)
		ls.conn(t) // connected, but the server never names an endpoint
		check(is, c.Handle(context.Background(), frame.MustParse(pingReq)))
	})
	t.Run("run ended", func(t *testing.T) {
		is := is.New(t)
		ls := newSSEServer(t)
		c, _ := ls.newClient()
		stop := runSSE(t, c)
		ls.conn(t).endpoint("/post")
		<-c.Ready()
		is.NoErr(stop())
		check(is, c.Handle(context.Background(), frame.MustParse(pingReq))) // at once, no EndpointWait
	})
	t.Run("ctx", func(t *testing.T) {
		is := is.New(t)
		c := &SSEClient{URL: "http://127.0.0.1:1/sse"} // never run
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		is.True(errors.Is(c.Handle(ctx, frame.MustParse(pingReq)), context.Canceled))
	})
}

func TestSSEClientFirstEndpointTimeout(t *testing.T) {
	t.Run("silent stream", func(t *testing.T) {
		is := is.New(t)
		ls := newSSEServer(t)
		c, _ := ls.newClient()
		c.FirstEndpointTimeout = 50 * time.Millisecond
		err := c.Run(context.Background())
		waitFor(t, ls.conn(t).gone, "the stream to be abandoned")
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "timed out waiting for SSE endpoint event"))
	})
	t.Run("HTTP errors", func(t *testing.T) {
		is := is.New(t)
		var gets atomic.Int32
		srv, client := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			gets.Add(1)
			http.Error(w, "down", http.StatusInternalServerError)
		}))
		logs := &transporttest.SyncBuffer{}
		c := &SSEClient{
			URL: srv.URL + "/sse", Client: client, Logger: debugLogger(logs),
			FirstEndpointTimeout: 50 * time.Millisecond,
			ReconnectDelay:       func(int) time.Duration { return 5 * time.Millisecond },
		}
		err := c.Run(context.Background())
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "timed out waiting for SSE endpoint event"))
		is.True(strings.Contains(logs.String(), "SSE connection failed: HTTP 500"))
		is.True(gets.Load() >= 1)
	})
	t.Run("not after the first endpoint", func(t *testing.T) {
		is := is.New(t)
		ls := newSSEServer(t)
		c, _ := ls.newClient()
		c.FirstEndpointTimeout = 30 * time.Millisecond
		stop := runSSE(t, c)
		conn := ls.conn(t)
		conn.endpoint("/post")
		<-c.Ready()
		// Outlive the first-endpoint bound; the stream must stay up.
		is.NoErr(c.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","method":"n"}`)))
		ls.post(t)
		timer := time.NewTimer(60 * time.Millisecond)
		select {
		case <-conn.gone:
			t.Fatal("the stream was dropped after the first endpoint")
		case <-timer.C:
		}
		is.NoErr(stop()) // nil when ctx ends
	})
}

func TestSSEClientIdleReconnect(t *testing.T) {
	is := is.New(t)
	ls := newSSEServer(t)
	c, _ := ls.newClient()
	c.IdleTimeout = 50 * time.Millisecond // the behaviour under test
	logs := &transporttest.SyncBuffer{}
	c.Logger = debugLogger(logs)
	runSSE(t, c)
	conn1 := ls.conn(t)
	conn1.endpoint("/post")
	waitFor(t, conn1.gone, "the silent stream to be dropped")
	conn2 := ls.conn(t)
	conn2.endpoint("/post2")
	is.NoErr(c.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","method":"n"}`)))
	is.Equal(ls.post(t).URI, "/post2")
	is.True(strings.Contains(logs.String(), "no data from the server for 0.05s"))
}

func TestSSEClientPostStatus(t *testing.T) {
	is := is.New(t)
	ls := newSSEServer(t)
	c, _ := ls.newClient()
	runSSE(t, c)
	conn := ls.conn(t)
	conn.endpoint("/post")
	ls.postStatus.Store(http.StatusInternalServerError)
	err := c.Handle(context.Background(), frame.MustParse(pingReq))
	ls.post(t)
	var st *frame.StatusError
	is.True(errors.As(err, &st))
	is.Equal(st.Code, http.StatusInternalServerError)

	ls.postStatus.Store(http.StatusOK) // the id is free again
	done := handleAsync(context.Background(), c, pingReq)
	ls.post(t)
	conn.message(pingResp)
	is.NoErr(result(t, done))
}

func TestSSEClientDuplicateID(t *testing.T) {
	is := is.New(t)
	ls := newSSEServer(t)
	c, _ := ls.newClient()
	runSSE(t, c)
	conn := ls.conn(t)
	conn.endpoint("/post")
	first := handleAsync(context.Background(), c, pingReq)
	ls.post(t)
	err := c.Handle(context.Background(), frame.MustParse(pingReq))
	var se *frame.SendError
	is.True(errors.As(err, &se))
	is.True(!se.Sent)
	is.True(strings.Contains(err.Error(), "already in flight"))
	conn.message(pingResp)
	is.NoErr(result(t, first))
}

func TestSSEClientAnswerInPostBody(t *testing.T) {
	is := is.New(t)
	ls := newSSEServer(t)
	ls.postReply = func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, pingResp)
	}
	c, sink := ls.newClient()
	runSSE(t, c)
	ls.conn(t).endpoint("/post")
	is.NoErr(c.Handle(context.Background(), frame.MustParse(pingReq)))
	ls.post(t)
	is.Equal(sink.lines(), []string{pingResp})
}

// TestSSEClientGoSDK talks to the official Go SDK's HTTP+SSE server.
func TestSSEClientGoSDK(t *testing.T) {
	is := is.New(t)
	server := newSDKServer()
	srv, client := newServer(t, mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil))
	sink := newCollector()
	c := &SSEClient{URL: srv.URL + "/mcp/sse", Client: client, ToClient: sink, FirstEndpointTimeout: 10 * time.Second}
	runSSE(t, c)
	ctx := context.Background()
	is.NoErr(c.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)))
	is.NoErr(c.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)))
	is.NoErr(c.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"two","method":"tools/list"}`)))
	got := sink.all()
	is.Equal(len(got), 2)
	is.Equal(got[0].ID(), frame.ID("1"))
	is.Equal(got[0].Get("result.protocolVersion").String(), "2024-11-05")
	is.Equal(got[1].ID(), frame.ID(`"two"`))
	is.Equal(got[1].Get("result.tools.0.name").String(), "echo")
}

// A first GET refused with a status that asking again will not change
// ends Run at once, and every send fails with that refusal; statuses that
// may pass are tried again until the bound.
func TestSSEClientRefusedAtStart(t *testing.T) {
	for _, tt := range []struct {
		code      int
		authLater bool
		definite  bool
	}{
		{http.StatusNotFound, false, true},
		{http.StatusBadRequest, false, true},
		{http.StatusMethodNotAllowed, false, true},
		{http.StatusUnauthorized, false, true},
		{http.StatusUnauthorized, true, false}, // a sign-in may bring a token
		{http.StatusForbidden, true, false},
		{http.StatusTooManyRequests, false, false},
		{http.StatusRequestTimeout, false, false},
		{http.StatusInternalServerError, false, false},
	} {
		t.Run(fmt.Sprintf("%d authLater=%v", tt.code, tt.authLater), func(t *testing.T) {
			is := is.New(t)
			var gets atomic.Int32
			srv, client := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gets.Add(1)
				http.Error(w, "no such thing", tt.code)
			}))
			c := &SSEClient{
				URL: srv.URL + "/wrong", Client: client, AuthLater: tt.authLater,
				FirstEndpointTimeout: time.Hour, // a definite refusal must not wait for it
				StartAttempts:        3,
				ReconnectDelay:       func(int) time.Duration { return 0 },
			}
			err := c.Run(context.Background())
			var se *StartError
			is.True(errors.As(err, &se))
			is.True(errors.Is(err, frame.ErrUnavailable)) // not retried by the retry stage
			var st *frame.StatusError
			is.True(errors.As(err, &st))
			is.Equal(st.Code, tt.code)
			is.Equal(se.URL, srv.URL+"/wrong")
			if tt.definite {
				is.Equal(gets.Load(), int32(1))
				is.True(se.Status != nil)
				is.Equal(string(se.Status.Body), "no such thing\n") // for the explanation
			} else {
				is.Equal(gets.Load(), int32(3)) // StartAttempts spent
				is.True(se.Status == nil)
			}
			// Every send fails with it, at once.
			herr := c.Handle(context.Background(), frame.MustParse(pingReq))
			var hse *frame.SendError
			is.True(errors.As(herr, &hse))
			is.True(!hse.Sent)
			is.True(errors.As(herr, &se))
		})
	}
}

// Nothing listening: the first GET is never sent (the connection
// refused), and Run fails at once instead of trying again until
// FirstEndpointTimeout: a server never reached is not waited for. Once a
// GET has been answered, even with a status that may pass, a refusal is
// a server gone away, and tried again.
func TestSSEClientNothingThereAtStart(t *testing.T) {
	is := is.New(t)
	srv, client := newServer(t, http.NotFoundHandler())
	url := srv.URL + "/sse"
	srv.Close()
	c := &SSEClient{URL: url, Client: client, FirstEndpointTimeout: time.Hour, ReconnectDelay: func(int) time.Duration { return 0 }}
	err := c.Run(context.Background())
	var se *StartError
	is.True(errors.As(err, &se))
	var send *frame.SendError
	is.True(errors.As(err, &send)) // the dial's failure, for the explanation
	is.True(!send.Sent)
	is.True(errors.Is(err, syscall.ECONNREFUSED))

	// Answered first (503), then refused: tried again, until StartAttempts.
	var gets atomic.Int32
	up, upClient := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		http.Error(w, "starting", http.StatusServiceUnavailable)
	}))
	refused := 0
	c = &SSEClient{URL: up.URL + "/sse", Client: upClient, FirstEndpointTimeout: time.Hour, StartAttempts: 3,
		ReconnectDelay: func(int) time.Duration {
			if refused == 0 {
				up.Close() // it goes away after its first answer
			}
			refused++
			return 0
		}}
	err = c.Run(context.Background())
	is.True(errors.As(err, &se))
	is.True(errors.Is(err, syscall.ECONNREFUSED))
	is.Equal(gets.Load(), int32(1))
	is.Equal(refused, 2) // the refusals were waited for and tried again
}

// Auto falling back to HTTP+SSE on a refused POST, then refused on the
// GET too, says both at once: the URL is wrong.
func TestAutoRefusedBothWays(t *testing.T) {
	is := is.New(t)
	srv, client := newServer(t, http.NotFoundHandler())
	a, _, _ := newAutoRunning(t, srv.URL+"/wrong", client)
	start := time.Now()
	err := a.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`))
	is.True(time.Since(start) < 5*time.Second) // not the first-endpoint bound
	var se *StartError
	is.True(errors.As(err, &se))
	is.Equal(se.Status.Code, http.StatusNotFound)
	is.True(se.PostStatus != nil)
	is.Equal(se.PostStatus.Code, http.StatusNotFound)
	is.Equal(err.Error(), "the Streamable HTTP POST was refused with HTTP 404 and the HTTP+SSE GET with HTTP 404")
}
