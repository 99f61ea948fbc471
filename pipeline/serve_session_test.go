//go:build linux

package pipeline

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// The session era of serve, end to end over loopback HTTP, with a scripted
// child per session (transporttest.ScriptedServer, run as the test binary).

func init() {
	transporttest.RunProgram(map[string]func(args []string) int{
		"scripted-server": transporttest.ScriptedServer,
	})
}

// Accept header values.
const (
	acceptBoth = "application/json, text/event-stream"
	acceptJSON = "application/json"
)

// sessionGateway is serve over scripted children.
type sessionGateway struct {
	*serveHarness
	logs *transporttest.SyncBuffer
}

func newSessionGateway(t *testing.T, configure func(*ServeConfig)) *sessionGateway {
	t.Helper()
	checkServeLeaks(t)
	child := transporttest.Command("scripted-server")
	h := newServeHarness(t, func(cfg *ServeConfig) {
		cfg.Command, cfg.Env = child.Args, child.Env
		if configure != nil {
			configure(cfg)
		}
	})
	return &sessionGateway{serveHarness: h, logs: h.stderr}
}

// do sends one request to the gateway; hdr are name, value pairs.
func (g *sessionGateway) do(t *testing.T, ctx context.Context, method, sid, accept, body string, hdr ...string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, g.url, rd)
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
func (g *sessionGateway) post(t *testing.T, sid, accept, body string) *http.Response {
	t.Helper()
	return g.do(t, context.Background(), http.MethodPost, sid, accept, body)
}

// call POSTs and returns every message of the answer and the response.
func (g *sessionGateway) call(t *testing.T, sid, accept, body string) ([]frame.Message, *http.Response) {
	t.Helper()
	resp := g.post(t, sid, accept, body)
	defer resp.Body.Close()
	return readAnswer(t, resp), resp
}

// readAnswer reads a POST's answer (SSE or JSON) to its end.
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

// nextEvent reads the next message of an event stream.
func nextEvent(t *testing.T, r *frame.SSEReader) frame.Message {
	t.Helper()
	ev, err := r.Next()
	if err != nil {
		t.Fatalf("event stream: %v", err)
	}
	return frame.MustParse(string(ev.Data))
}

