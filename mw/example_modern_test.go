package mw_test

import (
	"context"
	"fmt"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// A session-era client's request made a 2026-07-28 request: InjectMeta
// adds the _meta of the handshake the client made (LocalAnswers answered
// it), RoutingHeaders derives the headers from the final bytes. The keys
// the client put in _meta stay as they were.
func ExampleInjectMeta() {
	conn := mw.NewConn(mw.EraStateless) // the era probe found a 2026-07-28 server
	conn.Discovered(frame.Message{}, mw.ModernVersion)
	conn.Initialized(
		frame.MustParse(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`),
		frame.MustParse(`{"jsonrpc":"2.0","id":0,"result":{}}`))

	transport := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		fmt.Println("Mcp-Method:", m.Header().Get(frame.HeaderMethod))
		fmt.Println("Mcp-Name:", m.Header().Get(frame.HeaderName))
		fmt.Println("MCP-Protocol-Version:", m.Header().Get(frame.HeaderProtocolVersion))
		fmt.Println(m)
		return nil
	})
	p := mw.Chain(mw.InjectMeta(mw.MetaOptions{}), mw.RoutingHeaders())(mw.Duplex{ToServer: transport, ToClient: mw.Discard()})
	ctx := mw.WithConn(context.Background(), conn)
	_ = p.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"grüßen","_meta":{"progressToken":1}}}`))
	// Output:
	// Mcp-Method: tools/call
	// Mcp-Name: =?base64?Z3LDvMOfZW4=?=
	// MCP-Protocol-Version: 2026-07-28
	// {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"grüßen","_meta":{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"host","version":"1"}}}}
}

// What a 2026-07-28 host says of itself in its requests' _meta is kept
// on the connection: the requests the gateway makes on its behalf name
// the same client.
func ExampleConn_NoteClientMeta() {
	c := mw.NewConn(mw.EraStateless)
	c.NoteClientMeta(frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"host","version":"2"}}}}`))
	info, caps := c.ClientMeta()
	fmt.Println(string(info), string(caps))
	c.SetEraBy(mw.EraStateless, "the host speaks 2026-07-28, and server/discover lists 2026-07-28")
	fmt.Println(c.Era(), "—", c.EraReason())
	// Output:
	// {"name":"host","version":"2"} {"sampling":{}}
	// 2026-07-28 — the host speaks 2026-07-28, and server/discover lists 2026-07-28
}
