package transport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// A primed event stream opens with an event that has an id, the retry
// field and empty data: with a quick answer in the same write, with a
// slow one on its own after HeaderHold, before the answer.
func TestServerPrimedStream(t *testing.T) {
	const prime = "id: p1-0\nretry: 2500\ndata:\n\n"
	t.Run("quick answer", func(t *testing.T) {
		is := is.New(t)
		h := newServerHarness(t, HTTPServerConfig{HeaderHold: time.Hour, Serve: func(ctx context.Context, m frame.Message, x *Exchange) error {
			x.Prime("p1-0", 2500*time.Millisecond)
			return echoServe(ctx, m, x)
		}})
		resp := h.do(t, t.Context(), "POST", `{"jsonrpc":"2.0","id":1,"method":"echo"}`, "Accept", acceptBoth)
		is.Equal(body(t, resp), prime+"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
		is.True(resp.ContentLength > 0) // one piece
	})
	t.Run("slow answer", func(t *testing.T) {
		is := is.New(t)
		release := make(chan struct{})
		h := newServerHarness(t, HTTPServerConfig{HeaderHold: time.Millisecond, Serve: func(ctx context.Context, m frame.Message, x *Exchange) error {
			x.Prime("p1-0", 2500*time.Millisecond)
			go func() {
				<-release
				_ = echoServe(context.Background(), m, x)
			}()
			return nil
		}})
		resp := h.do(t, t.Context(), "POST", `{"jsonrpc":"2.0","id":2,"method":"slow"}`, "Accept", acceptBoth)
		is.Equal(readUntil(t, resp.Body, "data:\n\n"), prime) // before the answer exists
		close(release)
		is.Equal(body(t, resp), "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n")
	})
	t.Run("no retry", func(t *testing.T) {
		is := is.New(t)
		h := newServerHarness(t, HTTPServerConfig{Serve: func(ctx context.Context, m frame.Message, x *Exchange) error {
			x.Prime("p7-0", 0)
			return echoServe(ctx, m, x)
		}})
		resp := h.do(t, t.Context(), "POST", `{"jsonrpc":"2.0","id":1,"method":"echo"}`, "Accept", acceptBoth)
		is.Equal(body(t, resp), "id: p7-0\ndata:\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
	})
}

// Cut hands back what is queued and not taken, ends the answer, and leaves
// nothing for OnDone; later sends fail. What it hands back no longer
// counts against the budget: whoever sends it again counts it again.
func TestServerCut(t *testing.T) {
	is := is.New(t)
	var back, unsent []frame.Message
	var sendErr error
	var queued, afterCut int64
	b := frame.NewBudget(1 << 20)
	h := newServerHarness(t, HTTPServerConfig{Budget: b, Serve: func(ctx context.Context, m frame.Message, x *Exchange) error {
		x.OnDone(func(left []frame.Message) { unsent = left })
		for _, method := range []string{"a", "b"} {
			if err := x.Send(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"`+method+`"}`), ""); err != nil {
				return err
			}
		}
		queued = b.Used()
		back = x.Cut() // before the server took anything
		afterCut = b.Used()
		sendErr = x.Send(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"c"}`), "")
		is.Equal(x.Cut(), []frame.Message(nil)) // nothing left
		return nil
	}})
	resp := h.do(t, t.Context(), "GET", "", "Accept", "text/event-stream")
	is.Equal(resp.StatusCode, http.StatusOK)
	is.Equal(body(t, resp), "") // the stream ends without an event
	is.Equal(len(back), 2)
	is.Equal(back[0].Method(), "a")
	is.Equal(back[1].Method(), "b")
	is.True(errors.Is(sendErr, frame.ErrExchangeOver))
	is.Equal(len(unsent), 0)
	is.True(queued > 0)
	is.Equal(afterCut, int64(0))
}

// Whenever Cut comes, every message sent before it is either named (taken
// for writing) or handed back, never both and never neither, in order.
func TestServerCutWhileWriting(t *testing.T) {
	is := is.New(t)
	const n = 200
	var mu sync.Mutex
	var named []string
	got := make(chan *Exchange, 1)
	h := newServerHarness(t, HTTPServerConfig{Serve: func(ctx context.Context, m frame.Message, x *Exchange) error {
		x.NumberEvents(func(m frame.Message) string {
			mu.Lock()
			defer mu.Unlock()
			named = append(named, m.Method())
			return m.Method()
		})
		got <- x
		return nil
	}})
	resp := h.do(t, t.Context(), "GET", "", "Accept", "text/event-stream")
	x := <-got
	var sent []string
	var back []frame.Message
	for i := range n {
		method := fmt.Sprintf("m%d", i)
		if x.Send(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","method":"`+method+`"}`), "") != nil {
			break
		}
		sent = append(sent, method)
		if i == n/2 {
			back = x.Cut()
		}
	}
	body(t, resp)
	mu.Lock()
	all := slices.Clone(named)
	mu.Unlock()
	for _, m := range back {
		all = append(all, m.Method())
	}
	is.Equal(all, sent)
	is.Equal(len(sent), n/2+1) // nothing is taken after Cut
}