const scriptedInit = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`

// initialize opens a session and returns its id.
func (g *sessionGateway) initialize(t *testing.T) string {
	t.Helper()
	msgs, resp := g.call(t, "", acceptBoth, scriptedInit)
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
func (g *sessionGateway) childPID(t *testing.T, sid string) int {
	t.Helper()
	msgs, _ := g.call(t, sid, acceptJSON, `{"jsonrpc":"2.0","id":"pid","method":"pid"}`)
	if len(msgs) != 1 {
		t.Fatalf("pid: %v", msgs)
	}
	return int(msgs[0].Get("result.pid").Int())
}

// status sends a request and returns its status, the body read and closed.
func (g *sessionGateway) status(t *testing.T, method, sid, body string) int {
	t.Helper()
	resp := g.do(t, context.Background(), method, sid, acceptBoth, body)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestSessionsOpenOnInitialize(t *testing.T) {
	is := is.New(t)
	g := newSessionGateway(t, nil)
	msgs, resp := g.call(t, "", acceptBoth, scriptedInit)
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

	msgs, resp = g.call(t, "", acceptJSON, scriptedInit)
	is.Equal(resp.Header.Get("Content-Type"), "application/json")
	other := resp.Header.Get("Mcp-Session-Id")
	is.True(other != "" && other != sid)
	is.Equal(msgs[0].Kind(), frame.Result)
	is.Equal(g.srv.Sessions(), 2)

	msgs, resp = g.call(t, sid, acceptJSON, `{"jsonrpc":"2.0","id":"e","method":"echo","params":{"a":[1,2.50]}}`)
	is.Equal(resp.Header.Get("Mcp-Session-Id"), "") // only on initialize
	is.Equal(msgs[0].String(), `{"jsonrpc":"2.0","id":"e","result":{"a":[1,2.50]}}`)
}

func TestSessionsInitializeRefusedByTheServer(t *testing.T) {
	is := is.New(t)
	g := newSessionGateway(t, nil)
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

func TestSessionsRefusals(t *testing.T) {
	g := newSessionGateway(t, nil)
	sid := g.initialize(t)
	for _, tt := range []struct {
		name   string
		method string
		sid    string
		body   string
		hdr    []string
		status int
		code   int
		id     string
	}{
		{"sessionless request", "POST", "", `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`, nil, 400, frame.CodeInvalidRequest, "5"},
		{"sessionless notification", "POST", "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil, 400, frame.CodeInvalidRequest, "null"},
		{"unknown session", "POST", "no-such-session", `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`, nil, 404, frame.CodeInvalidRequest, "6"},
		{"initialize with unknown session", "POST", "no-such-session", scriptedInit, nil, 404, frame.CodeInvalidRequest, "0"},
		{"initialize again", "POST", sid, scriptedInit, nil, 400, frame.CodeInvalidRequest, "0"},
		{"initialize as notification", "POST", "", `{"jsonrpc":"2.0","method":"initialize"}`, nil, 400, frame.CodeInvalidRequest, "null"},
		{"empty batch", "POST", sid, `[]`, nil, 400, frame.CodeInvalidRequest, "null"},
		{"batch with junk", "POST", sid, `[{"jsonrpc":"2.0","id":1,"method":"echo"},7]`, nil, 400, frame.CodeInvalidRequest, "null"},
		{"batched initialize", "POST", sid, `[` + scriptedInit + `]`, nil, 400, frame.CodeInvalidRequest, "null"},
		{"batch on 2025-11-25", "POST", sid, `[{"jsonrpc":"2.0","id":1,"method":"echo"}]`, nil, 400, frame.CodeInvalidRequest, "null"},
		{"unknown protocol version", "POST", sid, `{"jsonrpc":"2.0","id":1,"method":"echo"}`, []string{"MCP-Protocol-Version", "1999-01-01"}, 400, frame.CodeInvalidRequest, "null"},
		{"GET without session", "GET", "", "", nil, 400, frame.CodeInvalidRequest, "null"},
		{"GET unknown session", "GET", "nope", "", nil, 404, frame.CodeInvalidRequest, "null"},
		{"DELETE without session", "DELETE", "", "", nil, 400, frame.CodeInvalidRequest, "null"},
		{"DELETE unknown session", "DELETE", "nope", "", nil, 404, frame.CodeInvalidRequest, "null"},
		{"DELETE unknown version", "DELETE", sid, "", []string{"MCP-Protocol-Version", "x"}, 400, frame.CodeInvalidRequest, "null"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			resp := g.do(t, context.Background(), tt.method, tt.sid, acceptBoth, tt.body, tt.hdr...)
			defer resp.Body.Close()
			is.Equal(resp.StatusCode, tt.status)
			is.Equal(resp.Header.Get("Content-Type"), "application/json")
			msgs := readAnswer(t, resp)
			is.Equal(len(msgs), 1)
			code, ok := msgs[0].ErrorCode()
			is.True(ok)
			is.Equal(code, tt.code)
			is.Equal(msgs[0].ID().String(), tt.id)
		})
	}
	is := is.New(t)
	is.Equal(g.srv.Sessions(), 1) // nothing opened another session, nothing closed it
	is.Equal(g.status(t, "POST", sid, `{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}`), http.StatusOK)
}

// Batches belong to 2025-03-26: whether a session takes them is decided by
// the version the server chose, not the one the client asked for (the
// scripted child always answers 2025-11-25). golden's batch case shows a
// 2025-03-26 session taking them.
func TestSessionsBatchFollowsTheServersVersion(t *testing.T) {
	is := is.New(t)
	g := newSessionGateway(t, nil)
	_, resp := g.call(t, "", acceptJSON, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	is.Equal(g.status(t, "POST", sid, `[{"jsonrpc":"2.0","id":1,"method":"echo"}]`), http.StatusBadRequest)
}

func TestSessionsNotificationsAndResponsesGet202(t *testing.T) {
	is := is.New(t)
	g := newSessionGateway(t, nil)
	sid := g.initialize(t)
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`,
		`{"jsonrpc":"2.0","id":"nobody-asked","result":{}}`,
		`{"jsonrpc":"2.0","id":"nobody-asked","error":{"code":-1,"message":"x"}}`,
	} {
		is.Equal(g.status(t, "POST", sid, body), http.StatusAccepted)
	}
}

