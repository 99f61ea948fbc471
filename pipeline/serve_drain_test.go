//go:build linux

package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

var (
	drainStartedLine = regexp.MustCompile(`msg="drain started`)
	drainEndedLine   = regexp.MustCompile(`msg="drain ended" .*outcome=(\w+) in_flight=(\d+)`)
)

// drainGateway is a serve pipeline of go-sdk children, with what the
// drain tests send it.
type drainGateway struct {
	*sessionGateway
}

func newDrainGateway(t *testing.T, timeout time.Duration) *drainGateway {
	checkServeLeaks(t)
	h := newServeHarness(t, func(c *ServeConfig) { c.DrainTimeout = timeout })
	return &drainGateway{&sessionGateway{serveHarness: h, logs: h.stderr}}
}

const sdkInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`

// open opens a session of the go-sdk child and returns its id.
func (g *drainGateway) open(t *testing.T) string {
	t.Helper()
	msgs, resp := g.call(t, "", acceptBoth, sdkInit)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" || len(msgs) != 1 {
		t.Fatalf("initialize: %d %v", resp.StatusCode, msgs)
	}
	if st := g.status(t, "POST", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); st != http.StatusAccepted {
		t.Fatalf("initialized: %d", st)
	}
	return sid
}

// startDrain starts the drain and returns once it has started, with the
// channel its result comes on.
func (g *drainGateway) startDrain(t *testing.T, ctx context.Context) <-chan error {
	t.Helper()
	started := g.logs.Watch(drainStartedLine)
	drained := make(chan error, 1)
	go func() { drained <- g.srv.Drain(ctx) }()
	started.Next(t, serveTestWait)
	return drained
}

// drained waits for the drain's result.
func drained(t *testing.T, c <-chan error) error {
	t.Helper()
	select {
	case err := <-c:
		return err
	case <-time.After(serveTestWait):
		t.Fatal("the drain did not end")
		return nil
	}
}

// While draining: a new initialize gets 503 with Retry-After and a
// JSON-RPC error; a request of the open session is served and one in
// flight, waiting for its client's answer, gets it and finishes; a
// 2026-07-28 request is served. The drain ends once nothing is in flight.
func TestServeDrainRefusesNewSessionsAndServesTheRest(t *testing.T) {
	is := is.New(t)
	g := newDrainGateway(t, serveTestWait)
	ended := g.logs.Watch(drainEndedLine)
	sid := g.open(t)
	ask := g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask"}}`)
	defer ask.Body.Close()
	events := frame.NewSSEReader(ask.Body, 0)
	elicit := nextEvent(t, events)
	is.Equal(elicit.Method(), "elicitation/create") // the call waits for its client

	done := g.startDrain(t, context.Background())
	is.True(g.srv.Draining())

	resp := g.do(t, context.Background(), http.MethodPost, "", acceptBoth, sdkInit)
	msgs := readAnswer(t, resp)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusServiceUnavailable)
	is.Equal(resp.Header.Get("Retry-After"), "1")
	is.Equal(len(msgs), 1)
	is.Equal(msgs[0].ID(), frame.ID("1"))
	is.Equal(msgs[0].Get("error.code").Int(), int64(frame.CodeGateway))
	is.True(strings.Contains(msgs[0].Get("error.message").Str, "draining")) // names the drain

	msgs, resp = g.call(t, sid, acceptJSON, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`)
	is.Equal(resp.StatusCode, http.StatusOK)
	is.Equal(msgs[0].Get("result.content.0.text").Str, "still here") // the open session is served

	status, _, body := g.raw(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"modern"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo")
	is.Equal(status, http.StatusOK)
	is.True(strings.Contains(body, `"text":"modern"`)) // a 2026-07-28 request is served

	is.True(len(done) == 0) // the call is still in flight
	answer := `{"jsonrpc":"2.0","id":` + string(elicit.ID()) + `,"result":{"action":"accept","content":{"name":"Ada"}}}`
	is.Equal(g.status(t, "POST", sid, answer), http.StatusAccepted)
	result := nextEvent(t, events)
	is.Equal(result.ID(), frame.ID("2"))
	is.Equal(result.Get("result.content.0.text").Str, "hello Ada")

	is.NoErr(drained(t, done))
	m := ended.Next(t, serveTestWait)
	is.Equal(m[1], "idle")
	is.Equal(m[2], "0")
	is.True(!strings.Contains(g.logs.String(), sid)) // the log lines name no session id
}

// A drain with nothing in flight ends at once, however long its timeout:
// an open GET stream is no request in flight. Close then ends the stream.
func TestServeDrainEndsAtOnceWhenIdle(t *testing.T) {
	is := is.New(t)
	g := newDrainGateway(t, time.Hour)
	sid := g.open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get := g.do(t, ctx, http.MethodGet, sid, "text/event-stream", "")
	defer get.Body.Close()
	is.Equal(get.StatusCode, http.StatusOK)

	is.NoErr(drained(t, g.startDrain(t, context.Background())))
	is.Equal(g.srv.Sessions(), 1) // the drain leaves the session to Close

	closed := make(chan error, 1)
	go func() { closed <- g.srv.Close(context.Background()) }()
	_, err := frame.NewSSEReader(get.Body, 0).Next()
	is.True(err != nil) // the stream ended
	is.NoErr(drained(t, closed))
	is.Equal(g.srv.Sessions(), 0)
}

// At the drain timeout the drain ends with requests still in flight; Close
// then ends their streams, each request answered with an error, and the
// GET streams, and stops the children.
func TestServeDrainTimeoutThenCloseEndsTheStreams(t *testing.T) {
	is := is.New(t)
	g := newDrainGateway(t, 50*time.Millisecond)
	ended := g.logs.Watch(drainEndedLine)
	sid := g.open(t)
	msgs, _ := g.call(t, sid, acceptJSON, `{"jsonrpc":"2.0","id":"pid","method":"tools/call","params":{"name":"pid"}}`)
	pid, err := strconv.Atoi(msgs[0].Get("result.content.0.text").Str)
	is.NoErr(err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get := g.do(t, ctx, http.MethodGet, sid, "text/event-stream", "")
	defer get.Body.Close()
	slow := g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"p"}}}`)
	defer slow.Body.Close()
	events := frame.NewSSEReader(slow.Body, 0)
	is.Equal(nextEvent(t, events).Method(), "notifications/progress") // the call is running, and never ends by itself

	err = drained(t, g.startDrain(t, context.Background()))
	is.True(errors.Is(err, context.DeadlineExceeded))
	m := ended.Next(t, serveTestWait)
	is.Equal(m[1], "timeout")
	is.Equal(m[2], "1")

	is.NoErr(g.srv.Close(context.Background()))
	answer := nextEvent(t, events)
	is.Equal(answer.ID(), frame.ID("5"))
	is.True(strings.HasPrefix(answer.Get("error.message").Str, "session ended: ")) // answered with an error
	_, err = events.Next()
	is.True(err != nil) // and the stream ended
	_, err = frame.NewSSEReader(get.Body, 0).Next()
	is.True(err != nil) // so did the GET stream
	is.True(transporttest.ProcessGone(t, pid, 0))
}

