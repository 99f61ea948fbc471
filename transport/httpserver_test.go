//go:build linux

package transport

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// testGateway is an HTTPServer on loopback whose sessions run the scripted
// test server as a real child process.
type testGateway struct {
	srv    *HTTPServer
	ts     *httptest.Server
	client *http.Client
	logs   *transporttest.SyncBuffer
	stderr *transporttest.SyncBuffer
	served chan string // the method of every request the server is done with
}

func newTestGateway(t *testing.T, configure func(*HTTPServerConfig)) *testGateway {
	t.Helper()
	g := &testGateway{logs: &transporttest.SyncBuffer{}, stderr: &transporttest.SyncBuffer{}, served: make(chan string, 256)}
	cfg := HTTPServerConfig{
		Open: func(_ context.Context, id string, toClient Sink) (Backend, error) {
			cc := testChildCommand(t, "server")
			cc.Stderr = g.stderr
			cc.StderrPrefix = "[" + ShortSessionID(id) + "] "
			cc.StdinGrace, cc.TermGrace = 2*time.Second, 2*time.Second
			return StartChild(cc, toClient)
		},
		Logger: slog.New(slog.NewTextHandler(g.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if configure != nil {
		configure(&cfg)
	}
	g.srv = NewHTTPServer(cfg)
	g.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.srv.ServeHTTP(w, r)
		select {
		case g.served <- r.Method:
		default:
		}
	}))
	g.client = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testWait)
		defer cancel()
		g.srv.Close(ctx)
		g.ts.Close()
		g.client.CloseIdleConnections()
	})
	return g
}

// drainServed forgets the requests served so far.
func (g *testGateway) drainServed() {
	for {
		select {
		case <-g.served:
		default:
			return
		}
	}
}

// awaitServed waits until the server is done with one more request.
func (g *testGateway) awaitServed(t *testing.T) {
	t.Helper()
	select {
	case <-g.served:
	case <-time.After(testWait):
		t.Fatal("the server did not finish a request")
	}
}

// Accept header values.
const (
	acceptBoth = "application/json, text/event-stream"
	acceptJSON = "application/json"
)

// do sends one request to the gateway.
func (g *testGateway) do(t *testing.T, ctx context.Context, method, sid, accept, body string, hdr ...string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, g.ts.URL+"/mcp", rd)
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// post sends a POST and returns the response, body unread.
func (g *testGateway) post(t *testing.T, sid, accept, body string, hdr ...string) *http.Response {
	t.Helper()
	return g.do(t, context.Background(), http.MethodPost, sid, accept, body, hdr...)
}

// call POSTs a request and returns every message of its answer (SSE or
// JSON) and the response.
func (g *testGateway) call(t *testing.T, sid, accept, body string) ([]frame.Message, *http.Response) {
	t.Helper()
	resp := g.post(t, sid, accept, body)
	defer resp.Body.Close()
	return readAnswer(t, resp), resp
}

// readAnswer reads a POST's answer to its end.
func readAnswer(t *testing.T, resp *http.Response) []frame.Message {
	t.Helper()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var msgs []frame.Message
		r := frame.NewSSEReader(resp.Body, 0)
		for {
			ev, err := r.Next()
			if err != nil {
				return msgs
			}
			msgs = append(msgs, frame.MustParse(string(ev.Data)))
		}
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		return nil
	}
	return []frame.Message{frame.MustParse(string(b))}
}

// nextEvent reads the next message from an event stream.
func nextEvent(t *testing.T, r *frame.SSEReader) frame.Message {
	t.Helper()
	ev, err := r.Next()
	if err != nil {
		t.Fatalf("event stream: %v", err)
	}
	return frame.MustParse(string(ev.Data))
}

const initBody = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`

// initialize opens a session and returns its id.
func (g *testGateway) initialize(t *testing.T) string {
	t.Helper()
	msgs, resp := g.call(t, "", acceptBoth, initBody)
	if resp.StatusCode != http.StatusOK || len(msgs) != 1 || msgs[0].Kind() != frame.Result {
		t.Fatalf("initialize: %d %v", resp.StatusCode, msgs)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("no Mcp-Session-Id")
	}
	r := g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.Body.Close()
	if r.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d", r.StatusCode)
	}
	return sid
}

// childPID asks a session's child for its pid.
func (g *testGateway) childPID(t *testing.T, sid string) int {
	t.Helper()
	msgs, _ := g.call(t, sid, acceptJSON, `{"jsonrpc":"2.0","id":"pid","method":"pid"}`)
	if len(msgs) != 1 {
		t.Fatalf("pid: %v", msgs)
	}
	return int(msgs[0].Get("result.pid").Int())
}

func TestServerInitializeOpensASession(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, nil)
	msgs, resp := g.call(t, "", acceptBoth, initBody)
	is.Equal(resp.StatusCode, http.StatusOK)
	is.True(strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"))
	is.Equal(len(msgs), 1)
	is.Equal(msgs[0].String(), `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"test","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	is.True(len(sid) >= 16)
	for _, c := range []byte(sid) {
		is.True(c >= 0x21 && c <= 0x7e) // visible ASCII
	}
	is.Equal(g.srv.Sessions(), 1)

	other := g.initialize(t)
	is.True(other != sid)
	is.Equal(g.srv.Sessions(), 2)
}

