package mw_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// The 2026-07-28 face of serve: the era fork sends a request with a _meta
// protocol version through the ladder, which refuses it at the HTTP level
// on the first rung it fails, before any child is involved; a request that
// passes goes on to the pool (here, a stand-in that prints it).
func ExampleValidateModern() {
	pool := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		fmt.Println("to the pool:", m.Method())
		return nil
	})
	ladder := mw.ValidateModern(mw.ModernLadderOptions{})(mw.Duplex{ToServer: pool, ToClient: mw.Discard()})
	session := mw.HandlerFunc(func(context.Context, frame.Message) error { return nil })
	fork := mw.ByEra(session, ladder.ToServer, nil)

	send := func(version, header string) {
		m := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` +
			`"io.modelcontextprotocol/protocolVersion":"` + version + `","io.modelcontextprotocol/clientCapabilities":{}}}}`)
		m = m.WithHeader("MCP-Protocol-Version", header).WithHeader("Mcp-Method", "tools/list")
		var refused *frame.StatusError
		if err := fork.Handle(context.Background(), m); errors.As(err, &refused) {
			fmt.Println(refused.Code, string(refused.Body))
		}
	}
	send("2026-07-28", "2026-07-28")
	send("2026-07-28", "2025-11-25")
	send("2030-01-01", "2030-01-01")
	// Output:
	// to the pool: tools/list
	// 400 {"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch: the MCP-Protocol-Version header does not match params._meta's protocolVersion"}}
	// 400 {"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version \"2030-01-01\"","data":{"supported":["2026-07-28"],"requested":"2030-01-01"}}}
}
