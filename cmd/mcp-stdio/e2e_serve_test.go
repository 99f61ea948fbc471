package main_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
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
	proxy := newCutProxy(t, serve.url)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c := &sessionClient{url: proxy.url}
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

	is.Equal(proxy.cut(http.MethodGet), 1) // serve's side stays open
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

// cutProxy forwards loopback TCP connections to a server. cut closes the
// client's side of the connections carrying a method's request and keeps
// their server side open, reading and dropping what the server writes:
// the client sees its connection break, the server sees nothing.
type cutProxy struct {
	ln     net.Listener
	target string
	url    string

	mu    sync.Mutex
	conns []*proxiedConn
	wg    sync.WaitGroup
}

// proxiedConn is one connection through a cutProxy.
type proxiedConn struct {
	client, server net.Conn
	method         string // of the first request, once read
	cut            bool
}

// newCutProxy starts a proxy to the server at rawURL, with its url field
// rawURL on the proxy's address; it stops when the test ends.
func newCutProxy(t *testing.T, rawURL string) *cutProxy {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: u.Host}
	u.Host = ln.Addr().String()
	p.url = u.String()
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.client.Close()
			c.server.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		c := &proxiedConn{client: client, server: server}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.up(c)
		go p.down(c)
	}
}

// up copies the client's bytes to the server, noting the first request's
// method. When the client's side ends it closes the server's side, unless
// cut did it.
func (p *cutProxy) up(c *proxiedConn) {
	defer p.wg.Done()
	br := bufio.NewReader(c.client)
	if line, err := br.ReadString('\n'); err == nil {
		method, _, _ := strings.Cut(line, " ")
		p.mu.Lock()
		c.method = method
		p.mu.Unlock()
		if _, err := io.WriteString(c.server, line); err == nil {
			_, _ = io.Copy(c.server, br)
		}
	}
	if !p.isCut(c) {
		c.server.Close()
	}
}

// down copies the server's bytes to the client; once the client's side is
// cut it reads and drops them, so that the server's writes go through.
func (p *cutProxy) down(c *proxiedConn) {
	defer p.wg.Done()
	_, _ = io.Copy(c.client, c.server)
	if p.isCut(c) {
		_, _ = io.Copy(io.Discard, c.server)
	}
	c.client.Close()
}

func (p *cutProxy) isCut(c *proxiedConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return c.cut
}

// cut breaks the client's side of every connection that carries a request
// of method, and reports how many it broke.
func (p *cutProxy) cut(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.conns {
		if c.method == method && !c.cut {
			c.cut = true
			c.client.Close()
			n++
		}
	}
	return n
}
