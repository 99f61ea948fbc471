package transport

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// On HTTP+SSE the endpoint is the session: messages from a stream carry it
// as Mcp-Session-Id, and a message stamped with an endpoint that is gone is
// refused as a forgotten session (404) without being posted, so session
// recovery re-initialises on the new stream.
func TestSSEClientEndpointIsTheSession(t *testing.T) {
	is := is.New(t)
	ls := newSSEServer(t)
	c, sink := ls.newClient()
	runSSE(t, c)
	conn := ls.conn(t)
	conn.endpoint("/messages?session=one")
	<-c.Ready()

	done := handleAsync(context.Background(), c, pingReq)
	ls.post(t)
	conn.message(pingResp)
	is.NoErr(result(t, done))
	got := sink.all()
	is.Equal(len(got), 1)
	first := got[0].Header().Get("Mcp-Session-Id")
	is.Equal(first, ls.url+"/messages?session=one")

	// Stamped with the current endpoint: posted as usual (the side channel
	// itself is not sent).
	stamped := frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/initialized"}`).WithHeader("Mcp-Session-Id", first)
	is.NoErr(c.Handle(context.Background(), stamped))
	p := ls.post(t)
	is.Equal(p.Header.Get("Mcp-Session-Id"), "")

	// The stream drops; the new one brings a new endpoint, and the old
	// session's messages are refused without a POST.
	close(conn.hangup)
	conn2 := ls.conn(t)
	conn2.endpoint("/messages?session=two")
	stale := frame.MustParse(pingReq).WithHeader("Mcp-Session-Id", first)
	var st *frame.StatusError
	for {
		err := c.Handle(context.Background(), stale)
		is.True(errors.As(err, &st))
		if st.Code == http.StatusNotFound {
			break
		}
	}
	select {
	case p := <-ls.posts:
		t.Fatalf("a message of the old session was posted: %+v", p)
	default:
	}
}

// An endpoint that answers 404 has lost its session: the client drops that
// stream at once and reconnects for a fresh endpoint.
func TestSSEClientEndpoint404Reconnects(t *testing.T) {
	is := is.New(t)
	ls := newSSEServer(t)
	c, _ := ls.newClient()
	runSSE(t, c)
	conn := ls.conn(t)
	conn.endpoint("/messages?session=one")
	<-c.Ready()

	ls.postStatus.Store(http.StatusNotFound)
	err := c.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	var st *frame.StatusError
	is.True(errors.As(err, &st))
	is.Equal(st.Code, http.StatusNotFound)
	ls.post(t)

	conn2 := ls.conn(t) // a new GET, without the server hanging up
	ls.postStatus.Store(http.StatusAccepted)
	conn2.endpoint("/messages?session=two")
	is.NoErr(c.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)))
	is.Equal(ls.post(t).URI, "/messages?session=two")
}
