package mw_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// The first stage given to Chain is the outermost: server-bound traffic
// falls through the stages in order, and the answers climb back in reverse.
func ExampleChain() {
	trace := func(name string) mw.Middleware {
		return func(next mw.Duplex) mw.Duplex {
			return mw.Duplex{
				ToServer: mw.HandlerFunc(func(ctx context.Context, m frame.Message) error {
					fmt.Println(name, "→ server")
					return next.ToServer.Handle(ctx, m)
				}),
				ToClient: mw.HandlerFunc(func(ctx context.Context, m frame.Message) error {
					fmt.Println(name, "→ client")
					return next.ToClient.Handle(ctx, m)
				}),
			}
		}
	}
	var up mw.Late // the transport hands answers to the chain's client-bound entry
	transport := mw.HandlerFunc(func(ctx context.Context, m frame.Message) error {
		fmt.Println("server got", m.Method())
		return up.Handle(ctx, frame.ResultResponse(m.ID(), []byte(`{}`)))
	})
	client := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		fmt.Println("client got", m)
		return nil
	})

	p := mw.Chain(trace("a"), trace("b"), trace("c"))(mw.Duplex{ToServer: transport, ToClient: client})
	up.Bind(p.ToClient)
	_ = p.ToServer.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	// Output:
	// a → server
	// b → server
	// c → server
	// server got ping
	// c → client
	// b → client
	// a → client
	// client got {"jsonrpc":"2.0","id":1,"result":{}}
}

// denyTool answers calls of the named tool itself, with an error, so they
// never reach the server.
func denyTool(name string) mw.Middleware {
	return func(next mw.Duplex) mw.Duplex {
		return mw.Duplex{
			ToServer: mw.HandlerFunc(func(ctx context.Context, m frame.Message) error {
				if m.Method() == "tools/call" && m.Get("params.name").Str == name {
					return next.ToClient.Handle(ctx, frame.ErrorResponse(m.ID(), frame.CodeInvalidParams, "tool "+name+" is not allowed"))
				}
				return next.ToServer.Handle(ctx, m)
			}),
			ToClient: next.ToClient,
		}
	}
}

// redactPassword masks params.arguments.password before a call leaves,
// editing the bytes in place of re-encoding them.
func redactPassword() mw.Middleware {
	return mw.ServerBound(func(next mw.Handler) mw.Handler {
		return mw.HandlerFunc(func(ctx context.Context, m frame.Message) error {
			if m.Method() == "tools/call" && m.Get("params.arguments.password").Exists() {
				redacted, err := m.Set("params.arguments.password", []byte(`"***"`))
				if err != nil {
					return next.Handle(ctx, frame.ErrorResponse(m.ID(), frame.CodeInvalidParams, err.Error()))
				}
				m = redacted
			}
			return next.Handle(ctx, m)
		})
	})
}

// remote stands in for the HTTP transport: it prints what it is sent and
// hands its answers client-bound, with the HTTP response headers in the
// message's side channel. Its first tools/call never gets through.
type remote struct {
	up      mw.Late
	refused bool
}

func (r *remote) Handle(ctx context.Context, m frame.Message) error {
	if sid := m.Header().Get("Mcp-Session-Id"); sid != "" {
		fmt.Printf("server ← [session %s] %s\n", sid, m)
	} else {
		fmt.Println("server ←", m)
	}
	var answer frame.Message
	switch m.Method() {
	case "initialize":
		answer = frame.ResultResponse(m.ID(), []byte(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}}}`)).
			WithHeader("Mcp-Session-Id", "abc")
	case "tools/list":
		if m.Get("params.cursor").Exists() {
			answer = frame.ResultResponse(m.ID(), []byte(`{"tools":[{"name":"search"}]}`))
		} else {
			answer = frame.ResultResponse(m.ID(), []byte(`{"tools":[{"name":"login"},{"name":"rm"}],"nextCursor":"2"}`))
		}
	case "tools/call":
		if !r.refused {
			r.refused = true
			fmt.Println("server: connection refused")
			return &frame.SendError{Sent: false, Err: fmt.Errorf("connection refused")}
		}
		answer = frame.ResultResponse(m.ID(), []byte(`{"content":[{"type":"text","text":"welcome"}]}`))
	default:
		return nil // a notification: accepted
	}
	return r.up.Handle(ctx, answer)
}

// A relay chain: the stock stages in their order, plus two custom ones — a
// policy that denies a tool by answering an error, and one that redacts a
// field before it leaves.
func Example_relayChain() {
	session := mw.NewSession(mw.SessionOptions{})
	defer session.Close(context.Background())
	chain := mw.Chain(
		mw.CancelFilter(mw.CancelOptions{}),
		denyTool("rm"),
		redactPassword(),
		mw.PaginationMerge(mw.PaginationOptions{}),
		session.Middleware(),
		mw.Retry(mw.RetryOptions{Sleep: func(_ context.Context, d time.Duration) error {
			fmt.Println("retry: waiting", d)
			return nil
		}}),
	)
	transport := &remote{}
	client := mw.HandlerFunc(func(_ context.Context, m frame.Message) error {
		fmt.Println("client ←", m)
		return nil
	})
	p := chain(mw.Duplex{ToServer: transport, ToClient: client})
	transport.up.Bind(p.ToClient)

	for _, line := range []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"rm","arguments":{"path":"/"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"login","arguments":{"user":"ann","password":"hunter2"}}}`,
	} {
		req := frame.MustParse(line)
		if err := p.ToServer.Handle(context.Background(), req); err != nil {
			fmt.Println("client ←", mw.ErrorFor(req, err)) // what the relay's edge does
		}
	}
	// Output:
	// server ← {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}
	// client ← {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}}}}
	// server ← [session abc] {"jsonrpc":"2.0","method":"notifications/initialized"}
	// server ← [session abc] {"jsonrpc":"2.0","id":"mcp-stdio/page/1","method":"tools/list"}
	// server ← [session abc] {"jsonrpc":"2.0","id":"mcp-stdio/page/2","method":"tools/list","params":{"cursor":"2"}}
	// client ← {"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"login"},{"name":"rm"},{"name":"search"}]}}
	// client ← {"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"tool rm is not allowed"}}
	// server ← [session abc] {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"login","arguments":{"user":"ann","password":"***"}}}
	// server: connection refused
	// retry: waiting 1s
	// server ← [session abc] {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"login","arguments":{"user":"ann","password":"***"}}}
	// client ← {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"welcome"}]}}
}

// ExampleAnswerFailures answers requests that could not be delivered: an
// initialize gets the reason the server cannot be used, which a client
// shows its user; another request gets the plain failure.
func ExampleAnswerFailures() {
	refused := errors.New("dial tcp 127.0.0.1:9: connection refused")
	answer := mw.AnswerFailures(func(err error) (error, bool) {
		if errors.Is(err, refused) {
			return errors.New("nothing listens at http://127.0.0.1:9/mcp: is the server running?"), false
		}
		return nil, false
	})
	initialize := frame.MustParse(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)
	call := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`)
	fmt.Println(answer(initialize, refused))
	fmt.Println(answer(call, refused))
	// Output:
	// {"jsonrpc":"2.0","id":0,"error":{"code":-32000,"message":"nothing listens at http://127.0.0.1:9/mcp: is the server running?"}}
	// {"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"dial tcp 127.0.0.1:9: connection refused"}}
}
