// Package modernclient is a minimal 2026-07-28 MCP client over HTTP/1.1
// for load generators: one keep-alive connection per client, requests
// written from prebuilt bytes, and every answer checked to hold exactly
// one response with the request's id. It speaks only what such a
// program needs (POST of a request, JSON or SSE answer) and keeps little
// per client: a connection, a 4 KiB read buffer and the request bytes.
package modernclient

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"github.com/tidwall/gjson"
)

// Version is the protocol revision the client speaks.
const Version = "2026-07-28"

// Outcome kinds of [Client.Call], as counted by load generators.
const (
	OK          = "ok"          // answered exactly once with a result
	RPCError    = "rpc-error"   // answered exactly once with a JSON-RPC error
	Refused     = "503"         // 503 (with Retry-After when Call's retryAfter > 0)
	Status      = "status"      // another HTTP status
	Duplicate   = "duplicate"   // more than one response with the id
	Unanswered  = "unanswered"  // an answer without a response to the id
	EOF         = "eof"         // the connection closed before a whole answer
	Reset       = "reset"       // the connection was reset
	Timeout     = "timeout"     // no whole answer within the call's timeout
	DialFailure = "dial"        // the connection could not be opened
	Other       = "other-error" // any other failure
)

// Client is one 2026-07-28 client on a keep-alive connection of its own,
// opened on the first call and again after the server closed it. It is
// not safe for concurrent use: a client has one request in flight.
type Client struct {
	addr, host, path string
	dialer           net.Dialer
	conn             net.Conn
	br               *bufio.Reader
	req              bytes.Buffer // the request being written
	// Conns counts the connections the client opened.
	Conns int
}

// New returns a client of the MCP endpoint at endpoint (http only).
func New(endpoint string) (*Client, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("endpoint %q: want http://host:port/path", endpoint)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	return &Client{addr: addr, host: u.Host, path: path}, nil
}

// Result is what one call came to.
type Result struct {
	Kind       string        // one of the outcome kinds
	Status     int           // the HTTP status, 0 when none was read
	RetryAfter time.Duration // a 503's Retry-After
	Err        error         // the failure, for kinds other than OK
}

// Call sends a tools/call of tool with arguments (a JSON object) under
// id, and reads the answer within timeout (0: no bound). A connection the
// answer says Connection: close, or that failed, is closed; the next call
// opens another.
func (c *Client) Call(ctx context.Context, id int64, tool, arguments string, timeout time.Duration) Result {
	if err := c.Connect(ctx); err != nil {
		return Result{Kind: DialFailure, Err: err}
	}
	if timeout > 0 {
		_ = c.conn.SetDeadline(time.Now().Add(timeout))
	}
	c.build(id, tool, arguments)
	if _, err := c.conn.Write(c.req.Bytes()); err != nil {
		c.drop()
		return failure(err)
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.drop()
		return failure(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		c.drop()
		return failure(err)
	}
	if resp.Close {
		c.drop()
	}
	r := Result{Status: resp.StatusCode}
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable:
		r.Kind = Refused
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
			r.RetryAfter = time.Duration(s) * time.Second
		}
		r.Err = fmt.Errorf("503: %s", bytes.TrimSpace(body))
		return r
	case resp.StatusCode != http.StatusOK:
		r.Kind, r.Err = Status, fmt.Errorf("%d: %s", resp.StatusCode, bytes.TrimSpace(body))
		return r
	}
	r.Kind, r.Err = answers(body, id)
	return r
}

// Connect opens the client's connection if it has none.
func (c *Client) Connect(ctx context.Context) error {
	if c.conn != nil {
		return nil
	}
	start := time.Now()
	conn, err := c.dialer.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return fmt.Errorf("after %v: %w", time.Since(start).Round(time.Millisecond), err)
	}
	c.conn, c.Conns = conn, c.Conns+1
	if c.br == nil {
		c.br = bufio.NewReaderSize(conn, 4096)
	} else {
		c.br.Reset(conn)
	}
	return nil
}

// build writes the request into c.req.
func (c *Client) build(id int64, tool, arguments string) {
	var idb [20]byte
	ids := strconv.AppendInt(idb[:0], id, 10)
	b := &c.req
	b.Reset()
	body := len(`{"jsonrpc":"2.0","id":,"method":"tools/call","params":{"name":"","arguments":,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`) +
		len(ids) + len(tool) + len(arguments)
	b.WriteString("POST ")
	b.WriteString(c.path)
	b.WriteString(" HTTP/1.1\r\nHost: ")
	b.WriteString(c.host)
	b.WriteString("\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: " + Version +
		"\r\nMcp-Method: tools/call\r\nMcp-Name: ")
	b.WriteString(tool)
	b.WriteString("\r\nContent-Length: ")
	b.WriteString(strconv.Itoa(body))
	b.WriteString("\r\n\r\n")
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(ids)
	b.WriteString(`,"method":"tools/call","params":{"name":"`)
	b.WriteString(tool)
	b.WriteString(`","arguments":`)
	b.WriteString(arguments)
	b.WriteString(`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
}

// answers checks that body (a JSON message, or an SSE stream of them)
// holds exactly one response to id.
func answers(body []byte, id int64) (string, error) {
	want := strconv.FormatInt(id, 10)
	n, isErr := 0, false
	check := func(msg []byte) {
		if !gjson.ValidBytes(msg) {
			return
		}
		m := gjson.ParseBytes(msg)
		if m.Get("id").Raw != want || m.Get("method").Exists() {
			return
		}
		n++
		isErr = m.Get("error").Exists()
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		check(trimmed)
	} else {
		for line := range bytes.Lines(body) {
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				check(bytes.TrimSpace(data))
			}
		}
	}
	switch {
	case n == 0:
		return Unanswered, fmt.Errorf("no response to id %s in %q", want, truncate(body))
	case n > 1:
		return Duplicate, fmt.Errorf("%d responses to id %s", n, want)
	case isErr:
		return RPCError, fmt.Errorf("error response: %s", truncate(body))
	}
	return OK, nil
}

func truncate(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}

// failure classifies a transport error.
func failure(err error) Result {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return Result{Kind: EOF, Err: err}
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return Result{Kind: Reset, Err: err}
	case errors.As(err, &ne) && ne.Timeout():
		return Result{Kind: Timeout, Err: err}
	}
	return Result{Kind: Other, Err: err}
}

// drop closes the client's connection.
func (c *Client) drop() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}

// Close closes the client's connection, if open.
func (c *Client) Close() { c.drop() }
