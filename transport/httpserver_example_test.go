package transport_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport"
)

// ExampleHTTPServer moves bytes between HTTP clients and a ServeFunc: here
// one that answers every request with its params at once, refuses a
// method it does not know with 404, and takes notifications silently.
// Sessions, versions and routing are stages of package mw.
func ExampleHTTPServer() {
	srv := transport.NewHTTPServer(transport.HTTPServerConfig{
		Serve: func(ctx context.Context, m frame.Message, x *transport.Exchange) error {
			if m.Method() == "nope" {
				return &frame.StatusError{Code: http.StatusNotFound, Body: frame.ErrorResponse(m.ID(), frame.CodeMethodNotFound, "method not found").Bytes()}
			}
			if m.IsRequest() {
				params := m.Get("params").Raw
				if params == "" {
					params = "{}"
				}
				_ = x.Send(ctx, frame.ResultResponse(m.ID(), []byte(params)), "")
				x.End()
			}
			return nil
		},
	})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	post := func(accept, body string) {
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		resp, err := client.Do(req)
		if err != nil {
			panic(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%d %s %q\n", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	post("application/json", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
	post("application/json, text/event-stream", `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	post("application/json", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	post("application/json", `{"jsonrpc":"2.0","id":3,"method":"nope"}`)
	post("application/json", `{"jsonrpc":"2.0",`)
	// Output:
	// 200 application/json "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"name\":\"x\"}}"
	// 200 text/event-stream "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n"
	// 202  ""
	// 404 application/json "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32601,\"message\":\"method not found\"}}"
	// 400 application/json "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"parse error: the body is not JSON\"}}"
}
