package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// newAuto returns an Auto whose both transports use url and deliver to one
// sink, with Run running until the test ends.
func newAuto(t testing.TB, url string, client *http.Client) (*Auto, *collector, *transporttest.SyncBuffer) {
	sink := newCollector()
	logs := &transporttest.SyncBuffer{}
	a := &Auto{
		Streamable: &StreamableClient{URL: url, Client: client, ToClient: sink},
		SSE:        &SSEClient{URL: url, Client: client, ToClient: sink, ReconnectDelay: func(int) time.Duration { return 0 }},
		Logger:     debugLogger(logs),
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Auto.Run: %v", err)
		}
	})
	return a, sink, logs
}

func TestAutoSwitches(t *testing.T) {
	for _, code := range []int{http.StatusMethodNotAllowed, http.StatusNotFound, http.StatusBadRequest} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			is := is.New(t)
			ls := newSSEServer(t)
			var streamablePosts atomic.Int32
			ls.streamablePost = func(w http.ResponseWriter, r *http.Request) {
				streamablePosts.Add(1)
				http.Error(w, http.StatusText(code), code)
			}
			a, sink, logs := newAuto(t, ls.url+"/sse", ls.client)

			// Several first messages at once.
			var results []<-chan error
			for i := 1; i <= 3; i++ {
				results = append(results, handleAsync(context.Background(), a, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize"}`, i)))
			}
			conn := ls.conn(t) // one SSE stream
			conn.endpoint("/messages?s=1")
			for range 3 {
				p := ls.post(t)
				is.Equal(p.URI, "/messages?s=1")
				id := frame.MustParse(p.Body).ID()
				conn.message(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{}}`)
			}
			for _, r := range results {
				is.NoErr(result(t, r))
			}
			is.Equal(len(sink.lines()), 3)
			is.True(streamablePosts.Load() >= 1)
			is.Equal(strings.Count(logs.String(), "switching to HTTP+SSE"), 1)
			select {
			case <-ls.conns:
				t.Fatal("a second SSE stream")
			default:
			}

			// Later messages go straight to SSE.
			before := streamablePosts.Load()
			is.NoErr(a.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)))
			is.Equal(ls.post(t).URI, "/messages?s=1")
			is.Equal(streamablePosts.Load(), before)

			_, err := a.Listen(context.Background(), nil, nil)
			var st *frame.StatusError
			is.True(errors.As(err, &st))
			is.Equal(st.Code, http.StatusMethodNotAllowed)
			is.NoErr(a.EndSession(context.Background(), nil))
		})
	}
}

func TestAutoGoSDKSSEServer(t *testing.T) {
	is := is.New(t)
	server := newSDKServer()
	srv, client := newServer(t, mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil))
	a, sink, _ := newAuto(t, srv.URL+"/mcp", client)
	is.NoErr(a.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)))
	is.NoErr(a.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)))
	is.NoErr(a.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)))
	got := sink.all()
	is.Equal(len(got), 2)
	is.Equal(got[0].Get("result.serverInfo.name").String(), "sdk-peer")
	is.Equal(got[1].Get("result.tools.0.name").String(), "echo")
}

func TestAutoStaysAfterSuccess(t *testing.T) {
	is := is.New(t)
	var posts atomic.Int32
	var gets atomic.Int32
	srv, client := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
		}
		_, _ = io.ReadAll(r.Body)
		if posts.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, pingResp)
			return
		}
		http.Error(w, "nope", http.StatusMethodNotAllowed)
	}))
	a, _, logs := newAuto(t, srv.URL, client)
	is.NoErr(a.Handle(context.Background(), frame.MustParse(pingReq)))
	err := a.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	var st *frame.StatusError
	is.True(errors.As(err, &st))
	is.Equal(st.Code, http.StatusMethodNotAllowed) // reported, not a reason to switch
	is.Equal(gets.Load(), int32(0))
	is.True(!strings.Contains(logs.String(), "switching"))
}

func TestAutoDoesNotSwitchOnOtherAnswers(t *testing.T) {
	is := is.New(t)
	var n atomic.Int32
	srv, client := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		switch n.Add(1) {
		case 1: // a Streamable server refusing the request, in JSON-RPC
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad"}}`)
		case 2:
			http.Error(w, "oops", http.StatusInternalServerError)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, pingResp)
		}
	}))
	a, sink, logs := newAuto(t, srv.URL, client)
	var st *frame.StatusError
	is.True(errors.As(a.Handle(context.Background(), frame.MustParse(pingReq)), &st))
	is.Equal(st.Code, http.StatusBadRequest)
	is.True(errors.As(a.Handle(context.Background(), frame.MustParse(pingReq)), &st))
	is.Equal(st.Code, http.StatusInternalServerError)
	is.NoErr(a.Handle(context.Background(), frame.MustParse(pingReq)))
	is.Equal(sink.lines(), []string{pingResp})
	is.True(!strings.Contains(logs.String(), "switching"))
}

// newAutoRunning is newAuto for tests in which Run may fail: its error is
// returned by the function it gives, not reported.
func newAutoRunning(t testing.TB, url string, client *http.Client) (*Auto, *collector, func() error) {
	sink := newCollector()
	a := &Auto{
		Streamable: &StreamableClient{URL: url, Client: client, ToClient: sink},
		SSE:        &SSEClient{URL: url, Client: client, ToClient: sink, FirstEndpointTimeout: time.Hour, ReconnectDelay: func(int) time.Duration { return 0 }},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var runErr error
	var once sync.Once
	wait := func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}
	t.Cleanup(func() { wait() })
	return a, sink, wait
}
