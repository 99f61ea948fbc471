package mw_test

import (
	"context"
	"fmt"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// The relay stands in for a 2026-07-28 host toward a session-era server:
// the server's ping is answered by the guarded stage, not passed to the
// host. A session-era host (it sent initialize) gets the server's
// requests itself.
func ExampleForModernHost() {
	run := func(first string) {
		var up mw.Late // where the server writes
		server := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
			fmt.Println("  server got:", m)
			return nil
		})
		host := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
			fmt.Println("  host got:  ", m)
			return nil
		})
		stage := mw.ParkChildRequests(mw.ParkOptions{StateKey: mw.NewStateKey(), ReplicaID: mw.NewReplicaID()})
		d := mw.Chain(mw.ForModernHost(stage))(mw.Duplex{ToServer: server, ToClient: host})
		up.Bind(d.ToClient)
		ctx := context.Background()
		_ = d.ToServer.Handle(ctx, frame.MustParse(first))
		_ = up.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"s1","method":"ping"}`))
	}
	fmt.Println("2026-07-28 host:")
	run(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	fmt.Println("session-era host:")
	run(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`)
	// Output:
	// 2026-07-28 host:
	//   server got: {"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}
	//   server got: {"jsonrpc":"2.0","id":"s1","result":{}}
	// session-era host:
	//   server got: {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}
	//   host got:   {"jsonrpc":"2.0","id":"s1","method":"ping"}
}