func TestSessionsDeleteEndsTheSessionAndItsChild(t *testing.T) {
	is := is.New(t)
	g := newSessionGateway(t, nil)
	sid := g.initialize(t)
	pid := g.childPID(t, sid)
	is.True(!transporttest.ProcessGone(t, pid, 0))
	is.Equal(g.status(t, "DELETE", sid, ""), http.StatusNoContent)
	is.True(transporttest.ProcessGone(t, pid, 0)) // gone when DELETE returns
	is.Equal(g.srv.Sessions(), 0)
	is.Equal(g.status(t, "POST", sid, `{"jsonrpc":"2.0","id":1,"method":"echo"}`), http.StatusNotFound)
	is.Equal(g.status(t, "DELETE", sid, ""), http.StatusNotFound)
}

func TestSessionsGETStream(t *testing.T) {
	is := is.New(t)
	g := newSessionGateway(t, nil)
	sid := g.initialize(t)

	first := g.do(t, context.Background(), http.MethodGet, sid, "text/event-stream", "")
	defer first.Body.Close()
	is.Equal(first.StatusCode, http.StatusOK)
	is.Equal(first.Header.Get("Content-Type"), "text/event-stream")
	// One stream per session: a second GET takes over, the first ends.
	get := g.do(t, context.Background(), http.MethodGet, sid, "text/event-stream", "")
	defer get.Body.Close()
	is.Equal(get.StatusCode, http.StatusOK)
	_, err := frame.NewSSEReader(first.Body, 0).Next()
	is.Equal(err, io.EOF)

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

	// Progress goes to the POST that registered its token.
	msgs, _ = g.call(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":3,"method":"progress","params":{"_meta":{"progressToken":"tok-1"}}}`)
	is.Equal(len(msgs), 2)
	is.Equal(msgs[0].String(), `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok-1","progress":1,"total":2}}`)

	// DELETE ends the stream.
	is.Equal(g.status(t, "DELETE", sid, ""), http.StatusNoContent)
	_, err = r.Next()
	is.Equal(err, io.EOF)
}

// Server messages that find no stream wait in the backlog for the next GET
// stream; a client that reconnects with Last-Event-ID gets the events after
// it again, then the backlog. An id that is not the stream's replays
// nothing.
func TestSessionsGETStreamResumes(t *testing.T) {
	is := is.New(t)
	g := newSessionGateway(t, nil)
	sid := g.initialize(t)
	notify := func(id int, data string) {
		t.Helper()
		msgs, _ := g.call(t, sid, acceptJSON, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"notify","params":{"data":%q}}`, id, data))
		is.Equal(len(msgs), 1)
	}
	// dropGET closes a GET stream's connection and waits until serve is
	// done with that GET (and has taken back what it did not send).
	dropGET := func(get *http.Response) {
		t.Helper()
		get.Body.Close()
		g.awaitServed(t, http.MethodGet)
	}
	event := func(r *frame.SSEReader) (id, data string) {
		t.Helper()
		ev, err := r.Next()
		is.NoErr(err)
		return ev.ID, gjson.GetBytes(ev.Data, "params.data").Str
	}

	notify(0, "early") // no stream yet: kept
	get := g.do(t, context.Background(), http.MethodGet, sid, "text/event-stream", "")
	r := frame.NewSSEReader(get.Body, 0)
	id, data := event(r)
	is.Equal([]string{id, data}, []string{"g1", "early"})
	notify(1, "one")
	notify(2, "two")
	id, data = event(r)
	is.Equal([]string{id, data}, []string{"g2", "one"})
	id, data = event(r)
	is.Equal([]string{id, data}, []string{"g3", "two"})
	dropGET(get)       // the connection drops
	notify(3, "three") // waits in the backlog

	get = g.do(t, context.Background(), http.MethodGet, sid, "text/event-stream", "", "Last-Event-ID", "g2")
	r = frame.NewSSEReader(get.Body, 0)
	id, data = event(r)
	is.Equal([]string{id, data}, []string{"g3", "two"}) // sent again
	id, data = event(r)
	is.Equal([]string{id, data}, []string{"g4", "three"})
	dropGET(get)

	latest := "g4"
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

// awaitServed waits until serve is done with a request of this method.
func (g *sessionGateway) awaitServed(t *testing.T, method string) {
	t.Helper()
	for {
		select {
		case m := <-g.served:
			if m == method {
				return
			}
		case <-time.After(serveTestWait):
			t.Fatalf("serve did not finish a %s", method)
		}
	}
}

func TestSessionsServerRequestsReachTheRightClient(t *testing.T) {
	is := is.New(t)
	g := newSessionGateway(t, nil)
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
		ask := nextEvent(t, clients[i].events)
		is.Equal(ask.Method(), "elicitation/create")
		is.Equal(ask.ID(), frame.ID(`"ask-1"`))
		is.Equal(ask.Get("params.message").String(), fmt.Sprintf("question %d", i))
	}
	// Answer in reverse order; each answer goes back to its own child.
	for i := len(clients) - 1; i >= 0; i-- {
		c := &clients[i]
		is.Equal(g.status(t, "POST", c.sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":"ask-1","result":{"action":"accept","content":{"who":%d}}}`, i)), http.StatusAccepted)
		res := nextEvent(t, c.events)
		is.Equal(res.String(), fmt.Sprintf(`{"jsonrpc":"2.0","id":"call","result":{"action":"accept","content":{"who":%d}}}`, i))
		_, err := c.events.Next()
		is.Equal(err, io.EOF) // the POST's stream ends with its response
	}
}

