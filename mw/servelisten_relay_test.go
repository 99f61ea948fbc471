package mw

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// The relay's ServeListen: each listen's Handle runs until the listen
// ends (AwaitEnd), notifications are handed on as they come (Inline),
// the ids of its own requests are a counter (CounterIDs), and its host
// has no --max-listens.

// newRelayListenRig is newListenRig with the relay's options.
func newRelayListenRig(t *testing.T, caps string, maxListens int) *listenRig {
	t.Helper()
	r := newListenRig(t, caps)
	log, logs := testLogger()
	stage, ctl := ServeListen(ServeListenOptions{AwaitEnd: true, Inline: true, CounterIDs: true, LimitFlag: "-", MaxListens: maxListens, Logger: log})
	r.d = stage(Duplex{ToServer: r.child, ToClient: r.client})
	r.child.up.Bind(r.d.ToClient)
	r.ctl, r.logs = ctl, logs
	return r
}

// listenAsync sends listen n on a goroutine of its own, as the relay's
// stdin dispatcher does, and returns what its Handle returns.
func (r *listenRig) listenAsync(ctx context.Context, n int, filter string) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- r.d.ToServer.Handle(ctx, frame.MustParse(fmt.Sprintf(`{"jsonrpc":"2.0","id":"mcp-stdio/serve/%d","method":"subscriptions/listen","params":{"notifications":%s}}`, n, filter)))
	}()
	return done
}

// pending fails when Handle of a listen has returned.
func pending(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("the listen's Handle returned %v while the listen lasts", err)
	default:
	}
}

// The graceful end: the listen's Handle returns nil once its final
// response has been handed on and its URIs unsubscribed; till then it
// lasts. Notifications are handed on before fromChild returns.
func TestServeListenAwaitEndGraceful(t *testing.T) {
	is := is.New(t)
	r := newRelayListenRig(t, allCaps, 0)
	done := r.listenAsync(r.ctx, 1, `{"toolsListChanged":true,"resourceSubscriptions":["x"]}`)
	is.Equal(r.client.next(t), ack(1, `{"toolsListChanged":true,"resourceSubscriptions":["x"]}`))
	is.Equal(r.child.next(t).String(), `{"jsonrpc":"2.0","id":"mcp-stdio/serve-listen/1","method":"resources/subscribe","params":{"uri":"x"}}`)
	r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	select {
	case m := <-r.client.got: // handed on already: inline
		is.Equal(m.String(), stamped(1, "notifications/tools/list_changed", ""))
	default:
		t.Fatal("the notification was not handed on inline")
	}
	pending(t, done)

	is.NoErr(r.ctl.Close(context.Background()))
	is.Equal(r.client.next(t), `{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"mcp-stdio/serve/1"}}}`)
	is.NoErr(<-done)
	select {
	case m := <-r.child.got: // unsubscribed before Handle returned
		is.Equal(m.String(), `{"jsonrpc":"2.0","id":"mcp-stdio/serve-listen/2","method":"resources/unsubscribe","params":{"uri":"x"}}`)
	default:
		t.Fatal("Handle returned before the unsubscribe")
	}
}

// The client's end: its notifications/cancelled (no cancel filter), or
// the end of the request's context (the cancel filter's), makes Handle
// return the client's doing, for which no answer is due.
func TestServeListenAwaitEndClientEnds(t *testing.T) {
	is := is.New(t)
	r := newRelayListenRig(t, allCaps, 0)
	done := r.listenAsync(r.ctx, 1, `{"toolsListChanged":true}`)
	r.client.next(t)
	r.cancel(t, 1)
	is.True(errors.Is(<-done, frame.ErrCancelled))

	ctx, cancel := context.WithCancelCause(r.ctx)
	done = r.listenAsync(ctx, 2, `{"toolsListChanged":true}`)
	r.client.next(t)
	cancel(frame.ErrCancelled)
	is.True(errors.Is(<-done, frame.ErrCancelled))
	r.client.none(t)
}

// Abrupt ends are errors the edge answers the listen with: the server
// gone, or Interrupt (the relay's session re-established), which drops
// the subscriptions without unsubscribing (the server holds none) and
// lets a new listen subscribe anew.
func TestServeListenAwaitEndAbrupt(t *testing.T) {
	is := is.New(t)
	r := newRelayListenRig(t, allCaps, 0)
	done := r.listenAsync(r.ctx, 1, `{"resourceSubscriptions":["x"]}`)
	r.client.next(t)
	is.Equal(r.child.next(t).Method(), "resources/subscribe")
	why := errors.New("the session is new")
	r.ctl.Interrupt(why)
	is.Equal(<-done, why)
	r.child.none(t) // no unsubscribe
	is.True(strings.Contains(r.logs.String(), "ended a listen: the session is new"))

	done = r.listenAsync(r.ctx, 2, `{"resourceSubscriptions":["x"]}`)
	is.Equal(r.client.next(t), ack(2, `{"resourceSubscriptions":["x"]}`))
	is.Equal(r.child.next(t).Method(), "resources/subscribe") // anew: the old reference is gone
	r.conn.Close(errors.New("the relay ends"))
	is.True(errors.Is(<-done, errListenServerGone))
	r.child.none(t)
	r.client.none(t)
}

// Inline, the copies of one notification go out in the order the
// listens were made.
func TestServeListenInlineOrder(t *testing.T) {
	is := is.New(t)
	r := newRelayListenRig(t, allCaps, 0)
	var dones []<-chan error
	for n := 1; n <= 5; n++ {
		dones = append(dones, r.listenAsync(r.ctx, n, `{"toolsListChanged":true}`))
		r.client.next(t)
	}
	for range 3 {
		r.fromChild(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
		for n := 1; n <= 5; n++ {
			is.Equal(r.client.next(t), stamped(n, "notifications/tools/list_changed", ""))
		}
	}
	is.NoErr(r.ctl.Close(context.Background()))
	for _, done := range dones {
		is.NoErr(<-done)
	}
}

// The relay's refusal beyond MaxListens names no flag it does not have.
func TestServeListenLimitWithoutAFlag(t *testing.T) {
	is := is.New(t)
	r := newRelayListenRig(t, allCaps, 1)
	done := r.listenAsync(r.ctx, 1, `{}`)
	r.client.next(t)
	err := <-r.listenAsync(r.ctx, 2, `{}`)
	var se *frame.StatusError
	is.True(errors.As(err, &se))
	is.Equal(se.Code, 503)
	is.True(strings.Contains(string(se.Body), "this server already has 1 listeners, the most the gateway serves; end one, or try again later"))
	is.True(!strings.Contains(string(se.Body)+r.logs.String(), "--max-listens"))
	is.NoErr(r.ctl.Close(context.Background()))
	is.NoErr(<-done)
}
