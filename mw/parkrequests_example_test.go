package mw_test

import (
	"context"
	"fmt"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// A session-era child asks for an elicitation in the middle of a
// 2026-07-28 client's tools/call. The client gets input_required; its
// retry answers the child, and the call's result comes back under the
// retry's id. The child runs the tool once.
func ExampleParkChildRequests() {
	conn := mw.NewConn(mw.EraSession) // a session-era child, as the pool starts it
	conn.SetPrincipal("alice")
	ctx := mw.WithConn(context.Background(), conn)

	var up mw.Late // the stage's client-bound entry, where the child writes
	child := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		fmt.Println("child got: ", m)
		return nil
	})
	var state string
	client := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		if s := m.Get("result.requestState"); s.Exists() {
			state = s.String()
			m, _ = m.Set("result.requestState", []byte(`"<sealed>"`))
		}
		fmt.Println("client got:", m)
		return nil
	})
	stage := mw.ParkChildRequests(mw.ParkOptions{StateKey: mw.NewStateKey(), ReplicaID: mw.NewReplicaID()})
	d := mw.Chain(stage)(mw.Duplex{ToServer: child, ToClient: client})
	up.Bind(d.ToClient)

	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	_ = d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","method":"tools/call","params":{"name":"greet",`+meta+`}}`))
	_ = up.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object"}}}`))
	_ = d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/serve/2","method":"tools/call","params":{"name":"greet",`+meta+
		`,"inputResponses":{"input-1":{"action":"accept","content":{"name":"Ada"}}},"requestState":"`+state+`"}}`))
	_ = up.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","result":{"content":[{"type":"text","text":"Hello, Ada"}]}}`))
	// Output:
	// child got:  {"jsonrpc":"2.0","id":"mcp-stdio/serve/1","method":"tools/call","params":{"name":"greet","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}
	// client got: {"jsonrpc":"2.0","id":"mcp-stdio/serve/1","result":{"resultType":"input_required","inputRequests":{"input-1":{"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object"}}}},"requestState":"<sealed>"}}
	// child got:  {"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{"name":"Ada"}}}
	// client got: {"jsonrpc":"2.0","id":"mcp-stdio/serve/2","result":{"content":[{"type":"text","text":"Hello, Ada"}]}}
}
