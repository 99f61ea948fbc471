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
	// The gateway's idle clock starts when it has written the answer: after
	// this, but maybe before the client has read it.
	sent := time.Now()
	_, err := io.WriteString(c, rawGET)
	is.NoErr(err)
	resp, _ := transporttest.ReadResponse(t, br)
	is.Equal(resp.StatusCode, http.StatusNotFound)
	is.True(!resp.Close)                    // kept alive...
	is.True(transporttest.ClosedByPeer(br)) // ...until it has been idle long enough
	is.True(time.Since(sent) >= 300*time.Millisecond)
}

// At --max-connections with every connection carrying a request (two
// listens, whose streams stay open), a new connection waits a second for
// a slot, gets 503 with Retry-After and is closed, while those within are served; the
// refusals are logged once, and a connection closed makes room.
func TestServeCapsConnections(t *testing.T) {
	is := is.New(t)
	_, stderr, endpoint := startGateway(t, append([]string{"--max-connections", "2"}, exampleChild(t)...)...)
	a := openListen(t, endpoint, "1")
	b := openListen(t, endpoint, "2")

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
	// The first refusal is logged (stderr comes through a pipe: wait for
	// it); the others, within 10 s of it, are only counted.
	stderr.Watch(refusingConnections).Next(t, cmdTestWait)
	is.Equal(strings.Count(stderr.String(), "refusing connections"), 1)

	a.close() // the client goes: its connection makes room...
	deadline := time.Now().Add(cmdTestWait)
	for {
		d, dbr := gatewayConn(t, endpoint)
		_, err := io.WriteString(d, rawGET)
		is.NoErr(err)
		resp, _ := transporttest.ReadResponse(t, dbr)
		d.Close() // a refusal ends when its client has gone
		if resp.StatusCode == http.StatusNotFound {
			break
		}
		// ...once the gateway has seen the close, which it learns when its
		// read of the stream's connection ends; until then, still 503.
		is.Equal(resp.StatusCode, http.StatusServiceUnavailable)
		is.Equal(resp.Header.Get("Retry-After"), "1")
		if time.Now().After(deadline) {
			t.Fatal("closing a connection made no room")
		}
	}
	b.close()
	stillServing(t, endpoint)
}

// listenStream is an open subscriptions/listen whose ack has come.
type listenStream struct {
	resp   *http.Response
	events *bufio.Reader
	client *http.Client
}

// openListen opens a 2026-07-28 listen for tools/list_changed on a
// connection of its own and reads its ack.
func openListen(t *testing.T, endpoint, id string) *listenStream {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{}}
	resp, err := client.Do(modernRequest(t, endpoint, id, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("listen %s: %d %s", id, resp.StatusCode, b)
	}
	l := &listenStream{resp: resp, events: bufio.NewReader(resp.Body), client: client}
	t.Cleanup(l.close)
	ack := l.next(t)
	if ack.Method() != "notifications/subscriptions/acknowledged" || ack.Get(`params._meta.io\.modelcontextprotocol\/subscriptionId`).Raw != id {
		t.Fatalf("listen %s: want its ack first, got %s", id, ack)
	}
	return l
}

// next returns the stream's next message.
func (l *listenStream) next(t *testing.T) frame.Message {
	t.Helper()
	for {
		line, err := l.events.ReadString('\n')
		if err != nil {
			t.Fatalf("listen stream: %v", err)
		}
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: "); ok {
			return frame.MustParse(data)
		}
	}
}

func (l *listenStream) close() {
	l.resp.Body.Close()
	l.client.CloseIdleConnections()
}

// A flood of connections opened and left silent (the attack: more than
// --max-connections of them, holding every slot until the header timeout)
// keeps no client out: each new connection takes the place of the one
// silent longest, so a request after the flood is answered, not reset,
// and the oldest silent connections were closed without a word. With the
// default limit (from the open-file limit, thousands) the flood fits, and
// no silent connection is closed.
func TestServeSurvivesASilentConnectionFlood(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		flood int
		full  bool // the flood is beyond the limit
	}{
		{"max 100", []string{"--max-connections", "100"}, 1100, true},
		{"default", nil, 1100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			_, _, endpoint := startGateway(t, append(tc.flags, exampleChild(t)...)...)
			u, err := url.Parse(endpoint)
			is.NoErr(err)
			silent := make([]net.Conn, tc.flood)
			for i := range silent {
				c, err := net.DialTimeout("tcp", u.Host, cmdTestWait)
				is.NoErr(err)
				silent[i] = c
			}
			t.Cleanup(func() {
				for _, c := range silent {
					c.Close()
				}
			})

			client := &http.Client{Transport: &http.Transport{}}
			defer client.CloseIdleConnections()
			for _, id := range []string{"1", "2"} { // two requests, each answered once
				resp, err := client.Do(modernRequest(t, endpoint, id, "tools/list", ""))
				is.NoErr(err) // not reset
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				is.NoErr(err)
				is.Equal(resp.StatusCode, http.StatusOK)
				is.Equal(strings.Count(string(body), `"id":`+id+`,"result"`), 1)
			}
			if tc.full {
				silent[0].SetDeadline(time.Now().Add(cmdTestWait))
				got, err := io.ReadAll(silent[0]) // the oldest made room: closed, nothing written
				is.NoErr(err)
				is.Equal(len(got), 0)
			}
			stillServing(t, endpoint)
		})
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
		{"serve", "--max-listens", "0"},
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
