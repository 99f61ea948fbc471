package mw_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// A session-era host behind a 2026-07-28 server: the bridge opens a listen
// for the list changes the server advertises, and the host gets the
// server's notification as the plain session-era one.
func ExampleListenBridge() {
	// What the era stages record of a session-era host's handshake.
	conn := mw.NewConn(mw.EraStateless)
	conn.Initialized(
		frame.MustParse(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`),
		frame.MustParse(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"server","version":"1"}}}`),
	)
	ctx := mw.WithConn(context.Background(), conn)

	// A streaming transport: the listen's Handle runs as long as its
	// stream, handing the stream's messages client-bound meanwhile.
	var up mw.Late
	closed := make(chan struct{})
	server := mw.HandlerFunc(func(ctx context.Context, m frame.Message) error {
		if m.Method() != "subscriptions/listen" {
			return nil
		}
		defer close(closed)
		fmt.Println("server got", m)
		tag := `"_meta":{"io.modelcontextprotocol/subscriptionId":` + string(m.ID()) + `}`
		_ = up.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{`+tag+`,"notifications":{"toolsListChanged":true}}}`))
		_ = up.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{`+tag+`}}`))
		<-ctx.Done() // the bridge closes the stream
		return ctx.Err()
	})
	got := make(chan frame.Message, 1)
	host := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		got <- m
		return nil
	})

	p := mw.ListenBridge(mw.ListenOptions{})(mw.Duplex{ToServer: server, ToClient: host})
	up.Bind(p.ToClient)
	_ = p.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	fmt.Println("host got", <-got)

	conn.Close(errors.New("the host went away")) // ends the listen
	<-closed
	// Output:
	// server got {"jsonrpc":"2.0","id":"mcp-stdio/listen/1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}
	// host got {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}
}