func TestSessionsChildCrashEndsTheSession(t *testing.T) {
	is := is.New(t)
	g := newSessionGateway(t, nil)
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
	is.Equal(g.status(t, "POST", sid, `{"jsonrpc":"2.0","id":1,"method":"echo"}`), http.StatusNotFound)
}

// A request whose client went away is still at the child (a disconnect is
// not a cancel): its id cannot be reused until the late answer has come
// and been dropped. Cancelling it does not make the id usable either: a
// request the client cancelled is never sent again under that id (the
// cancel filter's rule), and its POST is finished as cancelled.
func TestSessionsDisconnectKeepsTheID(t *testing.T) {
	is := is.New(t)
	g := newSessionGateway(t, nil)
	sid := g.initialize(t)
	abandon := func(id string) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		resp := g.do(t, ctx, http.MethodPost, sid, acceptBoth, `{"jsonrpc":"2.0","id":"`+id+`","method":"wait"}`)
		is.Equal(resp.StatusCode, http.StatusOK) // its head comes once the request is at the child
		cancel()
		resp.Body.Close()
		is.Equal(g.status(t, "POST", sid, `{"jsonrpc":"2.0","id":"`+id+`","method":"echo"}`), http.StatusBadRequest) // still in flight
	}

	abandon("w")
	is.Equal(g.status(t, "POST", sid, `{"jsonrpc":"2.0","method":"release"}`), http.StatusAccepted)
	msgs, _ := g.call(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":"x","method":"echo","params":{}}`) // after the late answer
	is.Equal(msgs[0].String(), `{"jsonrpc":"2.0","id":"x","result":{}}`)
	msgs, _ = g.call(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":"w","method":"echo","params":{"after":"answer"}}`)
	is.Equal(len(msgs), 1)
	is.Equal(msgs[0].String(), `{"jsonrpc":"2.0","id":"w","result":{"after":"answer"}}`)

	abandon("c")
	is.Equal(g.status(t, "POST", sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c"}}`), http.StatusAccepted)
	msgs, resp := g.call(t, sid, acceptJSON, `{"jsonrpc":"2.0","id":"c","method":"echo"}`)
	is.Equal(resp.StatusCode, http.StatusOK)
	is.Equal(msgs[0].String(), `{"jsonrpc":"2.0","id":"c","error":{"code":-32000,"message":"request cancelled"}}`) // never sent
	is.Equal(g.status(t, "POST", sid, `{"jsonrpc":"2.0","method":"release"}`), http.StatusAccepted)
	msgs, _ = g.call(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":"y","method":"echo","params":{}}`) // the session goes on
	is.Equal(msgs[0].String(), `{"jsonrpc":"2.0","id":"y","result":{}}`)
}

// A client that cancels a request stops waiting for it: its POST finishes
// at once — an SSE answer ends without a response, a JSON answer carries a
// "request cancelled" error — and the server's late answer is dropped.
func TestSessionsCancelFinishesThePOST(t *testing.T) {
	is := is.New(t)
	waits := make(chan frame.ID, 4) // ids of the "wait" requests handed to the child
	observe := mw.ServerBound(func(next mw.Handler) mw.Handler {
		return mw.HandlerFunc(func(ctx context.Context, m frame.Message) error {
			err := next.Handle(ctx, m)
			if m.Method() == "wait" {
				waits <- m.ID()
			}
			return err
		})
	})
	g := newSessionGateway(t, func(cfg *ServeConfig) { cfg.Middlewares = []mw.Middleware{observe} })
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
		case <-time.After(serveTestWait):
			t.Fatal("the wait requests did not reach the child")
		}
	}
	for _, id := range []string{"5", "6"} {
		is.Equal(g.status(t, "POST", sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+`}}`), http.StatusAccepted)
	}
	is.Equal(len(readAnswer(t, sse)), 0) // the stream ended, no response
	select {
	case msgs := <-jsonDone:
		is.Equal(len(msgs), 1)
		is.Equal(msgs[0].String(), `{"jsonrpc":"2.0","id":6,"error":{"code":-32000,"message":"request cancelled"}}`)
	case <-time.After(serveTestWait):
		t.Fatal("the JSON POST was not finished by the cancel")
	}
	// The child answers late; the answers go nowhere, and the session goes on.
	is.Equal(g.status(t, "POST", sid, `{"jsonrpc":"2.0","method":"release"}`), http.StatusAccepted)
	msgs, _ := g.call(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":7,"method":"echo","params":{"ok":1}}`)
	is.Equal(msgs[0].String(), `{"jsonrpc":"2.0","id":7,"result":{"ok":1}}`)
}

func TestSessionsDuplicateIDInFlight(t *testing.T) {
	is := is.New(t)
	g := newSessionGateway(t, nil)
	sid := g.initialize(t)
	first := g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"wait"}`)
	defer first.Body.Close()
	is.Equal(first.StatusCode, http.StatusOK)
	msgs, resp := g.call(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"echo"}`)
	is.Equal(resp.StatusCode, http.StatusBadRequest)
	code, _ := msgs[0].ErrorCode()
	is.Equal(code, frame.CodeInvalidRequest)
	is.Equal(g.status(t, "POST", sid, `{"jsonrpc":"2.0","method":"release"}`), http.StatusAccepted)
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
	case <-time.After(serveTestWait):
		t.Fatal("no timer was started")
	}
}

