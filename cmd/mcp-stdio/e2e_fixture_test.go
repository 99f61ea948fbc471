package main_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// The fixture's tool list: fixtureTools tools in pages of fixturePageSize,
// so a client that never follows nextCursor sees only the first page unless
// the relay merges them.
const (
	fixturePageSize = 5
	fillerTools     = 20
	fixtureTools    = 5 + fillerTools // echo, slow, ask, progress, digest, plus filler
	fixturePages    = (fixtureTools + fixturePageSize - 1) / fixturePageSize
)

// fixture is the go-sdk server behind the relay in the end-to-end tests,
// with probes the tests read.
type fixture struct {
	server *mcp.Server
	// started receives once per call of the slow tool, when it begins.
	started chan struct{}
	// cancelled receives the cause when a slow call's context ends.
	cancelled chan error
	// initializes and listCalls count the initialize and tools/list
	// requests the server received.
	initializes atomic.Int32
	listCalls   atomic.Int32
}

// newFixture returns a server with these tools:
//
//   - echo {text}: returns text.
//   - slow: blocks until its context ends, and reports that on cancelled.
//   - ask: elicits a name from the client and returns "accept:<name>".
//   - progress: sends progress 1, 2, 3 for the call's token, returns "done".
//   - digest {data}: returns the hex SHA-256 of data.
//   - filler-NN: never called; they make tools/list span several pages.
func newFixture() *fixture {
	fx := &fixture{started: make(chan struct{}, 8), cancelled: make(chan error, 8)}
	s := mcp.NewServer(&mcp.Implementation{Name: "e2e-server", Version: "1"}, &mcp.ServerOptions{PageSize: fixturePageSize})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "initialize":
				fx.initializes.Add(1)
			case "tools/list":
				fx.listCalls.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	add := func(name string, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, h)
	}
	add("echo", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(gjson.GetBytes(req.Params.Arguments, "text").String()), nil
	})
	add("slow", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fx.started <- struct{}{}
		<-ctx.Done()
		fx.cancelled <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	add("ask", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
			Message: "your name?",
			RequestedSchema: map[string]any{
				"type":       "object",
				"properties": map[string]any{"name": map[string]any{"type": "string"}},
			},
		})
		if err != nil {
			return nil, err
		}
		return textResult(fmt.Sprintf("%s:%v", res.Action, res.Content["name"])), nil
	})
	add("progress", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		token := req.Params.GetProgressToken()
		for i := 1; i <= 3; i++ {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: 3}); err != nil {
				return nil, err
			}
		}
		return textResult("done"), nil
	})
	add("digest", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(sha256Hex(gjson.GetBytes(req.Params.Arguments, "data").String())), nil
	})
	for i := range fillerTools {
		add(fmt.Sprintf("filler-%02d", i), func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("filler"), nil
		})
	}
	fx.server = s
	return fx
}

// closeSessions closes every session the server has, as a server that
// forgets its sessions (or dies) would.
func (fx *fixture) closeSessions() {
	for ss := range fx.server.Sessions() {
		_ = ss.Close()
	}
}

// sessions counts the server's open sessions.
func (fx *fixture) sessions() int {
	n := 0
	for range fx.server.Sessions() {
		n++
	}
	return n
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// resultText returns the text of a result's single text content.
func resultText(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) != 1 {
		return fmt.Sprintf("<unexpected result %+v>", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return fmt.Sprintf("<unexpected content %T>", res.Content[0])
	}
	return tc.Text
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// payload returns n bytes of printable ASCII that need no JSON escaping,
// with a period (4093, a prime) that no power-of-two framing shares, so a
// shifted or truncated copy hashes differently.
func payload(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	const period = 4093
	b := make([]byte, n)
	for i := range min(n, period) {
		b[i] = alphabet[(i*7+i/len(alphabet))%len(alphabet)]
	}
	for filled := period; filled < n; filled *= 2 {
		copy(b[filled:], b[:filled])
	}
	return string(b)
}