func TestServerInitializeInJSON(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, nil)
	msgs, resp := g.call(t, "", acceptJSON, initBody)
	is.Equal(resp.StatusCode, http.StatusOK)
	is.Equal(resp.Header.Get("Content-Type"), "application/json")
	is.True(resp.Header.Get("Mcp-Session-Id") != "")
	is.Equal(msgs[0].Kind(), frame.Result)
}

func TestServerInitializeRefusedByTheServerEndsTheSession(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, nil)
	for _, accept := range []string{acceptBoth, acceptJSON} {
		msgs, resp := g.call(t, "", accept, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"reject"}}}`)
		is.Equal(resp.StatusCode, http.StatusOK)
		is.Equal(resp.Header.Get("Mcp-Session-Id"), "") // no session to use
		is.Equal(len(msgs), 1)
		code, _ := msgs[0].ErrorCode()
		is.Equal(code, frame.CodeInvalidParams)
		is.Equal(g.srv.Sessions(), 0)
	}
}

func TestServerSessionErrors(t *testing.T) {
	g := newTestGateway(t, nil)
	sid := g.initialize(t)
	for _, tt := range []struct {
		name   string
		sid    string
		body   string
		status int
		code   int
		id     string
	}{
		{"sessionless request", "", `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`, 400, frame.CodeInvalidRequest, "5"},
		{"sessionless notification", "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 400, frame.CodeInvalidRequest, "null"},
		{"sessionless discover", "", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, 400, frame.CodeInvalidRequest, "1"},
		{"unknown session", "no-such-session", `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`, 404, frame.CodeInvalidRequest, "6"},
		{"initialize with unknown session", "no-such-session", initBody, 404, frame.CodeInvalidRequest, "0"},
		{"initialize again", sid, initBody, 400, frame.CodeInvalidRequest, "0"},
		{"initialize as notification", "", `{"jsonrpc":"2.0","method":"initialize"}`, 400, frame.CodeInvalidRequest, "null"},
		{"not JSON", sid, `{"jsonrpc":`, 400, frame.CodeParseError, "null"},
		{"empty body", sid, ``, 400, frame.CodeParseError, "null"},
		{"not a message", sid, `42`, 400, frame.CodeInvalidRequest, "null"},
		{"object without method", sid, `{"jsonrpc":"2.0","foo":1}`, 400, frame.CodeInvalidRequest, "null"},
		{"empty batch", sid, `[]`, 400, frame.CodeInvalidRequest, "null"},
		{"batch with junk", sid, `[{"jsonrpc":"2.0","id":1,"method":"echo"},7]`, 400, frame.CodeInvalidRequest, "null"},
		{"batched initialize", sid, `[` + initBody + `]`, 400, frame.CodeInvalidRequest, "null"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			msgs, resp := g.call(t, tt.sid, acceptBoth, tt.body)
			is.Equal(resp.StatusCode, tt.status)
			is.Equal(resp.Header.Get("Content-Type"), "application/json")
			is.Equal(len(msgs), 1)
			code, ok := msgs[0].ErrorCode()
			is.True(ok)
			is.Equal(code, tt.code)
			is.Equal(msgs[0].ID().String(), tt.id)
		})
	}
	is := is.New(t)
	is.Equal(g.srv.Sessions(), 1) // nothing opened another session
}

func TestServerHTTPErrors(t *testing.T) {
	g := newTestGateway(t, nil)
	sid := g.initialize(t)
	echo := `{"jsonrpc":"2.0","id":1,"method":"echo"}`
	for _, tt := range []struct {
		name   string
		method string
		sid    string
		accept string
		body   string
		hdr    []string
		status int
	}{
		{"text content type", "POST", sid, acceptBoth, echo, []string{"Content-Type", "text/plain"}, 415},
		{"no content type", "POST", sid, acceptBoth, echo, []string{"Content-Type", ""}, 415},
		{"json with charset", "POST", sid, acceptBoth, echo, []string{"Content-Type", "application/json; charset=utf-8"}, 200},
		{"html only", "POST", sid, "text/html", echo, nil, 406},
		{"json refused by q=0", "POST", sid, "application/json;q=0", echo, nil, 406},
		{"no Accept means JSON", "POST", sid, "", echo, nil, 200},
		{"wildcard means JSON", "POST", sid, "*/*", echo, nil, 200},
		{"unknown protocol version", "POST", sid, acceptBoth, echo, []string{"MCP-Protocol-Version", "1999-01-01"}, 400},
		{"known protocol version", "POST", sid, acceptBoth, echo, []string{"MCP-Protocol-Version", "2025-06-18"}, 200},
		{"PUT", "PUT", sid, "", "", nil, 405},
		{"GET without session", "GET", "", "text/event-stream", "", nil, 400},
		{"GET unknown session", "GET", "nope", "text/event-stream", "", nil, 404},
		{"GET wrong Accept", "GET", sid, "application/json", "", nil, 406},
		{"DELETE without session", "DELETE", "", "", "", nil, 400},
		{"DELETE unknown session", "DELETE", "nope", "", "", nil, 404},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			resp := g.do(t, context.Background(), tt.method, tt.sid, tt.accept, tt.body, tt.hdr...)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			is.Equal(resp.StatusCode, tt.status)
			if tt.status == 405 {
				is.Equal(resp.Header.Get("Allow"), "GET, POST, DELETE")
			}
		})
	}
}

func TestServerJSONOrSSEByAccept(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, nil)
	sid := g.initialize(t)
	body := `{"jsonrpc":"2.0","id":"e","method":"echo","params":{"a":[1,2.50]}}`
	want := `{"jsonrpc":"2.0","id":"e","result":{"a":[1,2.50]}}`

	msgs, resp := g.call(t, sid, acceptJSON, body)
	is.Equal(resp.Header.Get("Content-Type"), "application/json")
	is.Equal(resp.Header.Get("Mcp-Session-Id"), "") // only on initialize
	is.Equal(len(msgs), 1)
	is.Equal(msgs[0].String(), want)

	msgs, resp = g.call(t, sid, acceptBoth, body)
	is.Equal(resp.Header.Get("Content-Type"), "text/event-stream")
	is.Equal(len(msgs), 1)
	is.Equal(msgs[0].String(), want)

	msgs, resp = g.call(t, sid, "text/event-stream", body)
	is.Equal(resp.Header.Get("Content-Type"), "text/event-stream")
	is.Equal(msgs[0].String(), want)
}

func TestServerBatch(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, nil)
	sid := g.initialize(t)
	body := `[{"jsonrpc":"2.0","id":1,"method":"echo","params":{"n":1}},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":2,"method":"echo","params":{"n":2}}]`
	resp := g.post(t, sid, acceptJSON, body)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	is.Equal(resp.StatusCode, 200)
	is.Equal(string(b), `[{"jsonrpc":"2.0","id":1,"result":{"n":1}},{"jsonrpc":"2.0","id":2,"result":{"n":2}}]`)

	msgs, _ := g.call(t, sid, acceptBoth, body)
	is.Equal(len(msgs), 2)
	is.Equal(msgs[1].String(), `{"jsonrpc":"2.0","id":2,"result":{"n":2}}`)

	resp = g.post(t, sid, acceptBoth, `[{"jsonrpc":"2.0","method":"notifications/x"}]`)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusAccepted)
}

