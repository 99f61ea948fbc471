package exampleserver_test

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/exampleserver"
)

// ExampleServe runs the server in-process over pipes and plays a session-era
// client: initialize, then two tool calls.
func ExampleServe() {
	stdinR, stdinW := io.Pipe()   // client → server
	stdoutR, stdoutW := io.Pipe() // server → client
	done := make(chan error, 1)
	go func() {
		done <- exampleserver.Serve(context.Background(), stdinR, stdoutW, exampleserver.Options{Version: "1.0.0"})
		stdoutW.Close()
	}()

	responses := bufio.NewReader(stdoutR)
	call := func(request string) {
		fmt.Fprintln(stdinW, request)
		line, _ := responses.ReadString('\n')
		fmt.Print(line)
	}
	call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"example","version":"0"}}}`)
	fmt.Fprintln(stdinW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`)
	call(`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"add","arguments":{"a":1.5,"b":2}}}`)

	stdinW.Close() // the end of stdin ends the server
	fmt.Println("Serve returned", <-done)

	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"capabilities":{"completions":{},"logging":{},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"tools":{"listChanged":true}},"instructions":"The example MCP server bundled with mcp-stdio. Tools: echo, add, slow (progress, cancellation), bytes (large results), ask (elicitation), toggle (adds or removes the bonus tool). Resources: example://counter (tool calls so far, subscribable), example://readme, example://echo/{text}. Prompt: greet.","protocolVersion":"2025-06-18","serverInfo":{"name":"mcp-stdio-example","version":"1.0.0"}}}
	// {"jsonrpc":"2.0","id":2,"result":{"content":[{"text":"hello","type":"text"}]}}
	// {"jsonrpc":"2.0","id":"three","result":{"content":[{"text":"3.5","type":"text"}],"structuredContent":{"sum":3.5}}}
	// Serve returned <nil>
}
