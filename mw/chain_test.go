package mw

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// tracer is a stage that records the order it sees traffic in.
func tracer(name string, log *[]string, mu *sync.Mutex) Middleware {
	return func(next Duplex) Duplex {
		return Duplex{
			ToServer: HandlerFunc(func(ctx context.Context, m frame.Message) error {
				mu.Lock()
				*log = append(*log, name+">")
				mu.Unlock()
				return next.ToServer.Handle(ctx, m)
			}),
			ToClient: HandlerFunc(func(ctx context.Context, m frame.Message) error {
				mu.Lock()
				*log = append(*log, "<"+name)
				mu.Unlock()
				return next.ToClient.Handle(ctx, m)
			}),
		}
	}
}

func TestChainOnionOrder(t *testing.T) {
	is := is.New(t)
	var log []string
	var mu sync.Mutex
	var got []string
	client := HandlerFunc(func(_ context.Context, m frame.Message) error {
		got = append(got, m.String())
		return nil
	})
	var toClient Late
	server := HandlerFunc(func(ctx context.Context, m frame.Message) error {
		// An echo server: answers every request through the late-bound exit.
		return toClient.Handle(ctx, frame.ResultResponse(m.ID(), []byte(`{}`)))
	})
	d := Chain(tracer("a", &log, &mu), nil, tracer("b", &log, &mu), tracer("c", &log, &mu))(Duplex{ToServer: server, ToClient: client})
	toClient.Bind(d.ToClient)
	is.NoErr(d.ToServer.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)))
	is.Equal(strings.Join(log, " "), "a> b> c> <c <b <a")
	is.Equal(got, []string{`{"jsonrpc":"2.0","id":1,"result":{}}`})
}

func TestChainEmptyIsIdentity(t *testing.T) {
	is := is.New(t)
	d := Duplex{ToServer: Discard(), ToClient: Discard()}
	out := Chain()(d)
	is.Equal(out.ToServer, d.ToServer)
}

func TestLateUnbound(t *testing.T) {
	is := is.New(t)
	var l Late
	err := l.Handle(context.Background(), frame.MustParse(`{"method":"x"}`))
	is.True(errors.Is(err, errUnbound))
}

func TestServerBoundClientBound(t *testing.T) {
	is := is.New(t)
	var seen []string
	rec := func(tag string) func(Handler) Handler {
		return func(next Handler) Handler {
			return HandlerFunc(func(ctx context.Context, m frame.Message) error {
				seen = append(seen, tag)
				return next.Handle(ctx, m)
			})
		}
	}
	d := Chain(ServerBound(rec("s")), ClientBound(rec("c")))(Duplex{ToServer: Discard(), ToClient: Discard()})
	ctx := context.Background()
	is.NoErr(d.ToServer.Handle(ctx, frame.MustParse(`{"method":"x"}`)))
	is.NoErr(d.ToClient.Handle(ctx, frame.MustParse(`{"method":"y"}`)))
	is.Equal(seen, []string{"s", "c"})
}

func TestIDMinter(t *testing.T) {
	is := is.New(t)
	var g IDMinter
	a, b := g.Mint("page"), g.Mint("session")
	is.Equal(a, frame.ID(`"mcp-stdio/page/1"`))
	is.Equal(b, frame.ID(`"mcp-stdio/session/2"`))
	is.True(IsMinted(a))
	is.True(!IsMinted(`"mcp-stdioX"`))
	is.True(!IsMinted(`1`))
	m, err := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"x"}`).WithID(a)
	is.NoErr(err)
	is.Equal(m.ID(), a)
}

func TestErrorFor(t *testing.T) {
	is := is.New(t)
	req := frame.MustParse(`{"jsonrpc":"2.0","id":"r","method":"tools/call"}`)
	cases := []struct {
		err  error
		want string
	}{
		{&frame.StatusError{Code: 502}, `{"jsonrpc":"2.0","id":"r","error":{"code":-32000,"message":"HTTP 502"}}`},
		{&frame.StatusError{Code: 400, Body: []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"bad"}}`)}, `{"jsonrpc":"2.0","id":"r","error":{"code":-32602,"message":"bad"}}`},
		{errors.Join(errors.New("replay failed"), frame.ErrSessionLost), `{"jsonrpc":"2.0","id":"r","error":{"code":-32000,"message":"session lost"}}`},
		{context.DeadlineExceeded, `{"jsonrpc":"2.0","id":"r","error":{"code":-32000,"message":"request timed out"}}`},
		{&frame.SendError{Sent: true, Err: frame.ErrStreamEnded}, `{"jsonrpc":"2.0","id":"r","error":{"code":-32000,"message":"stream ended before the response"}}`},
	}
	for _, c := range cases {
		is.Equal(ErrorFor(req, c.err).String(), c.want)
	}
	is.Equal(ErrorFor(req, fmt.Errorf("x: %w", frame.ErrCancelled)).Len(), 0) // a cancelled request gets no answer
}
