package mw_test

import (
	"context"
	"fmt"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// ParamHeaders learns a tool's x-mcp-header annotations from the
// tools/list answer on its way to the client, then mirrors the annotated
// arguments of a call to that tool into Mcp-Param-* headers.
func ExampleParamHeaders() {
	var up mw.Late
	server := mw.HandlerFunc(func(ctx context.Context, m frame.Message) error {
		if m.Method() == "tools/call" {
			fmt.Println("Mcp-Param-Region:", m.Header().Get("Mcp-Param-Region"))
			fmt.Println("Mcp-Param-Shard:", m.Header().Get("Mcp-Param-Shard"))
			return up.Handle(ctx, frame.ResultResponse(m.ID(), []byte(`{"content":[]}`)))
		}
		return up.Handle(ctx, frame.ResultResponse(m.ID(), []byte(`{"tools":[{"name":"sql","inputSchema":{"type":"object","properties":{
			"region":{"type":"string","x-mcp-header":"Region"},
			"shard":{"type":"integer","x-mcp-header":"Shard"}}}}]}`)))
	})
	client := mw.HandlerFunc(func(context.Context, frame.Message) error { return nil })
	p := mw.ParamHeaders(mw.ParamHeadersOptions{Mode: mw.ParamHeadersAlways})(mw.Duplex{ToServer: server, ToClient: client})
	up.Bind(p.ToClient)

	ctx := context.Background()
	_ = p.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	_ = p.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sql","arguments":{"region":"Zürich","shard":4.0}}}`))
	// Output:
	// Mcp-Param-Region: =?base64?WsO8cmljaA==?=
	// Mcp-Param-Shard: 4
}
