package transport

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// dialRaw opens a TCP connection to addr (host:port) for a test that
// speaks HTTP by hand; every read and write of it fails after
// serverTestWait.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, serverTestWait)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(serverTestWait))
	t.Cleanup(func() { c.Close() })
	return c
}

// postHead returns the head of a POST to /mcp with a body of n bytes and
// the extra header lines given.
func postHead(n int, extra ...string) string {
	h := "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json\r\n" +
		"Content-Length: " + strconv.Itoa(n) + "\r\n"
	for _, e := range extra {
		h += e + "\r\n"
	}
	return h + "\r\n"
}

// A body that stops arriving is answered 408 once nothing has come for
// the read timeout, and its connection is closed.
func TestServerCutsABodyThatStops(t *testing.T) {
	is := is.New(t)
	const timeout = 300 * time.Millisecond
	h := newServerHarness(t, HTTPServerConfig{ReadTimeout: timeout})
	c := dialRaw(t, h.ts.Listener.Addr().String())
	start := time.Now()
	_, err := io.WriteString(c, postHead(1000)+`{"jsonrpc":`) // 11 of the 1000 bytes announced
	is.NoErr(err)
	br := bufio.NewReader(c)
	resp, got := transporttest.ReadResponse(t, br) // waits for the server, up to serverTestWait
	is.Equal(resp.StatusCode, http.StatusRequestTimeout)
	is.True(resp.Close) // Connection: close
	is.Equal(got, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"request body timed out: nothing arrived for 300ms"}}`)
	is.True(time.Since(start) >= timeout)
	is.True(transporttest.ClosedByPeer(br))
}

// The read timeout bounds a silence, not the whole upload: a body that
// keeps trickling in, in all for longer than the timeout, gets through.
func TestServerTakesASlowBodyThatKeepsComing(t *testing.T) {
	is := is.New(t)
	const timeout = 800 * time.Millisecond
	h := newServerHarness(t, HTTPServerConfig{ReadTimeout: timeout})
	c := dialRaw(t, h.ts.Listener.Addr().String())
	msg := `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"s":"` + strings.Repeat("t", 60) + `"}}`
	_, err := io.WriteString(c, postHead(len(msg)))
	is.NoErr(err)
	start := time.Now()
	const pieces = 6
	for i := range pieces { // the client pauses between pieces: the scenario, not a synchronisation
		time.Sleep(200 * time.Millisecond)
		_, err := io.WriteString(c, msg[i*len(msg)/pieces:(i+1)*len(msg)/pieces])
		is.NoErr(err)
	}
	is.True(time.Since(start) > timeout)
	resp, got := transporttest.ReadResponse(t, bufio.NewReader(c))
	is.Equal(resp.StatusCode, http.StatusOK)
	is.Equal(got, `{"jsonrpc":"2.0","id":1,"result":{"s":"`+strings.Repeat("t", 60)+`"}}`)
}

// The read timeout is about the body only: an answer that takes longer
// than it still reaches the client.
func TestServerAnswersLongAfterTheBody(t *testing.T) {
	is := is.New(t)
	const timeout = 100 * time.Millisecond
	h := newServerHarness(t, HTTPServerConfig{ReadTimeout: timeout, Serve: func(ctx context.Context, m frame.Message, x *Exchange) error {
		time.AfterFunc(4*timeout, func() { // a slow server
			x.SendLast(context.Background(), frame.ResultResponse(m.ID(), []byte(`{"late":true}`)), "")
		})
		return nil
	}})
	for _, accept := range []string{acceptJSON, acceptBoth} {
		resp := h.do(t, t.Context(), "POST", `{"jsonrpc":"2.0","id":1,"method":"slow"}`, "Accept", accept)
		is.Equal(resp.StatusCode, http.StatusOK)
		is.True(strings.Contains(body(t, resp), `{"jsonrpc":"2.0","id":1,"result":{"late":true}}`))
	}
}

// A body the budget cannot take while another is held gets 503; once the
// held one has been passed on, the budget is free again.
func TestServerRefusesABodyOverTheBudget(t *testing.T) {
	is := is.New(t)
	b := frame.NewBudget(1 << 20)
	h := newServerHarness(t, HTTPServerConfig{MaxBodySize: 1 << 20, Budget: b})
	addr := h.ts.Listener.Addr().String()

	// The first client announces 700 KiB and waits for 100 Continue,
	// which comes when the server starts reading: its buffer is counted.
	held := transporttest.NotificationOfSize(700 << 10)
	a := dialRaw(t, addr)
	_, err := io.WriteString(a, postHead(len(held), "Expect: 100-continue"))
	is.NoErr(err)
	abr := bufio.NewReader(a)
	resp, _ := transporttest.ReadResponse(t, abr)
	is.Equal(resp.StatusCode, http.StatusContinue)
	is.Equal(b.Used(), int64(len(held)))

	// 600 KiB more do not fit in 1 MiB.
	other := transporttest.NotificationOfSize(600 << 10)
	c := dialRaw(t, addr)
	_, err = io.WriteString(c, postHead(len(other), "Expect: 100-continue"))
	is.NoErr(err)
	cbr := bufio.NewReader(c)
	resp, got := transporttest.ReadResponse(t, cbr)
	is.Equal(resp.StatusCode, http.StatusServiceUnavailable)
	is.Equal(resp.Header.Get("Retry-After"), "1")
	is.True(resp.Close)
	is.Equal(got, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"the gateway's memory budget for messages is used up; try again later"}}`)
	is.True(transporttest.ClosedByPeer(cbr))
	is.Equal(b.Used(), int64(len(held))) // the refusal counted nothing

	// The held body arrives and is passed on: 202, and nothing counted.
	_, err = io.WriteString(a, held)
	is.NoErr(err)
	resp, _ = transporttest.ReadResponse(t, abr)
	is.Equal(resp.StatusCode, http.StatusAccepted)
	is.Equal(b.Used(), int64(0))

	// The body refused before now passes.
	resp = h.do(t, t.Context(), "POST", other, "Accept", acceptJSON)
	body(t, resp)
	is.Equal(resp.StatusCode, http.StatusAccepted)
	is.Equal(b.Used(), int64(0))
}

// The messages queued on an answer are counted until they are written.
func TestServerCountsQueuedAnswers(t *testing.T) {
	for _, accept := range []string{acceptJSON, acceptBoth} {
		t.Run(accept, func(t *testing.T) {
			is := is.New(t)
			b := frame.NewBudget(64 << 20)
			over := make(chan struct{})
			result := []byte(`{"s":"` + strings.Repeat("r", 100<<10) + `"}`)
			var queued int64
			h := newServerHarness(t, HTTPServerConfig{Budget: b, Serve: func(ctx context.Context, m frame.Message, x *Exchange) error {
				x.OnDone(func([]frame.Message) { close(over) })
				if err := x.SendLast(ctx, frame.ResultResponse(m.ID(), result), ""); err != nil {
					return err
				}
				queued = b.Used() // the answer is not being written before this returns
				return nil
			}})
			resp := h.do(t, t.Context(), "POST", `{"jsonrpc":"2.0","id":1,"method":"big"}`, "Accept", accept)
			is.True(strings.Contains(body(t, resp), string(result)))
			<-over // the exchange is over: written, and let go
			is.Equal(queued, int64(frame.ResultResponse("1", result).Len()))
			is.Equal(b.Used(), int64(0))
		})
	}
}