func TestServerNotificationsAndResponsesGet202(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, nil)
	sid := g.initialize(t)
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`,
		`{"jsonrpc":"2.0","id":"nobody-asked","result":{}}`,
		`{"jsonrpc":"2.0","id":"nobody-asked","error":{"code":-1,"message":"x"}}`,
	} {
		resp := g.post(t, sid, acceptBoth, body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		is.Equal(resp.StatusCode, http.StatusAccepted)
		is.Equal(len(b), 0)
	}
}

func TestServerDeleteEndsTheSessionAndItsChild(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, nil)
	sid := g.initialize(t)
	pid := g.childPID(t, sid)
	is.True(!transporttest.ProcessGone(t, pid, 0))

	resp := g.do(t, context.Background(), http.MethodDelete, sid, "", "")
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusNoContent)
	is.True(transporttest.ProcessGone(t, pid, 0)) // gone when DELETE returns
	is.Equal(g.srv.Sessions(), 0)

	resp = g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"echo"}`)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusNotFound)
	resp = g.do(t, context.Background(), http.MethodDelete, sid, "", "")
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusNotFound)
}

func TestServerGETStream(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, nil)
	sid := g.initialize(t)

	get := g.do(t, context.Background(), http.MethodGet, sid, "text/event-stream", "")
	defer get.Body.Close()
	is.Equal(get.StatusCode, http.StatusOK)
	is.Equal(get.Header.Get("Content-Type"), "text/event-stream")

	second := g.do(t, context.Background(), http.MethodGet, sid, "text/event-stream", "")
	second.Body.Close()
	is.Equal(second.StatusCode, http.StatusConflict) // one stream per session

	// A JSON POST cannot carry the server's notification: it goes to the
	// GET stream.
	msgs, _ := g.call(t, sid, acceptJSON, `{"jsonrpc":"2.0","id":1,"method":"notify","params":{"data":"hello"}}`)
	is.Equal(msgs[0].String(), `{"jsonrpc":"2.0","id":1,"result":{}}`)
	r := frame.NewSSEReader(get.Body, 0)
	is.Equal(nextEvent(t, r).String(), `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hello"}}`)

	// An SSE POST carries it itself, ahead of its response.
	msgs, _ = g.call(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":2,"method":"notify","params":{"data":"on the post"}}`)
	is.Equal(len(msgs), 2)
	is.Equal(msgs[0].Method(), "notifications/message")
	is.Equal(msgs[1].ID(), frame.ID("2"))

	// DELETE ends the stream.
	resp := g.do(t, context.Background(), http.MethodDelete, sid, "", "")
	resp.Body.Close()
	_, err := r.Next()
	is.Equal(err, io.EOF)
}

