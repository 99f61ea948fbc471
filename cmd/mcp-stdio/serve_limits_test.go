//go:build linux

package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/cli"
	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// The resource limits of serve, end to end: the built binary, with the
// flags, over raw TCP where a test needs to misbehave as a client.

// gatewayConn opens a TCP connection to the gateway at endpoint; every read
// and write of it fails after cmdTestWait.
func gatewayConn(t *testing.T, endpoint string) (net.Conn, *bufio.Reader) {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", u.Host, cmdTestWait)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(cmdTestWait))
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// rawPOST returns the head of a POST to /mcp announcing n bytes, with the
// extra header lines given.
func rawPOST(n int, extra ...string) string {
	h := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		"Content-Length: " + strconv.Itoa(n) + "\r\n"
	for _, e := range extra {
		h += e + "\r\n"
	}
	return h + "\r\n"
}

var (
	refusingConnections = regexp.MustCompile(`refusing connections: too many are open.*max=2`)
	refusingBodies      = regexp.MustCompile(`refusing request bodies: the memory budget`)
)

// rawGET is a request the gateway answers at once (404: not its path).
const rawGET = "GET /elsewhere HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"

// A client that announces a body and stops sending it is answered 408 once
// nothing has arrived for --read-timeout, and its connection is closed.
func TestServeCutsABodyThatStops(t *testing.T) {
	is := is.New(t)
	_, _, endpoint := startGateway(t, "--read-timeout", "300ms")
	c, br := gatewayConn(t, endpoint)
	start := time.Now()
	_, err := io.WriteString(c, rawPOST(1000)+`{"jsonrpc":`) // 11 bytes of 1000
	is.NoErr(err)
	resp, body := transporttest.ReadResponse(t, br)
	is.Equal(resp.StatusCode, http.StatusRequestTimeout)
	is.True(resp.Close)
	is.True(strings.Contains(body, "request body timed out: nothing arrived for 300ms"))
	is.True(time.Since(start) >= 300*time.Millisecond)
	is.True(transporttest.ClosedByPeer(br))
}

// A keep-alive connection that carries no request for --conn-idle-timeout
// is closed by the gateway.
func TestServeClosesIdleConnections(t *testing.T) {
	is := is.New(t)
	_, _, endpoint := startGateway(t, "--conn-idle-timeout", "300ms")
	c, br := gatewayConn(t, endpoint)
	_, err := io.WriteString(c, rawGET)
	is.NoErr(err)
	resp, _ := transporttest.ReadResponse(t, br)
	is.Equal(resp.StatusCode, http.StatusNotFound)
	is.True(!resp.Close) // kept alive...
	answered := time.Now()
	is.True(transporttest.ClosedByPeer(br)) // ...until it has been idle long enough
	is.True(time.Since(answered) >= 300*time.Millisecond)
}

// Beyond --max-connections a connection gets an immediate 503 and is
// closed, while those within are served; the refusals are logged once,
// and a connection closed makes room.
func TestServeCapsConnections(t *testing.T) {
	is := is.New(t)
	_, stderr, endpoint := startGateway(t, "--max-connections", "2")
	served := func(c net.Conn, br *bufio.Reader) {
		t.Helper()
		_, err := io.WriteString(c, rawGET)
		is.NoErr(err)
		resp, _ := transporttest.ReadResponse(t, br)
		is.Equal(resp.StatusCode, http.StatusNotFound)
	}
	a, abr := gatewayConn(t, endpoint)
	served(a, abr)
	b, bbr := gatewayConn(t, endpoint)
	served(b, bbr)

	for range 5 {
		c, cbr := gatewayConn(t, endpoint)
		_, err := io.WriteString(c, rawGET)
		is.NoErr(err)
		resp, body := transporttest.ReadResponse(t, cbr)
		is.Equal(resp.StatusCode, http.StatusServiceUnavailable)
		is.True(resp.Close)
		is.Equal(resp.Header.Get("Retry-After"), "1")
		is.Equal(body, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"too many connections (at most 2); try again later"}}`)
		is.True(transporttest.ClosedByPeer(cbr))
	}
	served(a, abr) // still served
	served(b, bbr)
	// The first refusal is logged (stderr comes through a pipe: wait for
	// it); the others, within 10 s of it, are only counted.
	stderr.Watch(refusingConnections).Next(t, cmdTestWait)
	is.Equal(strings.Count(stderr.String(), "refusing connections"), 1)

	a.Close()
	// The gateway sees the close when its read of the idle connection
	// ends; until then a new connection is still refused.
	deadline := time.Now().Add(cmdTestWait)
	for {
		d, dbr := gatewayConn(t, endpoint)
		_, err := io.WriteString(d, rawGET)
		is.NoErr(err)
		resp, _ := transporttest.ReadResponse(t, dbr)
		if resp.StatusCode == http.StatusNotFound {
			break
		}
		is.Equal(resp.StatusCode, http.StatusServiceUnavailable)
		if time.Now().After(deadline) {
			t.Fatal("closing a connection made no room")
		}
		time.Sleep(20 * time.Millisecond) // a pause between attempts, not a synchronisation
	}
}

// The memory budget (--max-buffered) is shared by request bodies and the
// server's answers: while one body holds most of it, another body gets
// 503 and an answer that does not fit is replaced by an error; once the
// body has been passed on, both go through.
func TestServeMemoryBudget(t *testing.T) {
	is := is.New(t)
	_, stderr, endpoint := startGateway(t, "--max-buffered", "1MiB", "--max-body", "1MiB", "--max-message-size", "1MiB")
	sid := openSession(t, endpoint)

	// The first body announces 700 KiB and waits for 100 Continue, which
	// the gateway sends once it reads the body: its buffer is counted.
	held := transporttest.NotificationOfSize(700 << 10)
	a, abr := gatewayConn(t, endpoint)
	_, err := io.WriteString(a, rawPOST(len(held), "Expect: 100-continue"))
	is.NoErr(err)
	resp, _ := transporttest.ReadResponse(t, abr)
	is.Equal(resp.StatusCode, http.StatusContinue)

	refusedBody := func() int {
		t.Helper()
		c, cbr := gatewayConn(t, endpoint)
		_, err := io.WriteString(c, rawPOST(600<<10, "Expect: 100-continue", "Mcp-Session-Id: "+sid))
		is.NoErr(err)
		resp, body := transporttest.ReadResponse(t, cbr)
		if resp.StatusCode == http.StatusServiceUnavailable {
			is.Equal(resp.Header.Get("Retry-After"), "1")
			is.True(resp.Close)
			is.True(strings.Contains(body, "memory budget for messages is used up"))
		}
		return resp.StatusCode
	}
	is.Equal(refusedBody(), http.StatusServiceUnavailable)
	stderr.Watch(refusingBodies).Next(t, cmdTestWait)

	// A 400 KiB answer from the server does not fit beside the held body.
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"bytes","arguments":{"n":409600}}}`
	msgs := postInSession(t, endpoint, sid, call)
	is.Equal(len(msgs), 1)
	is.Equal(msgs[0].ID(), frame.ID("7"))
	_, isErr := msgs[0].ErrorCode()
	is.True(isErr)
	is.True(strings.Contains(msgs[0].Get("error.message").Str, "memory budget"))

	// The held body arrives and is passed on; then both go through.
	_, err = io.WriteString(a, held)
	is.NoErr(err)
	resp, _ = transporttest.ReadResponse(t, abr)
	is.Equal(resp.StatusCode, http.StatusBadRequest) // no session: refused, and let go
	msgs = postInSession(t, endpoint, sid, call)
	is.Equal(len(msgs), 1)
	is.Equal(len(msgs[0].Get("result.content.0.text").Str), 409600)
	c, cbr := gatewayConn(t, endpoint)
	other := transporttest.NotificationOfSize(600 << 10)
	_, err = io.WriteString(c, rawPOST(len(other), "Mcp-Session-Id: "+sid)+other)
	is.NoErr(err)
	resp, _ = transporttest.ReadResponse(t, cbr)
	is.Equal(resp.StatusCode, http.StatusAccepted)
}

// postInSession POSTs body in session sid and returns the answer's
// messages.
func postInSession(t *testing.T, endpoint, sid, body string) []frame.Message {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST in session: %d %v", resp.StatusCode, err)
	}
	return []frame.Message{frame.MustParse(string(b))}
}

func TestServeLimitFlags(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--max-buffered", "1MiB"}, // below --max-body's 64 MiB
		{"serve", "--max-connections", "0"},
		{"serve", "--conn-idle-timeout", "0"},
		{"serve", "--read-timeout", "-1s"},
	} {
		t.Run(strings.Join(args[1:], " "), func(t *testing.T) {
			is := is.New(t)
			var stdout, stderr strings.Builder
			err := run(t.Context(), args, func(string) string { return "" }, nil, &stdout, &stderr)
			is.Equal(exitCode(err), cli.ExitUsage)
		})
	}
}
