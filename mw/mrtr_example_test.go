package mw_test

import (
	"context"
	"fmt"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// A 2025-11-25 host calls a tool of a 2026-07-28 server that needs a
// confirmation. The bridge asks the host with a real elicitation/create,
// re-issues the call with the answer, and the host sees only the final
// result, under its own id.
func ExampleMRTRBridge() {
	conn := mw.NewConn(mw.EraStateless)
	conn.Initialized(
		frame.MustParse(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"host","version":"1"}}}`),
		frame.MustParse(`{"jsonrpc":"2.0","id":0,"result":{}}`))
	ctx := mw.WithConn(context.Background(), conn)

	var up, entry mw.Late // the chain's entries, bound once it is built
	server := mw.HandlerFunc(func(ctx context.Context, m frame.Message) error {
		fmt.Println("server ←", m)
		result := `{"resultType":"input_required","inputRequests":{"ok":{"method":"elicitation/create","params":{"message":"Delete 3 files?","requestedSchema":{"type":"object","properties":{}}}}},"requestState":"eyJzdGVwIjoxfQ"}`
		if m.Get("params.inputResponses").Exists() {
			result = `{"resultType":"complete","content":[{"type":"text","text":"deleted"}]}`
		}
		return up.Handle(ctx, frame.ResultResponse(m.ID(), []byte(result)))
	})
	host := mw.HandlerFunc(func(ctx context.Context, m frame.Message) error {
		fmt.Println("host ←", m)
		if m.Method() == "elicitation/create" { // the user accepts
			return entry.Handle(ctx, frame.ResultResponse(m.ID(), []byte(`{"action":"accept","content":{}}`)))
		}
		return nil
	})
	d := mw.MRTRBridge(mw.MRTROptions{})(mw.Duplex{ToServer: server, ToClient: host})
	up.Bind(d.ToClient)
	entry.Bind(d.ToServer)

	_ = d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"clean"}}`))
	// Output:
	// server ← {"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"clean"}}
	// host ← {"jsonrpc":"2.0","id":"mcp-stdio/mrtr-input/1","method":"elicitation/create","params":{"message":"Delete 3 files?","requestedSchema":{"type":"object","properties":{}}}}
	// server ← {"jsonrpc":"2.0","id":"mcp-stdio/mrtr/1","method":"tools/call","params":{"name":"clean","inputResponses":{"ok":{"action":"accept","content":{}}},"requestState":"eyJzdGVwIjoxfQ"}}
	// host ← {"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","content":[{"type":"text","text":"deleted"}]}}
}
