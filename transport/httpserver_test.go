package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Accept header values.
const (
	acceptBoth = "application/json, text/event-stream"
	acceptJSON = "application/json"
)

// serverTestWait bounds every wait of these tests; reaching it is a
// failure, never a synchronisation.
const serverTestWait = 20 * time.Second

// echoServe answers every request with its params at once, and ends the
// exchange once all are answered.
func echoServe(ctx context.Context, m frame.Message, x *Exchange) error {
	for el := range m.Elements() {
		if el.IsRequest() {
			params := el.Get("params").Raw
			if params == "" {
				params = "{}"
			}
			if err := x.Send(ctx, frame.ResultResponse(el.ID(), []byte(params)), ""); err != nil {
				return err
			}
		}
	}
	x.End()
	return nil
}

// serverHarness is an HTTPServer on loopback.
type serverHarness struct {
	srv    *HTTPServer
	ts     *httptest.Server
	client *http.Client
}

func newServerHarness(t *testing.T, cfg HTTPServerConfig) *serverHarness {
	t.Helper()
	if cfg.Serve == nil {
		cfg.Serve = echoServe
	}
	h := &serverHarness{srv: NewHTTPServer(cfg)}
	h.ts = httptest.NewServer(h.srv)
	h.client = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		h.ts.Close()
		h.client.CloseIdleConnections()
	})
	return h
}

// do sends one request; hdr are name, value pairs.
func (h *serverHarness) do(t *testing.T, ctx context.Context, method, body string, hdr ...string) *http.Response {
	t.Helper()
	return sendTestRequest(t, ctx, h.client, method, h.ts.URL+"/mcp", body, hdr...)
}