type fakeTimer struct {
	f       func()
	stopped bool
}

func (ft *fakeTimers) AfterFunc(_ time.Duration, f func()) func() bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	tm := &fakeTimer{f: f}
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

func TestSessionsIdleEnd(t *testing.T) {
	is := is.New(t)
	timers := newFakeTimers()
	g := newSessionGateway(t, func(c *ServeConfig) {
		c.SessionIdleTimeout = 30 * time.Minute
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
	is.Equal(g.status(t, "POST", sid, `{"jsonrpc":"2.0","id":1,"method":"echo"}`), http.StatusNotFound)
}

// At --max-sessions a new session takes the place of the idle one: its
// child is gone before the new one starts, and its client's next request
// gets 404. A busy session (a request in flight) keeps its place: the new
// one gets 503 with Retry-After, until the request is over.
func TestSessionsMax(t *testing.T) {
	is := is.New(t)
	g := newSessionGateway(t, func(c *ServeConfig) { c.MaxSessions = 1 })
	first := g.initialize(t)
	pid := g.childPID(t, first)
	second := g.initialize(t)
	is.True(transporttest.ProcessGone(t, pid, 0)) // gone before the new session was answered
	is.Equal(g.status(t, "POST", first, `{"jsonrpc":"2.0","id":1,"method":"echo"}`), http.StatusNotFound)
	is.True(strings.Contains(g.logs.String(), `msg="session evicted: a new session needed its place, and it was idle the longest"`))

	waiting := g.post(t, second, acceptBoth, `{"jsonrpc":"2.0","id":"w","method":"wait"}`)
	defer waiting.Body.Close()
	is.Equal(waiting.StatusCode, http.StatusOK)
	msgs, resp := g.call(t, "", acceptBoth, scriptedInit)
	is.Equal(resp.StatusCode, http.StatusServiceUnavailable)
	is.Equal(resp.Header.Get("Retry-After"), "1")
	is.Equal(msgs[0].String(), `{"jsonrpc":"2.0","id":0,"error":{"code":-32000,"message":"all 1 sessions are busy; try again later"}}`)
	is.True(strings.Contains(g.logs.String(), "raise --max-sessions"))

	is.Equal(g.status(t, "POST", second, `{"jsonrpc":"2.0","method":"release"}`), http.StatusAccepted)
	is.Equal(readAnswer(t, waiting)[0].String(), `{"jsonrpc":"2.0","id":"w","result":{}}`)
	g.initialize(t) // room again: the second session is idle
}

// While draining, a new session is refused and the session open goes on:
// its requests are served and its notifications let the waiting request
// finish, which ends the drain; Close then ends the session and its child.
func TestSessionsDrainAndClose(t *testing.T) {
	is := is.New(t)
	g := newSessionGateway(t, func(c *ServeConfig) { c.DrainTimeout = serveTestWait })
	sid := g.initialize(t)
	pid := g.childPID(t, sid)
	waiting := g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":"w","method":"wait"}`)
	defer waiting.Body.Close()

	started := g.logs.Watch(regexp.MustCompile(`msg="drain started`))
	drained := make(chan error, 1)
	go func() { drained <- g.srv.Drain(context.Background()) }()
	started.Next(t, serveTestWait)
	is.True(g.srv.Draining())
	msgs, resp := g.call(t, "", acceptBoth, scriptedInit)
	is.Equal(resp.StatusCode, http.StatusServiceUnavailable)
	is.Equal(resp.Header.Get("Retry-After"), "1")
	is.Equal(len(msgs), 1)
	is.Equal(msgs[0].ID(), frame.ID("0"))
	msgs, _ = g.call(t, sid, acceptJSON, `{"jsonrpc":"2.0","id":9,"method":"echo"}`)
	is.Equal(msgs[0].String(), `{"jsonrpc":"2.0","id":9,"result":{}}`) // the open session is served
	is.Equal(g.status(t, "POST", sid, `{"jsonrpc":"2.0","method":"release"}`), http.StatusAccepted)
	is.Equal(readAnswer(t, waiting)[0].String(), `{"jsonrpc":"2.0","id":"w","result":{}}`)
	select {
	case err := <-drained:
		is.NoErr(err)
	case <-time.After(serveTestWait):
		t.Fatal("drain did not finish")
	}
	is.NoErr(g.srv.Close(context.Background()))
	is.Equal(g.srv.Sessions(), 0)
	is.True(transporttest.ProcessGone(t, pid, 0))
}

func TestSessionsStderrIsPrefixedWithTheSession(t *testing.T) {
	is := is.New(t)
	g := newSessionGateway(t, nil)
	sid := g.initialize(t)
	lines := g.logs.Watch(regexp.MustCompile(`^\[` + regexp.QuoteMeta(mw.ShortSessionID(sid)) + `\] hello from the child$`))
	msgs, _ := g.call(t, sid, acceptJSON, `{"jsonrpc":"2.0","id":1,"method":"stderr","params":{"text":"hello from the child"}}`)
	is.Equal(len(msgs), 1)
	lines.Next(t, serveTestWait)
}

// TestSessionsThousand opens and ends 1000 sessions, ten at a time, each
// with a real (tiny) child, and checks that no process is left.
func TestSessionsThousand(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test")
	}
	is := is.New(t)
	// A shell server: answers the initialize, then reads until stdin ends,
	// its stdout still open (a server that closes it ends its session).
	script := `read -r line; printf '%s\n' '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"sh","version":"1"}}}'; while read -r line; do :; done`
	g := newSessionGateway(t, func(c *ServeConfig) {
		c.Command, c.Env = []string{"/bin/sh", "-c", script}, nil
		c.MaxSessions = 20
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
	started := regexp.MustCompile(`server process started".*? pid=(\d+)`).FindAllStringSubmatch(g.logs.String(), -1)
	is.Equal(len(started), total)
	for _, m := range started {
		pid, err := strconv.Atoi(m[1])
		is.NoErr(err)
		is.True(transporttest.ProcessGone(t, pid, 0))
	}
}

// openAndDelete opens a session with initialize and ends it with DELETE.
func (g *sessionGateway) openAndDelete(worker int) error {
	req, _ := http.NewRequest(http.MethodPost, g.url, strings.NewReader(scriptedInit))
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
	req, _ = http.NewRequest(http.MethodDelete, g.url, nil)
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