func TestServerBacklogWaitsForTheGETStream(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, func(c *HTTPServerConfig) { c.Backlog = 2 })
	sid := g.initialize(t)
	for i := range 3 {
		msgs, _ := g.call(t, sid, acceptJSON, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"notify","params":{"data":%d}}`, i, i))
		is.Equal(len(msgs), 1)
	}
	is.True(strings.Contains(g.logs.String(), "backlog full"))

	get := g.do(t, context.Background(), http.MethodGet, sid, "text/event-stream", "")
	defer get.Body.Close()
	r := frame.NewSSEReader(get.Body, 0)
	is.Equal(nextEvent(t, r).Get("params.data").Raw, "1") // 0 was dropped
	is.Equal(nextEvent(t, r).Get("params.data").Raw, "2")
}

func TestServerServerRequestsReachTheRightClient(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, nil)
	type client struct {
		sid    string
		resp   *http.Response
		events *frame.SSEReader
	}
	var clients [2]client
	for i := range clients {
		c := &clients[i]
		c.sid = g.initialize(t)
		c.resp = g.post(t, c.sid, acceptBoth, fmt.Sprintf(`{"jsonrpc":"2.0","id":"call","method":"ask","params":{"message":"question %d"}}`, i))
		defer c.resp.Body.Close()
		c.events = frame.NewSSEReader(c.resp.Body, 0)
	}
	// Both children ask under the same id; each question reaches its own client.
	for i := range clients {
		c := &clients[i]
		ask := nextEvent(t, c.events)
		is.Equal(ask.Method(), "elicitation/create")
		is.Equal(ask.ID(), frame.ID(`"ask-1"`))
		is.Equal(ask.Get("params.message").String(), fmt.Sprintf("question %d", i))
	}
	// Answer in reverse order; each answer goes back to its own child.
	for i := len(clients) - 1; i >= 0; i-- {
		c := &clients[i]
		resp := g.post(t, c.sid, acceptBoth, fmt.Sprintf(`{"jsonrpc":"2.0","id":"ask-1","result":{"action":"accept","content":{"who":%d}}}`, i))
		resp.Body.Close()
		is.Equal(resp.StatusCode, http.StatusAccepted)
		res := nextEvent(t, c.events)
		is.Equal(res.String(), fmt.Sprintf(`{"jsonrpc":"2.0","id":"call","result":{"action":"accept","content":{"who":%d}}}`, i))
		_, err := c.events.Next()
		is.Equal(err, io.EOF) // the POST's stream ends with its response
	}
}

func TestServerProgressGoesToItsPOST(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, nil)
	sid := g.initialize(t)
	get := g.do(t, context.Background(), http.MethodGet, sid, "text/event-stream", "")
	defer get.Body.Close()
	msgs, _ := g.call(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":3,"method":"progress","params":{"_meta":{"progressToken":"tok-1"}}}`)
	is.Equal(len(msgs), 2)
	is.Equal(msgs[0].String(), `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok-1","progress":1,"total":2}}`)
	is.Equal(msgs[1].String(), `{"jsonrpc":"2.0","id":3,"result":{}}`)
}

