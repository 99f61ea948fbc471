package mw_test

import (
	"context"
	"fmt"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// A tool filter in front of a server that lists three tools: the denied
// one leaves the list, and a call to it is answered without reaching the
// server.
func ExampleToolFilter() {
	filter, err := mw.ToolFilter(mw.ToolFilterOptions{Deny: []string{"delete_*"}})
	if err != nil {
		panic(err)
	}
	var d mw.Duplex
	client := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		fmt.Println(m)
		return nil
	})
	server := mw.HandlerFunc(func(ctx context.Context, m frame.Message) error {
		fmt.Println("server got", m.Method())
		return d.ToClient.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo"},{"name":"delete_all"},{"name":"add"}]}}`))
	})
	d = filter(mw.Duplex{ToServer: server, ToClient: client})
	ctx := context.Background()
	_ = d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	_ = d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_all"}}`))
	fmt.Println(mw.MatchToolGlob("github_*", "github_create_issue"), mw.MatchToolGlob("files/?", "files/ab"))
	// Output:
	// server got tools/list
	// {"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo"},{"name":"add"}]}}
	// {"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Unknown tool: \"delete_all\" is filtered out by the gateway (--deny-tool \"delete_*\")","data":{"tool":"delete_all","filter":"--deny-tool \"delete_*\""}}}
	// true false
}
