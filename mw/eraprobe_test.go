package mw

import (
	"context"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// While a session-era host's initialize is on the session era's chain,
// the host's other messages (here its answer to a request of the
// server's) are not held behind it: they go to the same chain at once.
// The initialize answered, the era is the session era's, and nothing went
// to the 2026-07-28 chain.
func TestEraProbeSessionFirstHoldsNothingElse(t *testing.T) {
	is := is.New(t)
	conn := NewConn(EraSession)
	p := NewEraProbe(EraProbeOptions{Conn: conn})
	got := make(chan frame.Message, 4)
	release := make(chan struct{})
	session := HandlerFunc(func(_ context.Context, m frame.Message) error {
		got <- m
		if m.Method() == mcp.MethodInitialize {
			<-release
		}
		return nil
	})
	modern := HandlerFunc(func(context.Context, frame.Message) error {
		t.Error("a message went to the 2026-07-28 chain")
		return nil
	})
	d := p.Middleware(modern)(Duplex{ToServer: session, ToClient: Discard()})
	ctx := WithConn(t.Context(), conn)
	done := make(chan error, 1)
	go func() {
		done <- d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`))
	}()
	is.Equal((<-got).Method(), mcp.MethodInitialize)
	_, decided := p.Era()
	is.True(!decided) // not before the server answered
	is.NoErr(d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"ping-1","result":{}}`)))
	is.Equal((<-got).ID(), frame.ID(`"ping-1"`))
	close(release)
	is.NoErr(<-done)
	era, decided := p.Era()
	is.True(decided)
	is.Equal(era, EraSession)
	is.Equal(conn.EraReason(), "the host speaks the session era, and the server answered its initialize")
}
