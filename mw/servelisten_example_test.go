package mw_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// A 2026-07-28 client listens for tool list changes on a child of the
// session era: the stage acknowledges, stamps the child's notification
// with the listen's id, and ends the listen gracefully at shutdown.
func ExampleServeListen() {
	// The child's handshake, done by the gateway when it started it.
	conn := mw.NewConn(mw.EraSession)
	conn.Initialized(
		frame.MustParse(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-stdio","version":"1"}}}`),
		frame.MustParse(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"child","version":"1"}}}`),
	)
	defer conn.Close(errors.New("done"))
	ctx := mw.WithConn(context.Background(), conn)

	child := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		fmt.Println("child got", m) // never the listen
		return nil
	})
	toClient := make(chan frame.Message, 8)
	client := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		toClient <- m
		return nil
	})
	stage, listens := mw.ServeListen(mw.ServeListenOptions{})
	d := stage(mw.Duplex{ToServer: child, ToClient: client})

	// The listen, under the id the Router minted for it.
	_ = d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"promptsListChanged":true}}}`))
	fmt.Println(<-toClient)
	// The child's notification, as its reader hands it on.
	_ = d.ToClient.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))
	fmt.Println(<-toClient)
	// The gateway shuts down.
	_ = listens.Close(context.Background())
	fmt.Println(<-toClient)
	// Output:
	// {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":"mcp-stdio/serve/1"}}}
	// {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"mcp-stdio/serve/1"}}}
	// {"jsonrpc":"2.0","id":"mcp-stdio/serve/1","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"mcp-stdio/serve/1"}}}
}

// The relay's listens: a listen's Handle lasts as long as the listen and
// returns how it ended (ServeListenOptions.AwaitEnd), for the relay's
// stdio edge to answer with. Here the server's session is re-established,
// and Interrupt ends the listen: an error the host can tell from the
// final result.
func ExampleListenStreams_Interrupt() {
	conn := mw.NewConn(mw.EraSession)
	conn.Initialized(
		frame.MustParse(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-stdio","version":"1"}}}`),
		frame.MustParse(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"server","version":"1"}}}`),
	)
	defer conn.Close(errors.New("done"))
	ctx := mw.WithConn(context.Background(), conn)
	acked := make(chan frame.Message, 1)
	host := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		acked <- m
		return nil
	})
	stage, listens := mw.ServeListen(mw.ServeListenOptions{AwaitEnd: true, Inline: true, CounterIDs: true})
	d := stage(mw.Duplex{ToServer: mw.Discard(), ToClient: host})

	ended := make(chan error, 1)
	go func() {
		ended <- d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`))
	}()
	fmt.Println(<-acked)
	listens.Interrupt(errors.New("the listen ended: the server's session is new; listen again"))
	fmt.Println(<-ended)
	// Output:
	// {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}
	// the listen ended: the server's session is new; listen again
}
