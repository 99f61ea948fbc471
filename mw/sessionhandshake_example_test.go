package mw_test

import (
	"context"
	"fmt"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// A client at a chain's client end (the connectivity check) makes the
// gateway's handshake over a Caller of its own, declaring no
// capabilities; the outcome is recorded on the connection.
func ExampleInitializeWith() {
	server := func(_ context.Context, req frame.Message) (frame.Message, error) {
		fmt.Println("sent:", req.String())
		return frame.Parse([]byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"demo","version":"1"}}}`))
	}
	notifications := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		fmt.Println("then:", m.Method())
		return nil
	})
	conn := mw.NewConn(mw.EraSession)
	ctx := mw.WithConn(context.Background(), conn)
	_, err := mw.InitializeWith(ctx, notifications, server,
		mw.HandshakeOptions{ClientName: "mcp-stdio", ClientVersion: "check", NoCapabilities: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, _ := conn.ServerInitialize()
	fmt.Println("server:", res.Get("result.serverInfo.name").String())
	// Output:
	// sent: {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-stdio","version":"check"}}}
	// then: notifications/initialized
	// server: demo
}
