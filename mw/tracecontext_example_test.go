package mw_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// A request's traceparent header reaches the child in params._meta;
// nothing else in the message changes.
func ExampleTraceContext() {
	child := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		fmt.Println(m)
		return nil
	})
	h := mw.TraceContext(mw.TraceOptions{})(mw.Duplex{ToServer: child, ToClient: mw.Discard()}).ToServer
	m, _ := frame.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather"}}`))
	hdr := http.Header{}
	hdr.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	_ = h.Handle(context.Background(), m.WithHeaders(hdr))
	// Output:
	// {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather","_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}
}

// The relay sends a host's params._meta.traceparent on as the
// traceparent header of the HTTP request; the body stays the host's.
func ExampleTraceHeaders() {
	server := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		fmt.Println(m.Header().Get("traceparent"))
		return nil
	})
	h := mw.TraceHeaders(mw.TraceOptions{})(mw.Duplex{ToServer: server, ToClient: mw.Discard()}).ToServer
	m, _ := frame.Parse([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}`))
	_ = h.Handle(context.Background(), m)
	// Output:
	// 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
}