func TestServerChildCrashEndsTheSession(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, nil)
	sid := g.initialize(t)
	pid := g.childPID(t, sid)
	msgs, resp := g.call(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":"boom","method":"crash"}`)
	is.Equal(resp.StatusCode, http.StatusOK)
	is.Equal(len(msgs), 1) // the waiting request is answered, not left hanging
	code, _ := msgs[0].ErrorCode()
	is.Equal(code, frame.CodeGateway)
	is.Equal(msgs[0].ID(), frame.ID(`"boom"`))
	is.True(strings.Contains(msgs[0].Get("error.message").String(), "exited"))
	is.True(transporttest.ProcessGone(t, pid, 0))

	resp = g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"echo"}`)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusNotFound)
}

func TestServerDisconnectDropsTheLateResponse(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, nil)
	sid := g.initialize(t)
	ctx, cancel := context.WithCancel(context.Background())
	g.drainServed()
	resp := g.do(t, ctx, http.MethodPost, sid, acceptBoth, `{"jsonrpc":"2.0","id":"w","method":"wait"}`)
	is.Equal(resp.StatusCode, http.StatusOK) // the SSE head comes at once
	cancel()
	resp.Body.Close()
	g.awaitServed(t) // the server has seen the client go

	// The request is still pending in the child (a disconnect is not a
	// cancel): its id cannot be reused yet, or its late answer would be
	// taken for the new request's.
	msgs, resp := g.call(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":"w","method":"echo"}`)
	is.Equal(resp.StatusCode, http.StatusBadRequest)
	code, _ := msgs[0].ErrorCode()
	is.Equal(code, frame.CodeInvalidRequest)

	// Release it; the late answer is dropped (the child answers it before
	// the echo that follows), and then the id is free again.
	r := g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","method":"release"}`)
	r.Body.Close()
	is.Equal(r.StatusCode, http.StatusAccepted)
	msgs, _ = g.call(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":"x","method":"echo","params":{}}`)
	is.Equal(msgs[0].String(), `{"jsonrpc":"2.0","id":"x","result":{}}`)
	is.True(strings.Contains(g.logs.String(), "dropped a late response"))
	msgs, _ = g.call(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":"w","method":"echo","params":{"after":true}}`)
	is.Equal(len(msgs), 1)
	is.Equal(msgs[0].String(), `{"jsonrpc":"2.0","id":"w","result":{"after":true}}`)
}

func TestServerCancelFreesAnAbandonedID(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, nil)
	sid := g.initialize(t)
	ctx, cancel := context.WithCancel(context.Background())
	g.drainServed()
	resp := g.do(t, ctx, http.MethodPost, sid, acceptBoth, `{"jsonrpc":"2.0","id":4,"method":"wait"}`)
	cancel()
	resp.Body.Close()
	g.awaitServed(t)
	r := g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}`)
	r.Body.Close()
	is.Equal(r.StatusCode, http.StatusAccepted)
	msgs, _ := g.call(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":4,"method":"echo","params":{"n":4}}`)
	is.Equal(msgs[0].String(), `{"jsonrpc":"2.0","id":4,"result":{"n":4}}`)
}

// A client that cancels a request stops waiting for it: its POST finishes
// at once — an SSE answer ends without a response, a JSON answer carries a
// "request cancelled" error — and the server's late answer is dropped.
func TestServerCancelFinishesThePOST(t *testing.T) {
	is := is.New(t)
	waits := make(chan frame.ID, 4) // ids of the "wait" requests handed to the child
	g := newTestGateway(t, func(cfg *HTTPServerConfig) {
		open := cfg.Open
		cfg.Open = func(ctx context.Context, id string, toClient Sink) (Backend, error) {
			b, err := open(ctx, id, toClient)
			if err != nil {
				return nil, err
			}
			return observedBackend{Backend: b, waits: waits}, nil
		}
	})
	sid := g.initialize(t)

	sse := g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":5,"method":"wait"}`)
	defer sse.Body.Close()
	is.Equal(sse.StatusCode, http.StatusOK)
	jsonDone := make(chan []frame.Message, 1)
	go func() {
		resp := g.post(t, sid, acceptJSON, `{"jsonrpc":"2.0","id":6,"method":"wait"}`)
		defer resp.Body.Close()
		jsonDone <- readAnswer(t, resp)
	}()
	for range 2 { // both requests are registered and at the child
		select {
		case <-waits:
		case <-time.After(testWait):
			t.Fatal("the wait requests did not reach the child")
		}
	}

	for _, id := range []string{"5", "6"} {
		r := g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+`}}`)
		r.Body.Close()
		is.Equal(r.StatusCode, http.StatusAccepted)
	}
	is.Equal(len(readAnswer(t, sse)), 0) // the stream ended, no response
	select {
	case msgs := <-jsonDone:
		is.Equal(len(msgs), 1)
		is.Equal(msgs[0].String(), `{"jsonrpc":"2.0","id":6,"error":{"code":-32000,"message":"request cancelled"}}`)
	case <-time.After(testWait):
		t.Fatal("the JSON POST was not finished by the cancel")
	}

	// The child answers late; the answers go nowhere, and the session goes on.
	r := g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","method":"release"}`)
	r.Body.Close()
	msgs, _ := g.call(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":7,"method":"echo","params":{"ok":1}}`)
	is.Equal(msgs[0].String(), `{"jsonrpc":"2.0","id":7,"result":{"ok":1}}`)
}

// observedBackend reports the ids of the "wait" requests it passes on.
type observedBackend struct {
	Backend
	waits chan<- frame.ID
}

func (b observedBackend) Handle(ctx context.Context, m frame.Message) error {
	err := b.Backend.Handle(ctx, m)
	if m.Method() == "wait" {
		b.waits <- m.ID()
	}
	return err
}