// A drain interrupted (ctx ends: a second SIGTERM) ends at once.
func TestServeDrainInterrupted(t *testing.T) {
	is := is.New(t)
	g := newDrainGateway(t, time.Hour)
	sid := g.open(t)
	slow := g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"p"}}}`)
	defer slow.Body.Close()
	is.Equal(nextEvent(t, frame.NewSSEReader(slow.Body, 0)).Method(), "notifications/progress")

	ctx, cancel := context.WithCancel(context.Background())
	done := g.startDrain(t, ctx)
	cancel()
	is.Equal(drained(t, done), context.Canceled)
	is.True(regexp.MustCompile(`msg="drain ended" .*outcome=interrupted`).MatchString(g.logs.String()))
}

// ExampleServer_Drain drains a gateway with nothing in flight, which ends
// at once; a client that comes to open a session then is sent elsewhere.
func ExampleServer_Drain() {
	child := transporttest.Command("sdk-server")
	srv, err := NewServer(ServeConfig{Command: child.Args, Env: child.Env})
	if err != nil {
		fmt.Println(err)
		return
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	defer srv.Close(context.Background())

	fmt.Println("draining:", srv.Draining())
	fmt.Println("drained:", srv.Drain(context.Background()))
	fmt.Println("draining:", srv.Draining())

	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"example","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "Retry-After:", resp.Header.Get("Retry-After"))
	// Output:
	// draining: false
	// drained: <nil>
	// draining: true
	// 503 Retry-After: 1
}
