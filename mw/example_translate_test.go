package mw_test

import (
	"context"
	"fmt"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// A 2026-07-28 client in front of a server that speaks only the session
// era: the gateway makes the handshake itself (Initialize), then
// LocalDiscover answers server/discover from its result, StripModernMeta
// takes the 2026-07-28 _meta keys off each request, and StampResults gives
// each result what 2026-07-28 requires.
func ExampleStampResults() {
	// The server: it answers initialize and tools/list, and prints what
	// it is sent. Its answers climb the chain (bound below).
	var up mw.Late
	server := mw.HandlerFunc(func(ctx context.Context, m frame.Message) error {
		fmt.Println("server got:", m)
		switch m.Method() {
		case "initialize":
			return up.Handle(ctx, frame.ResultResponse(m.ID(), []byte(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"session-era","version":"1"}}`)))
		case "tools/list":
			return up.Handle(ctx, frame.ResultResponse(m.ID(), []byte(`{"tools":[]}`)))
		}
		return nil
	})
	client := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		fmt.Println("client got:", m)
		return nil
	})

	conn := mw.NewConn(mw.EraSession)
	ctx := mw.WithConn(context.Background(), conn)

	// The handshake, before the chain carries anything: its answer is
	// caught by the Remap.
	calls := mw.NewRemap("init")
	up.Bind(mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		calls.Capture(m)
		return nil
	}))
	if _, err := mw.Initialize(ctx, server, calls, mw.HandshakeOptions{ClientVersion: "1.0"}); err != nil {
		fmt.Println(err)
		return
	}

	p := mw.Chain(
		mw.StampResults(mw.StampOptions{}),
		mw.LocalDiscover(mw.LocalDiscoverOptions{}),
		mw.StripModernMeta(),
	)(mw.Duplex{ToServer: server, ToClient: client})
	up.Bind(p.ToClient)

	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":7}`
	_ = p.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta+`}}`))
	_ = p.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+meta+`}}`))
	// Output:
	// server got: {"jsonrpc":"2.0","id":"mcp-stdio/init/1","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"elicitation":{}},"clientInfo":{"name":"mcp-stdio","version":"1.0"}}}
	// server got: {"jsonrpc":"2.0","method":"notifications/initialized"}
	// client got: {"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"session-era","version":"1"}},"ttlMs":60000,"cacheScope":"private"}}
	// server got: {"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"progressToken":7}}}
	// client got: {"jsonrpc":"2.0","id":2,"result":{"tools":[],"resultType":"complete","ttlMs":60000,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"session-era","version":"1"}}}}
}