func TestServerDuplicateIDInFlight(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, nil)
	sid := g.initialize(t)
	first := g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"wait"}`)
	defer first.Body.Close()
	is.Equal(first.StatusCode, http.StatusOK)
	msgs, resp := g.call(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"echo"}`)
	is.Equal(resp.StatusCode, http.StatusBadRequest)
	code, _ := msgs[0].ErrorCode()
	is.Equal(code, frame.CodeInvalidRequest)
	r := g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","method":"release"}`)
	r.Body.Close()
	got := readAnswer(t, first)
	is.Equal(got[0].String(), `{"jsonrpc":"2.0","id":1,"result":{}}`)
}

// fakeTimers records AfterFunc calls so that tests fire them at will.
type fakeTimers struct {
	mu     sync.Mutex
	timers []*fakeTimer
	armed  chan struct{} // receives once per AfterFunc call
}

func newFakeTimers() *fakeTimers { return &fakeTimers{armed: make(chan struct{}, 64)} }

// drainArmed forgets the AfterFunc calls seen so far.
func (ft *fakeTimers) drainArmed() {
	for {
		select {
		case <-ft.armed:
		default:
			return
		}
	}
}

// awaitArmed waits for the next AfterFunc call.
func (ft *fakeTimers) awaitArmed(t *testing.T) {
	t.Helper()
	select {
	case <-ft.armed:
	case <-time.After(testWait):
		t.Fatal("no timer was started")
	}
}

type fakeTimer struct {
	d       time.Duration
	f       func()
	stopped bool
}

func (ft *fakeTimers) AfterFunc(d time.Duration, f func()) func() bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	tm := &fakeTimer{d: d, f: f}
	ft.timers = append(ft.timers, tm)
	ft.armed <- struct{}{}
	return func() bool {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		was := !tm.stopped
		tm.stopped = true
		return was
	}
}

// fire runs every timer still armed and reports how many it ran.
func (ft *fakeTimers) fire() int {
	ft.mu.Lock()
	var due []*fakeTimer
	for _, tm := range ft.timers {
		if !tm.stopped {
			tm.stopped = true
			due = append(due, tm)
		}
	}
	ft.mu.Unlock()
	for _, tm := range due {
		tm.f()
	}
	return len(due)
}

func TestServerIdleSessionsEnd(t *testing.T) {
	is := is.New(t)
	timers := newFakeTimers()
	g := newTestGateway(t, func(c *HTTPServerConfig) {
		c.IdleTimeout = 30 * time.Minute
		c.AfterFunc = timers.AfterFunc
	})
	sid := g.initialize(t)
	pid := g.childPID(t, sid)

	// An open GET stream keeps the session alive.
	ctx, cancel := context.WithCancel(context.Background())
	get := g.do(t, ctx, http.MethodGet, sid, "text/event-stream", "")
	is.Equal(get.StatusCode, http.StatusOK)
	is.Equal(timers.fire(), 0) // every timer was stopped when the stream opened
	is.Equal(g.srv.Sessions(), 1)
	timers.drainArmed()
	cancel()
	get.Body.Close()

	// Once the stream is gone the idle timer starts; when it fires the
	// session ends.
	timers.awaitArmed(t)
	is.Equal(timers.fire(), 1)
	is.Equal(g.srv.Sessions(), 0)
	is.True(transporttest.ProcessGone(t, pid, 0))
	resp := g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"echo"}`)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusNotFound)
}

func TestServerMaxSessions(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, func(c *HTTPServerConfig) { c.MaxSessions = 1 })
	sid := g.initialize(t)
	msgs, resp := g.call(t, "", acceptBoth, initBody)
	is.Equal(resp.StatusCode, http.StatusServiceUnavailable)
	is.Equal(msgs[0].ID(), frame.ID("0"))
	resp = g.do(t, context.Background(), http.MethodDelete, sid, "", "")
	resp.Body.Close()
	g.initialize(t) // room again
}

// TestServerLargeMessages round-trips a 16 MiB argument and result, as
// JSON and as SSE.
func TestServerLargeMessages(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, nil)
	sid := g.initialize(t)
	big := strings.Repeat("0123456789abcdef", 16<<20/16) // 16 MiB
	body := `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"s":"` + big + `"}}`
	for _, accept := range []string{acceptJSON, acceptBoth} {
		msgs, resp := g.call(t, sid, accept, body)
		is.Equal(resp.StatusCode, http.StatusOK)
		is.Equal(len(msgs), 1)
		is.Equal(len(msgs[0].Get("result.s").Str), len(big))
		is.True(msgs[0].Get("result.s").Str == big)
	}
}

func TestServerDrainAndClose(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, nil)
	sid := g.initialize(t)
	pid := g.childPID(t, sid)
	waiting := g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":"w","method":"wait"}`)
	defer waiting.Body.Close()

	// Start draining (an ended context returns at once), then wait.
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	is.Equal(g.srv.Drain(ended), context.Canceled) // a request is in flight
	drained := make(chan error, 1)
	go func() { drained <- g.srv.Drain(context.Background()) }()

	// New sessions and requests are refused while draining, but the client
	// may still send notifications, which lets the waiting request finish.
	msgs, resp := g.call(t, "", acceptBoth, initBody)
	is.Equal(resp.StatusCode, http.StatusServiceUnavailable)
	is.Equal(len(msgs), 1)
	resp = g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":9,"method":"echo"}`)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusServiceUnavailable)
	resp = g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","method":"release"}`)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusAccepted)
	is.Equal(readAnswer(t, waiting)[0].String(), `{"jsonrpc":"2.0","id":"w","result":{}}`)
	select {
	case err := <-drained:
		is.NoErr(err)
	case <-time.After(testWait):
		t.Fatal("drain did not finish")
	}
	is.NoErr(g.srv.Close(context.Background()))
	is.Equal(g.srv.Sessions(), 0)
	is.True(transporttest.ProcessGone(t, pid, 0))
}

