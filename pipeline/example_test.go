package pipeline_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
	"github.com/mcp-stdio/mcp-stdio/pipeline"
)

// A relay with a stage of your own: calls of one tool are answered by the
// relay with an error and never reach the server. Everything else goes
// through the stock chain.
func ExampleRelay_denyTool() {
	// A stand-in for the remote server: it answers every request with an
	// empty result and every notification with 202.
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m, err := frame.Parse(body)
		if err != nil || m.Kind() != frame.Request {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(frame.ResultResponse(m.ID(), []byte(`{"served":"`+m.Method()+`"}`)).Bytes())
	}))
	defer server.Close()

	denyTool := func(name string) mw.Middleware {
		return func(next mw.Duplex) mw.Duplex {
			return mw.Duplex{
				ToServer: mw.HandlerFunc(func(ctx context.Context, m frame.Message) error {
					if m.Method() == "tools/call" && m.Get("params.name").String() == name {
						return next.ToClient.Handle(ctx, frame.ErrorResponse(m.ID(), frame.CodeInvalidParams, "tool denied"))
					}
					return next.ToServer.Handle(ctx, m)
				}),
				ToClient: next.ToClient,
			}
		}
	}

	stdin := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_everything"}}` + "\n")
	err := pipeline.Relay(context.Background(), pipeline.RelayConfig{
		URL:         server.URL,
		Transport:   pipeline.TransportStreamable,
		Middlewares: []mw.Middleware{denyTool("delete_everything")},
	}, stdin, os.Stdout)
	fmt.Println("err:", err)
	// Output:
	// {"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"tool denied"}}
	// err: <nil>
}

// A stage that rewrites what the client gets: a field of every tools/call
// result is redacted with Message.Set, which edits the raw bytes and keeps
// every other byte as the server sent it.
func ExampleRelay_redact() {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m, _ := frame.Parse(body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(frame.ResultResponse(m.ID(), []byte(`{"content":[],"structuredContent":{"user":"ann","apiKey":"s3cr3t","score":1.50}}`)).Bytes())
	}))
	defer server.Close()

	redact := mw.ClientBound(func(next mw.Handler) mw.Handler {
		return mw.HandlerFunc(func(ctx context.Context, m frame.Message) error {
			if m.Get("result.structuredContent.apiKey").Exists() {
				if r, err := m.Set("result.structuredContent.apiKey", []byte(`"[redacted]"`)); err == nil {
					m = r
				}
			}
			return next.Handle(ctx, m)
		})
	})

	stdin := strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami"}}` + "\n")
	_ = pipeline.Relay(context.Background(), pipeline.RelayConfig{
		URL:         server.URL,
		Transport:   pipeline.TransportStreamable,
		Middlewares: []mw.Middleware{redact},
	}, stdin, os.Stdout)
	// Output:
	// {"jsonrpc":"2.0","id":7,"result":{"content":[],"structuredContent":{"user":"ann","apiKey":"[redacted]","score":1.50}}}
}
