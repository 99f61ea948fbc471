package main_test

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// TestServeGETStreamReconnectsThroughADeadConnection runs the mcp-stdio
// binary as `serve` with the bundled example server behind a TCP proxy
// that can break the client's side of a connection while keeping the
// server's side open (a NAT that forgot the connection, a laptop gone to
// sleep): serve still counts the old GET stream as open. The client's new
// GET, on a new connection, must take over (serve answered it 409 before)
// and get every server-initiated message from then on: the one that went
// into the dead connection (it names the last event it saw), and those the
// child sends later.
func TestServeGETStreamReconnectsThroughADeadConnection(t *testing.T) {
	is := is.New(t)
	serve := startBenchGateway(t, gwServe, relayBinary(t), "", "", "--log-level", "info")
	takeover := serve.log.Watch(regexp.MustCompile(`a new GET stream takes over from the one open`))
	proxy := transporttest.NewCutProxy(t, serve.url)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c := &sessionClient{url: proxy.URL}
	defer c.http.CloseIdleConnections()

	init, sid := c.post(t, ctx, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"reconnecting","version":"1"}}}`)
	is.Equal(gjson.Get(init, "result.protocolVersion").Str, "2025-11-25")
	is.True(sid != "")
	c.sid = sid
	c.post(t, ctx, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	toggle := func(id string) {
		t.Helper()
		// A JSON answer carries no notification: the child's
		// notifications/tools/list_changed goes to the GET stream.
		res, _ := c.post(t, ctx, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"toggle","arguments":{}}}`)
		is.True(gjson.Get(res, "result.content.0.text").Exists()) // toggled
	}

	first := c.get(t, ctx, "")
	is.Equal(first.StatusCode, http.StatusOK)
	toggle("2")
	events := frame.NewSSEReader(first.Body, 0)
	ev := nextEvent(t, events)
	is.Equal([]string{ev.ID, gjson.GetBytes(ev.Data, "method").Str}, []string{"g1", "notifications/tools/list_changed"})

	is.Equal(proxy.Cut(http.MethodGet), 1) // serve's side stays open
	_, err := io.Copy(io.Discard, first.Body)
	is.True(err != nil) // the client saw its connection break
	first.Body.Close()
	toggle("3") // into the dead connection, as far as serve knows

	second := c.get(t, ctx, "g1")
	defer second.Body.Close()
	is.Equal(second.StatusCode, http.StatusOK) // not 409: the newest GET wins
	events = frame.NewSSEReader(second.Body, 0)
	ev = nextEvent(t, events)
	is.Equal([]string{ev.ID, gjson.GetBytes(ev.Data, "method").Str}, []string{"g2", "notifications/tools/list_changed"})
	takeover.Next(t, testTimeout) // serve says what happened
	// What the child sends later comes on the new stream.
	for i := range 2 {
		toggle(strconv.Itoa(4 + i))
		ev = nextEvent(t, events)
		is.Equal([]string{ev.ID, gjson.GetBytes(ev.Data, "method").Str}, []string{"g" + strconv.Itoa(3+i), "notifications/tools/list_changed"})
	}
}

// nextEvent reads the next event of a stream, failing the test when the
// stream ends first.
func nextEvent(t *testing.T, r *frame.SSEReader) frame.Event {
	t.Helper()
	ev, err := r.Next()
	if err != nil {
		t.Fatalf("event stream: %v", err)
	}
	return ev
}

// sessionClient speaks Streamable HTTP to one session by hand, each
// request on a connection of its own, so that a cutProxy sees one request
// per connection.
type sessionClient struct {
	url  string
	sid  string
	http http.Client
}

// do sends a request with the session's id and returns the response.
func (c *sessionClient) do(t *testing.T, ctx context.Context, method, accept, body string, hdr http.Header) *http.Response {
	t.Helper()
	if c.http.Transport == nil {
		c.http.Transport = &http.Transport{DisableKeepAlives: true}
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Accept", accept)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// post sends body as a POST that takes a JSON answer, and returns the
// answer (empty for a 202) and the session id the response names.
func (c *sessionClient) post(t *testing.T, ctx context.Context, body string) (answer, sid string) {
	t.Helper()
	resp := c.do(t, ctx, http.MethodPost, "application/json", body, nil)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST %s: %s\n%s", body, resp.Status, b)
	}
	return string(b), resp.Header.Get("Mcp-Session-Id")
}

// get opens the session's GET stream, naming lastEventID when it is set.
func (c *sessionClient) get(t *testing.T, ctx context.Context, lastEventID string) *http.Response {
	t.Helper()
	hdr := http.Header{}
	if lastEventID != "" {
		hdr.Set("Last-Event-ID", lastEventID)
	}
	return c.do(t, ctx, http.MethodGet, "text/event-stream", "", hdr)
}