func TestServerStderrIsPrefixedWithTheSession(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, nil)
	sid := g.initialize(t)
	msgs, _ := g.call(t, sid, acceptJSON, `{"jsonrpc":"2.0","id":1,"method":"stderr","params":{"text":"hello from the child"}}`)
	is.Equal(len(msgs), 1)
	resp := g.do(t, context.Background(), http.MethodDelete, sid, "", "")
	resp.Body.Close()
	is.True(strings.Contains(g.stderr.String(), "["+ShortSessionID(sid)+"] hello from the child\n"))
}

// TestServerThousandSessions opens and ends 1000 sessions, ten at a time,
// each with a real (tiny) child, and checks that no process is left.
// Goroutines are checked by the package's TestMain.
func TestServerThousandSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test")
	}
	is := is.New(t)
	var mu sync.Mutex
	var children []*Child
	// A shell server: answers the initialize, then reads until stdin ends.
	script := `read -r line; printf '%s\n' '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"sh","version":"1"}}}'; exec cat >/dev/null`
	g := newTestGateway(t, func(c *HTTPServerConfig) {
		c.MaxSessions = 20
		c.Open = func(_ context.Context, id string, toClient Sink) (Backend, error) {
			c, err := StartChild(ChildConfig{Command: []string{"/bin/sh", "-c", script}}, toClient)
			if err == nil {
				mu.Lock()
				children = append(children, c)
				mu.Unlock()
			}
			return c, err
		}
	})
	const total, parallel = 1000, 10
	errs := make(chan error, total)
	var wg sync.WaitGroup
	for w := range parallel {
		wg.Go(func() {
			for range total / parallel {
				errs <- g.openAndDelete(w)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		is.NoErr(err)
	}
	is.Equal(g.srv.Sessions(), 0)
	is.Equal(len(children), total)
	for _, c := range children {
		select {
		case <-c.Done():
		default:
			t.Fatalf("child %d still running", c.PID())
		}
		is.True(transporttest.ProcessGone(t, c.PID(), 0))
	}
}

// openAndDelete opens a session with initialize and ends it with DELETE.
func (g *testGateway) openAndDelete(worker int) error {
	req, _ := http.NewRequest(http.MethodPost, g.ts.URL+"/mcp", strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", acceptJSON)
	resp, err := g.client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		return fmt.Errorf("worker %d: initialize: %d", worker, resp.StatusCode)
	}
	req, _ = http.NewRequest(http.MethodDelete, g.ts.URL+"/mcp", nil)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err = g.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("worker %d: delete: %d", worker, resp.StatusCode)
	}
	return nil
}

// A quick event-stream answer leaves whole, with a length and the end of
// the stream; a slow one gets its header after HeaderHold, before the
// answer, so the client knows its request was accepted.
func TestServerEventStreamHeaderHold(t *testing.T) {
	t.Run("quick answer in one piece", func(t *testing.T) {
		is := is.New(t)
		g := newTestGateway(t, func(cfg *HTTPServerConfig) { cfg.HeaderHold = time.Hour })
		sid := g.initialize(t)
		msgs, resp := g.call(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"ok":1}}`)
		is.Equal(resp.Header.Get("Content-Type"), "text/event-stream")
		is.True(resp.ContentLength > 0) // written whole, not in chunks
		is.Equal(len(msgs), 1)
		is.Equal(msgs[0].String(), `{"jsonrpc":"2.0","id":1,"result":{"ok":1}}`)
	})
	t.Run("slow answer: header first", func(t *testing.T) {
		is := is.New(t)
		g := newTestGateway(t, func(cfg *HTTPServerConfig) { cfg.HeaderHold = time.Millisecond })
		sid := g.initialize(t)
		ctx, cancel := context.WithTimeout(context.Background(), testWait)
		defer cancel()
		// Do returns with the header while the child holds the answer.
		resp := g.do(t, ctx, http.MethodPost, sid, acceptBoth, `{"jsonrpc":"2.0","id":2,"method":"wait"}`)
		defer resp.Body.Close()
		is.Equal(resp.StatusCode, http.StatusOK)
		is.Equal(resp.Header.Get("Content-Type"), "text/event-stream")
		is.Equal(resp.ContentLength, int64(-1)) // streamed
		r := g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","method":"release"}`)
		r.Body.Close()
		msgs := readAnswer(t, resp)
		is.Equal(len(msgs), 1)
		is.Equal(msgs[0].ID().String(), "2")
	})
}

