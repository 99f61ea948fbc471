package mw_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// msgLog records the messages handed to it, in order.
type msgLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *msgLog) Handle(_ context.Context, m frame.Message) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, string(m.Bytes()))
	return nil
}

func (l *msgLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.msgs
	l.msgs = nil
	return out
}

// Listens pass through untouched; the handle's Close ends those still
// open, client-bound with their final frame and server-bound with a
// cancel, and has later ones refused. A listen the server ended, one the
// client cancelled and one of a child that exited are not ended again.
func TestPassListens(t *testing.T) {
	is := is.New(t)
	stage, ctl := mw.PassListens(mw.PassListensOptions{})
	server, client := &msgLog{}, &msgLog{}
	d := stage(mw.Duplex{ToServer: server, ToClient: client})
	conn := mw.NewConn(mw.EraStateless)
	ctx := mw.WithConn(context.Background(), conn)
	listen := func(id string) error {
		return d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"`+id+`","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`))
	}
	for _, id := range []string{"s/1", "s/2", "s/3"} {
		is.NoErr(listen(id))
	}
	ack := `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":"s/1"}}}`
	is.NoErr(d.ToClient.Handle(ctx, frame.MustParse(ack)))
	is.NoErr(d.ToClient.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"s/2","result":{"resultType":"complete"}}`))) // the server ended s/2
	is.NoErr(d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s/3"}}`)))
	is.Equal(len(server.take()), 4) // three listens and the cancel, untouched
	is.Equal(len(client.take()), 2)

	is.NoErr(ctl.Close(context.Background()))
	is.Equal(client.take(), []string{`{"jsonrpc":"2.0","id":"s/1","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"s/1"}}}`})
	is.Equal(server.take(), []string{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s/1","reason":"the gateway is shutting down"}}`})

	err := listen("s/4")
	var st *frame.StatusError
	is.True(errors.As(err, &st))
	is.Equal(st.Code, http.StatusServiceUnavailable) // refused once closed
	is.Equal(st.Header.Get("Retry-After"), "1")
	is.Equal(len(server.take()), 0)
	is.NoErr(ctl.Close(context.Background())) // again: nothing left
	is.Equal(len(client.take()), 0)
}

// A child that exits takes its listens with it: the router answers them,
// and Close has nothing to end there.
func TestPassListensForgetsAnExitedChild(t *testing.T) {
	is := is.New(t)
	stage, ctl := mw.PassListens(mw.PassListensOptions{})
	server, client := &msgLog{}, &msgLog{}
	d := stage(mw.Duplex{ToServer: server, ToClient: client})
	conn := mw.NewConn(mw.EraStateless)
	is.NoErr(d.ToServer.Handle(mw.WithConn(context.Background(), conn), frame.MustParse(`{"jsonrpc":"2.0","id":"s/1","method":"subscriptions/listen","params":{}}`)))
	conn.Close(errors.New("exited"))
	is.NoErr(ctl.Close(context.Background()))
	is.Equal(len(client.take()), 0)
	is.Equal(len(server.take()), 1) // the listen only
}
