//go:build linux

package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// askCall is a call of the child's ask tool, in flight: it waits for its
// client to answer the elicitation it sent.
type askCall struct {
	events *frame.SSEReader
	elicit frame.Message
}

// ask starts the ask tool's call (id 2) in session sid, and returns once
// the call waits for its client. The response's body is closed at the
// test's end.
func (g *drainGateway) ask(t *testing.T, sid string) *askCall {
	t.Helper()
	resp := g.post(t, sid, acceptBoth, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask"}}`)
	t.Cleanup(func() { resp.Body.Close() })
	a := &askCall{events: frame.NewSSEReader(resp.Body, 0)}
	a.elicit = nextEvent(t, a.events)
	if a.elicit.Method() != "elicitation/create" {
		t.Fatalf("the ask call sent %s, want elicitation/create", a.elicit.Bytes())
	}
	return a
}

// answer answers the elicitation, and checks that the call then ends
// with its result.
func (a *askCall) answer(t *testing.T, g *drainGateway, sid string) {
	t.Helper()
	answer := `{"jsonrpc":"2.0","id":` + string(a.elicit.ID()) + `,"result":{"action":"accept","content":{"name":"Ada"}}}`
	if st := g.status(t, http.MethodPost, sid, answer); st != http.StatusAccepted {
		t.Fatalf("the elicitation's answer: %d, want 202", st)
	}
	result := nextEvent(t, a.events)
	if result.ID() != "2" || result.Get("result.content.0.text").Str != "hello Ada" {
		t.Fatalf("the ask call ended with %s, want its result", result.Bytes())
	}
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
	ask := g.ask(t, sid)

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
	ask.answer(t, g, sid)   // the call gets its answer and finishes

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

// Requests of open sessions that keep coming as the drain ends and Close
// follows are each either answered by the child, or refused with 404
// before they were taken, so that their clients start a new session
// elsewhere. None is taken and then cut with "session ended".
func TestServeDrainEndTakesNothingCloseWouldCut(t *testing.T) {
	is := is.New(t)
	g := newDrainGateway(t, serveTestWait)
	const clients, callsBeforeDrain = 8, 64
	sids := make([]string, clients)
	for i := range sids {
		sids[i] = g.open(t)
	}
	var (
		answered, refused atomic.Int64
		mu                sync.Mutex
		bad               []string // what no client may see
		warm              = make(chan struct{})
		warmOnce          sync.Once
		wg                sync.WaitGroup
	)
	for i, sid := range sids {
		wg.Go(func() {
			for j := 0; ; j++ {
				text := fmt.Sprintf("client %d call %d", i, j)
				body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(j) + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + text + `"}}}`
				status, msg := drainCall(g, sid, body)
				switch {
				case status == http.StatusOK && msg.Get("result.content.0.text").Str == text:
					if answered.Add(1) == callsBeforeDrain {
						warmOnce.Do(func() { close(warm) })
					}
					continue
				case status == http.StatusNotFound:
					refused.Add(1) // not taken: its client would start a new session
				default:
					mu.Lock()
					bad = append(bad, fmt.Sprintf("%s: %d %s", text, status, msg.Bytes()))
					mu.Unlock()
				}
				return
			}
		})
	}
	select {
	case <-warm:
	case <-time.After(serveTestWait):
		t.Fatal("the clients made too few calls")
	}
	is.NoErr(drained(t, g.startDrain(t, context.Background())))
	is.NoErr(g.srv.Close(context.Background()))
	wg.Wait()
	t.Logf("%d calls answered, %d refused once the drain was over", answered.Load(), refused.Load())
	is.Equal(bad, []string(nil))
	is.Equal(refused.Load(), int64(clients)) // each client's last call, refused untaken
}

// Once the drain is over, a new GET of a session gets 404 with a JSON-RPC
// error saying the session ended, and a 2026-07-28 request 503 with
// Retry-After; a notification of a session still passes. So does a
// response that a request in flight waits for, which then finishes.
func TestServeDrainOverRefusesNewWork(t *testing.T) {
	is := is.New(t)
	g := newDrainGateway(t, 50*time.Millisecond)
	sid := g.open(t)
	ask := g.ask(t, sid)
	err := drained(t, g.startDrain(t, context.Background()))
	is.True(errors.Is(err, context.DeadlineExceeded)) // over, with the call in flight

	ctx, cancel := context.WithTimeout(context.Background(), serveTestWait)
	defer cancel()
	resp := g.do(t, ctx, http.MethodGet, sid, "text/event-stream", "")
	defer resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusNotFound) // no new stream
	msgs := readAnswer(t, resp)
	is.Equal(len(msgs), 1)
	is.True(strings.HasPrefix(msgs[0].Get("error.message").Str, "session ended: the gateway has drained"))

	msgs, resp = g.call(t, sid, acceptJSON, `{"jsonrpc":"2.0","id":"late","method":"tools/call","params":{"name":"echo","arguments":{"text":"late"}}}`)
	is.Equal(resp.StatusCode, http.StatusNotFound) // not taken
	is.Equal(msgs[0].ID(), frame.ID(`"late"`))
	is.Equal(msgs[0].Get("error.code").Int(), int64(frame.CodeGateway))

	is.Equal(g.status(t, http.MethodPost, sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`), http.StatusAccepted)

	resp = g.do(t, ctx, http.MethodPost, "", acceptBoth, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"modern"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo")
	defer resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusServiceUnavailable) // for another replica
	is.Equal(resp.Header.Get("Retry-After"), "1")
	msgs = readAnswer(t, resp)
	is.Equal(len(msgs), 1)
	is.Equal(msgs[0].ID(), frame.ID("4"))

	ask.answer(t, g, sid) // the call in flight gets its answer and finishes
}

// drainCall posts body under sid and returns the status and the one
// message answered (an empty one when there is none).
func drainCall(g *drainGateway, sid, body string) (int, frame.Message) {
	req, err := http.NewRequest(http.MethodPost, g.url, strings.NewReader(body))
	if err != nil {
		return 0, frame.Message{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", acceptJSON)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := g.client.Do(req)
	if err != nil {
		return 0, frame.MustParse(fmt.Sprintf(`{"jsonrpc":"2.0","id":null,"error":{"code":0,"message":%q}}`, err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	m, perr := frame.Parse(b)
	if err != nil || perr != nil {
		return resp.StatusCode, frame.Message{}
	}
	return resp.StatusCode, m
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