// readUntil reads r until it has seen want, failing after testWait.
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
	case <-time.After(testWait):
		t.Fatalf("no %q within %v", want, testWait)
		return ""
	}
}

// A silent event stream gets a comment line every KeepAlive: the GET
// stream of an idle session, and a POST's stream while its request runs;
// the answer still comes after it.
func TestServerKeepAliveComments(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, func(cfg *HTTPServerConfig) {
		cfg.HeaderHold = time.Millisecond
		cfg.KeepAlive = 2 * time.Millisecond
	})
	sid := g.initialize(t)

	get := g.do(t, context.Background(), http.MethodGet, sid, "text/event-stream", "")
	defer get.Body.Close()
	is.Equal(get.StatusCode, http.StatusOK)
	is.True(strings.HasPrefix(readUntil(t, get.Body, ": keepalive\n\n"), ": keepalive\n\n"))

	post := g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":3,"method":"wait"}`)
	defer post.Body.Close()
	is.Equal(post.StatusCode, http.StatusOK)
	is.True(strings.HasPrefix(readUntil(t, post.Body, ": keepalive\n\n"), ": keepalive\n\n"))
	r := g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","method":"release"}`)
	r.Body.Close()
	msgs := readAnswer(t, post) // the SSE reader skips the comments
	is.Equal(len(msgs), 1)
	is.Equal(msgs[0].ID().String(), "3")
}

// The GET stream's events carry ids; a client that reconnects with
// Last-Event-ID gets the events after it again (one may have been lost with
// the connection), then what waited in the backlog meanwhile. An id that is
// not the stream's, or none, replays nothing.
func TestServerGETStreamResumes(t *testing.T) {
	is := is.New(t)
	g := newTestGateway(t, nil)
	sid := g.initialize(t)
	notify := func(id int, data string) {
		t.Helper()
		msgs, _ := g.call(t, sid, acceptJSON, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"notify","params":{"data":%q}}`, id, data))
		is.Equal(len(msgs), 1)
	}
	// dropGET closes a GET stream's connection and waits until the server
	// is done with that GET (not merely with some earlier request).
	dropGET := func(get *http.Response) {
		t.Helper()
		get.Body.Close()
		for {
			select {
			case m := <-g.served:
				if m == http.MethodGet {
					return
				}
			case <-time.After(testWait):
				t.Fatal("the server did not finish the GET")
			}
		}
	}
	event := func(r *frame.SSEReader) (id, data string) {
		t.Helper()
		ev, err := r.Next()
		is.NoErr(err)
		return ev.ID, gjson.GetBytes(ev.Data, "params.data").Str
	}

	get := g.do(t, context.Background(), http.MethodGet, sid, "text/event-stream", "")
	r := frame.NewSSEReader(get.Body, 0)
	notify(1, "one")
	notify(2, "two")
	id, data := event(r)
	is.Equal([]string{id, data}, []string{"g1", "one"})
	id, data = event(r)
	is.Equal([]string{id, data}, []string{"g2", "two"})
	dropGET(get)       // the connection drops
	notify(3, "three") // waits in the backlog

	get = g.do(t, context.Background(), http.MethodGet, sid, "text/event-stream", "", "Last-Event-ID", "g1")
	r = frame.NewSSEReader(get.Body, 0)
	id, data = event(r)
	is.Equal([]string{id, data}, []string{"g2", "two"}) // sent again
	id, data = event(r)
	is.Equal([]string{id, data}, []string{"g3", "three"})
	dropGET(get)

	latest := "g3"
	for _, last := range []string{"", "latest", "x7", "g99"} {
		if last == "latest" {
			last = latest // the client saw everything
		}
		notify(4, "four-"+last)
		get = g.do(t, context.Background(), http.MethodGet, sid, "text/event-stream", "", "Last-Event-ID", last)
		r = frame.NewSSEReader(get.Body, 0)
		latest, data = event(r)
		is.Equal(data, "four-"+last) // the backlog only: nothing replayed
		dropGET(get)
	}
}