// sendTestRequest sends one request to url with client, a JSON body when
// body is not empty; hdr are name, value pairs.
func sendTestRequest(t *testing.T, ctx context.Context, client *http.Client, method, url, body string, hdr ...string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// body reads a response's body to its end.
func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestServerHTTPErrors(t *testing.T) {
	h := newServerHarness(t, HTTPServerConfig{})
	echo := `{"jsonrpc":"2.0","id":1,"method":"echo"}`
	for _, tt := range []struct {
		name   string
		method string
		body   string
		hdr    []string
		status int
		want   string // the body, when it matters
	}{
		{"text content type", "POST", echo, []string{"Accept", acceptBoth, "Content-Type", "text/plain"}, 415, ""},
		{"no content type", "POST", echo, []string{"Accept", acceptBoth, "Content-Type", ""}, 415, ""},
		{"json with charset", "POST", echo, []string{"Accept", acceptJSON, "Content-Type", "application/json; charset=utf-8"}, 200, `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"html only", "POST", echo, []string{"Accept", "text/html"}, 406, ""},
		{"json refused by q=0", "POST", echo, []string{"Accept", "application/json;q=0"}, 406, ""},
		{"no Accept means JSON", "POST", echo, nil, 200, `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"wildcard means JSON", "POST", echo, []string{"Accept", "*/*"}, 200, `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"not JSON", "POST", `{"jsonrpc":`, []string{"Accept", acceptBoth}, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: the body is not JSON"}}`},
		{"empty body", "POST", ``, []string{"Accept", acceptBoth}, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: the body is not JSON"}}`},
		{"not a message", "POST", `42`, []string{"Accept", acceptBoth}, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: not a JSON-RPC message"}}`},
		{"object without method", "POST", `{"jsonrpc":"2.0","foo":1}`, []string{"Accept", acceptBoth}, 400, ""},
		{"id true", "POST", `{"jsonrpc":"2.0","id":true,"method":"echo"}`, []string{"Accept", acceptBoth}, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: the id of a request must be a string or an integer"}}`},
		{"null id", "POST", `{"jsonrpc":"2.0","id":null,"method":"echo"}`, []string{"Accept", acceptBoth}, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: the id of a request must be a string or an integer"}}`},
		{"no jsonrpc", "POST", `{"id":3,"method":"echo"}`, []string{"Accept", acceptBoth}, 400, `{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"invalid request: jsonrpc must be \"2.0\""}}`},
		{"params array", "POST", `{"jsonrpc":"2.0","id":"p","method":"echo","params":[1]}`, []string{"Accept", acceptBoth}, 400, `{"jsonrpc":"2.0","id":"p","error":{"code":-32600,"message":"invalid request: params must be an object"}}`},
		{"bad notification", "POST", `{"jsonrpc":"2.0","method":"n","params":7}`, []string{"Accept", acceptBoth}, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: params must be an object"}}`},
		{"invalid UTF-8 replaced", "POST", `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"t":"` + "\xffa\xe2\x82" + `"}}`, []string{"Accept", acceptJSON}, 200, `{"jsonrpc":"2.0","id":1,"result":{"t":"` + "\uFFFDa\uFFFD\uFFFD" + `"}}`},
		{"bad response", "POST", `{"jsonrpc":"2.0","id":4,"result":[]}`, []string{"Accept", acceptBoth}, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: result must be an object"}}`},
		{"PUT", "PUT", "", nil, 405, ""},
		{"GET wrong Accept", "GET", "", []string{"Accept", "application/json"}, 406, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			resp := h.do(t, t.Context(), tt.method, tt.body, tt.hdr...)
			got := body(t, resp)
			is.Equal(resp.StatusCode, tt.status)
			if tt.want != "" {
				is.Equal(got, tt.want)
			}
			if tt.status == 405 {
				is.Equal(resp.Header.Get("Allow"), "GET, POST, DELETE")
			}
		})
	}
}

// What the ServeFunc gets: the message with the request's headers, and
// the exchange's method and answer shape.
func TestServerHandsOverMessagesWithHeaders(t *testing.T) {
	is := is.New(t)
	type seen struct {
		method, body, tenant string
		sse                  bool
	}
	var mu sync.Mutex
	var got []seen
	h := newServerHarness(t, HTTPServerConfig{Serve: func(ctx context.Context, m frame.Message, x *Exchange) error {
		mu.Lock()
		got = append(got, seen{x.Method(), m.String(), m.Header().Get("X-Tenant"), x.EventStream()})
		mu.Unlock()
		if x.Method() == http.MethodGet {
			x.End()
			return nil
		}
		return echoServe(ctx, m, x)
	}})
	for _, r := range []struct{ method, body, accept string }{
		{"POST", `{"jsonrpc":"2.0","id":1,"method":"a"}`, acceptBoth},
		{"POST", `{"jsonrpc":"2.0","method":"n"}`, acceptJSON},
		{"GET", "", "text/event-stream"},
		{"DELETE", "", ""},
	} {
		body(t, h.do(t, t.Context(), r.method, r.body, "Accept", r.accept, "X-Tenant", "acme"))
	}
	is.Equal(got, []seen{
		{"POST", `{"jsonrpc":"2.0","id":1,"method":"a"}`, "acme", true},
		{"POST", `{"jsonrpc":"2.0","method":"n"}`, "acme", false},
		{"GET", "", "acme", true},
		{"DELETE", "", "acme", false},
	})
}

func TestServerAnswers(t *testing.T) {
	is := is.New(t)
	h := newServerHarness(t, HTTPServerConfig{})
	call := `{"jsonrpc":"2.0","id":"e","method":"echo","params":{"a":[1,2.50]}}`
	want := `{"jsonrpc":"2.0","id":"e","result":{"a":[1,2.50]}}`

	resp := h.do(t, t.Context(), "POST", call, "Accept", acceptJSON)
	is.Equal(body(t, resp), want)
	is.Equal(resp.Header.Get("Content-Type"), "application/json")

	resp = h.do(t, t.Context(), "POST", call, "Accept", acceptBoth)
	is.Equal(body(t, resp), "event: message\ndata: "+want+"\n\n")
	is.Equal(resp.Header.Get("Content-Type"), "text/event-stream")
	is.Equal(resp.Header.Get("Cache-Control"), "no-cache")

	batch := `[{"jsonrpc":"2.0","id":1,"method":"echo","params":{"n":1}},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":2,"method":"echo","params":{"n":2}}]`
	is.Equal(body(t, h.do(t, t.Context(), "POST", batch, "Accept", acceptJSON)), `[{"jsonrpc":"2.0","id":1,"result":{"n":1}},{"jsonrpc":"2.0","id":2,"result":{"n":2}}]`)

	for _, b := range []string{`{"jsonrpc":"2.0","method":"n"}`, `{"jsonrpc":"2.0","id":"s","result":{}}`, `[{"jsonrpc":"2.0","method":"n"}]`} {
		resp = h.do(t, t.Context(), "POST", b, "Accept", acceptBoth)
		is.Equal(body(t, resp), "")
		is.Equal(resp.StatusCode, http.StatusAccepted)
	}
	resp = h.do(t, t.Context(), "DELETE", "")
	body(t, resp)
	is.Equal(resp.StatusCode, http.StatusNoContent)
}

// A refusal is written as it is; any other error is a 502 naming the first
// request, and what was queued comes back unsent.
func TestServerRefusals(t *testing.T) {
	is := is.New(t)
	var unsent []string
	h := newServerHarness(t, HTTPServerConfig{Serve: func(ctx context.Context, m frame.Message, x *Exchange) error {
		x.OnDone(func(left []frame.Message) {
			for _, l := range left {
				unsent = append(unsent, l.String())
			}
		})
		if m.Method() == "teapot" {
			return &frame.StatusError{Code: http.StatusTeapot, Header: http.Header{"X-Why": {"tea"}}, Body: []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"no"}}`)}
		}
		if m.Method() == "later" {
			return &frame.StatusError{Code: http.StatusServiceUnavailable, Body: []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"later"}}`)}
		}
		_ = x.Send(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"queued"}`), "")
		return errors.New("the pipe broke")
	}})
	resp := h.do(t, t.Context(), "POST", `{"jsonrpc":"2.0","id":1,"method":"teapot"}`, "Accept", acceptBoth)
	is.Equal(body(t, resp), `{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"no"}}`)
	is.Equal(resp.StatusCode, http.StatusTeapot)
	is.Equal(resp.Header.Get("X-Why"), "tea")
	is.Equal(resp.Header.Get("Content-Type"), "application/json")
	is.Equal(resp.Header.Get("Retry-After"), "")

	resp = h.do(t, t.Context(), "POST", `{"jsonrpc":"2.0","id":1,"method":"later"}`, "Accept", acceptBoth)
	is.Equal(body(t, resp), `{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"later"}}`)
	is.Equal(resp.StatusCode, http.StatusServiceUnavailable)
	is.Equal(resp.Header.Get("Retry-After"), "1") // a 503 always says when to come back

	resp = h.do(t, t.Context(), "POST", `[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":7,"method":"a"}]`, "Accept", acceptBoth)
	is.Equal(body(t, resp), `{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"the server could not take the message: the pipe broke"}}`)
	is.Equal(resp.StatusCode, http.StatusBadGateway)
	is.Equal(unsent, []string{`{"jsonrpc":"2.0","method":"queued"}`}) // never written
}

// The side channel of the first message gives header fields; HoldHeader
// keeps an event stream's header for the first message.
func TestServerHeaderFromTheFirstMessage(t *testing.T) {
	is := is.New(t)
	release := make(chan struct{})
	h := newServerHarness(t, HTTPServerConfig{HeaderHold: time.Millisecond, Serve: func(ctx context.Context, m frame.Message, x *Exchange) error {
		x.HoldHeader()
		go func() {
			<-release
			_ = x.Send(context.Background(), frame.ResultResponse(m.ID(), []byte(`{}`)).WithHeader("Mcp-Session-Id", "s1"), "")
			x.End()
		}()
		return nil
	}})
	for _, accept := range []string{acceptBoth, acceptJSON} {
		done := make(chan *http.Response, 1)
		go func() {
			done <- h.do(t, t.Context(), "POST", `{"jsonrpc":"2.0","id":1,"method":"initialize"}`, "Accept", accept)
		}()
		release <- struct{}{} // the header has waited past HeaderHold
		resp := <-done
		body(t, resp)
		is.Equal(resp.Header.Get("Mcp-Session-Id"), "s1")
	}
}

// A quick event-stream answer leaves whole, with a length and the end of
// the stream; a slow one gets its header after HeaderHold, before the
// answer, so the client knows its request was accepted.
func TestServerEventStreamHeaderHold(t *testing.T) {
	t.Run("quick answer in one piece", func(t *testing.T) {
		is := is.New(t)
		h := newServerHarness(t, HTTPServerConfig{HeaderHold: time.Hour})
		resp := h.do(t, t.Context(), "POST", `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"ok":1}}`, "Accept", acceptBoth)
		is.Equal(body(t, resp), "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":1}}\n\n")
		is.True(resp.ContentLength > 0) // written whole, not in chunks
	})
	t.Run("slow answer: header first", func(t *testing.T) {
		is := is.New(t)
		release := make(chan struct{})
		h := newServerHarness(t, HTTPServerConfig{HeaderHold: time.Millisecond, Serve: func(ctx context.Context, m frame.Message, x *Exchange) error {
			go func() {
				<-release
				_ = echoServe(context.Background(), m, x)
			}()
			return nil
		}})
		resp := h.do(t, t.Context(), "POST", `{"jsonrpc":"2.0","id":2,"method":"slow"}`, "Accept", acceptBoth) // returns with the header
		is.Equal(resp.StatusCode, http.StatusOK)
		is.Equal(resp.ContentLength, int64(-1)) // streamed
		close(release)
		is.Equal(body(t, resp), "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n")
	})
}

// readUntil reads r until it has seen want, failing after serverTestWait.
func readUntil(t *testing.T, r io.Reader, want string) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		var seen []byte
		buf := make([]byte, 512)
		for {
			n, err := r.Read(buf)
			seen = append(seen, buf[:n]...)
			if strings.Contains(string(seen), want) || err != nil {
				got <- string(seen)
				return
			}
		}
	}()
	select {
	case s := <-got:
		if !strings.Contains(s, want) {
			t.Fatalf("stream ended before %q: %q", want, s)
		}
		return s
	case <-time.After(serverTestWait):
		t.Fatalf("no %q within %v", want, serverTestWait)
		return ""
	}
}

// A silent event stream gets a comment line every KeepAlive: a GET stream,
// and a POST's stream while its request runs; the answer still comes after
// it. A GET stream's events carry the ids NumberEvents gives, or their own.
func TestServerEventStreams(t *testing.T) {
	is := is.New(t)
	var mu sync.Mutex
	var get, post *Exchange
	gotGet, gotPost := make(chan struct{}), make(chan struct{})
	h := newServerHarness(t, HTTPServerConfig{HeaderHold: time.Millisecond, KeepAlive: 2 * time.Millisecond,
		Serve: func(ctx context.Context, m frame.Message, x *Exchange) error {
			mu.Lock()
			defer mu.Unlock()
			if x.Method() == http.MethodGet {
				n := 0
				x.NumberEvents(func(frame.Message) string { n++; return "n" + string(rune('0'+n)) })
				get = x
				close(gotGet)
			} else {
				post = x
				close(gotPost)
			}
			return nil
		}})

	getResp := h.do(t, t.Context(), "GET", "", "Accept", "text/event-stream")
	defer getResp.Body.Close()
	<-gotGet
	is.Equal(getResp.Header.Get("Content-Type"), "text/event-stream")
	is.True(strings.HasPrefix(readUntil(t, getResp.Body, ": keepalive\n\n"), ": keepalive\n\n"))
	is.NoErr(get.Send(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","method":"a"}`), ""))
	is.NoErr(get.Send(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","method":"b"}`), "own"))
	events := readUntil(t, getResp.Body, "id: own\n")
	is.True(strings.Contains(events, "id: n1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n\n")) // named as it was taken
	is.True(strings.Index(events, "id: n1\n") < strings.Index(events, "id: own\n"))                               // in order

	postResp := h.do(t, t.Context(), "POST", `{"jsonrpc":"2.0","id":3,"method":"slow"}`, "Accept", acceptBoth)
	<-gotPost
	is.True(strings.HasPrefix(readUntil(t, postResp.Body, ": keepalive\n\n"), ": keepalive\n\n"))
	is.NoErr(post.Send(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":3,"result":{}}`), ""))
	post.End()
	is.True(strings.HasSuffix(body(t, postResp), "data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n"))
	is.True(errors.Is(post.Send(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","method":"late"}`), ""), frame.ErrExchangeOver))

	get.End() // the stream ends
	body(t, getResp)
}

// Until the handler returns, Send never waits: a POST's answer refuses
// anything but a response beyond 16 queued; a response is always taken.
func TestServerSendWhileTheHandlerRuns(t *testing.T) {
	is := is.New(t)
	h := newServerHarness(t, HTTPServerConfig{Serve: func(ctx context.Context, m frame.Message, x *Exchange) error {
		if x.Method() == http.MethodGet {
			for range 20 { // a stream's backlog, handed over at once
				if err := x.Send(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"n"}`), ""); err != nil {
					return err
				}
			}
			x.End()
			return nil
		}
		for i := range 17 {
			err := x.Send(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"n"}`), "")
			if i < 16 && err != nil || i == 16 && !errors.Is(err, frame.ErrBusy) {
				return errors.New("unexpected Send result")
			}
		}
		return echoServe(ctx, m, x) // the response still goes
	}})
	resp := h.do(t, t.Context(), "POST", `{"jsonrpc":"2.0","id":1,"method":"a"}`, "Accept", acceptBoth)
	got := body(t, resp)
	is.Equal(resp.StatusCode, http.StatusOK)
	is.Equal(strings.Count(got, "event: message"), 17)
	resp = h.do(t, t.Context(), "GET", "", "Accept", "text/event-stream")
	is.Equal(strings.Count(body(t, resp), "event: message"), 20)
}

// WaitIdle waits for the requests in flight, and refuses nothing: a
// request that comes meanwhile is served, and counted.
func TestServerWaitIdle(t *testing.T) {
	is := is.New(t)
	release := make(chan struct{})
	started := make(chan struct{})
	h := newServerHarness(t, HTTPServerConfig{Serve: func(ctx context.Context, m frame.Message, x *Exchange) error {
		if m.Method() == "slow" {
			close(started)
			go func() {
				<-release
				_ = echoServe(context.Background(), m, x)
			}()
			return nil
		}
		return echoServe(ctx, m, x)
	}})
	is.NoErr(h.srv.WaitIdle(t.Context())) // nothing in flight
	slow := make(chan string, 1)
	go func() {
		slow <- body(t, h.do(t, context.Background(), "POST", `{"jsonrpc":"2.0","id":1,"method":"slow"}`, "Accept", acceptJSON))
	}()
	<-started
	is.Equal(h.srv.InFlight(), 1)

	ended, cancel := context.WithCancel(t.Context())
	cancel()
	is.Equal(h.srv.WaitIdle(ended), context.Canceled) // a request is in flight
	idle := make(chan error, 1)
	go func() { idle <- h.srv.WaitIdle(context.Background()) }()

	resp := h.do(t, t.Context(), "POST", `{"jsonrpc":"2.0","id":9,"method":"echo"}`, "Accept", acceptBoth)
	is.True(strings.Contains(body(t, resp), `{"jsonrpc":"2.0","id":9,"result":{}}`)) // still served
	resp = h.do(t, t.Context(), "POST", `{"jsonrpc":"2.0","method":"n"}`, "Accept", acceptBoth)
	body(t, resp)
	is.Equal(resp.StatusCode, http.StatusAccepted)

	close(release)
	is.Equal(<-slow, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	select {
	case err := <-idle:
		is.NoErr(err)
	case <-time.After(serverTestWait):
		t.Fatal("WaitIdle did not return")
	}
	is.Equal(h.srv.InFlight(), 0)
}

// TestServerLargeMessages round-trips a 16 MiB message, as JSON and as SSE.
func TestServerLargeMessages(t *testing.T) {
	is := is.New(t)
	h := newServerHarness(t, HTTPServerConfig{})
	big := strings.Repeat("0123456789abcdef", 16<<20/16) // 16 MiB
	call := `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"s":"` + big + `"}}`
	for _, accept := range []string{acceptJSON, acceptBoth} {
		got := body(t, h.do(t, t.Context(), "POST", call, "Accept", accept))
		is.True(strings.Contains(got, `{"jsonrpc":"2.0","id":1,"result":{"s":"`+big+`"}}`))
	}
}

// A POST that carries no request is over before its 202 is sent: what the
// exchange held (a session kept from idling) is let go before the client
// can send what it sends next, e.g. an initialize that needs that
// session's place.
func TestNotificationExchangeEndsBeforeIts202(t *testing.T) {
	is := is.New(t)
	var mu sync.Mutex
	ended := 0
	h := newServerHarness(t, HTTPServerConfig{Serve: func(_ context.Context, _ frame.Message, x *Exchange) error {
		x.OnDone(func([]frame.Message) {
			mu.Lock()
			ended++
			mu.Unlock()
		})
		return nil
	}})
	for i := range 50 {
		resp := h.do(t, t.Context(), "POST", `{"jsonrpc":"2.0","method":"notifications/n"}`, "Accept", acceptBoth)
		body(t, resp)
		is.Equal(resp.StatusCode, http.StatusAccepted)
		mu.Lock()
		n := ended
		mu.Unlock()
		is.Equal(n, i+1) // the exchange ended before the 202 was read
	}
}

// With PreferJSON, an answer that is one response alone by the time its
// header would go out is a JSON body, even for a client that accepts an
// event stream; an answer a notification opens, or one for a client that
// takes only event streams, stays a stream.
func TestServerPreferJSON(t *testing.T) {
	is := is.New(t)
	h := newServerHarness(t, HTTPServerConfig{HeaderHold: time.Hour, Serve: func(ctx context.Context, m frame.Message, x *Exchange) error {
		x.PreferJSON()
		if m.Method() == "progress" {
			_ = x.Send(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`), "")
		}
		return x.SendLast(ctx, frame.ResultResponse(m.ID(), []byte(`{}`)).WithHeader("X-Side", "kept"), "")
	}})

	resp := h.do(t, t.Context(), "POST", `{"jsonrpc":"2.0","id":1,"method":"plain"}`, "Accept", acceptBoth)
	is.Equal(body(t, resp), `{"jsonrpc":"2.0","id":1,"result":{}}`)
	is.Equal(resp.Header.Get("Content-Type"), "application/json")
	is.Equal(resp.Header.Get("X-Side"), "kept") // the side channel still gives header fields

	resp = h.do(t, t.Context(), "POST", `{"jsonrpc":"2.0","id":2,"method":"progress"}`, "Accept", acceptBoth)
	is.Equal(body(t, resp), "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n"+
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n")
	is.Equal(resp.Header.Get("Content-Type"), "text/event-stream")

	resp = h.do(t, t.Context(), "POST", `{"jsonrpc":"2.0","id":3,"method":"plain"}`, "Accept", "text/event-stream")
	is.Equal(body(t, resp), "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n")
	is.Equal(resp.Header.Get("Content-Type"), "text/event-stream")
}
