//go:build linux

package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// connectSSE opens a go-sdk client session over HTTP+SSE through the
// gateway.
func (h *serveHarness) connectSSE(t *testing.T, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "sdk-sse-client", Version: "1"}, opts)
	// The stream's GET lives in the context Connect is given.
	cs, err := client.Connect(t.Context(), &mcp.SSEClientTransport{Endpoint: h.ts.URL + DefaultSSEPath, HTTPClient: h.client},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect over HTTP+SSE: %v", err)
	}
	return cs
}

// The go-sdk HTTP+SSE client through the pipeline to a go-sdk child, at
// 2024-11-05 and (as clients of that transport may ask) at 2025-11-25,
// whose POST streams would have ids and a priming event on Streamable
// HTTP: a call, a question the child asks its client, and a cancelled
// call that the child hears cancelled; closing the client's stream ends
// the session and its child.
func TestServeSSEWithTheGoSDK(t *testing.T) {
	for _, version := range []string{"2024-11-05", "2025-11-25"} {
		t.Run(version, func(t *testing.T) { testServeSSEWithTheGoSDK(t, version) })
	}
}

func testServeSSEWithTheGoSDK(t *testing.T, version string) {
	checkServeLeaks(t)
	is := is.New(t)
	h := newServeHarness(t, nil)
	progress := make(chan struct{}, 1)
	cs := h.connectSSE(t, version, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			select {
			case progress <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), serveTestWait)
	defer cancel()
	defer func() {
		if t.Failed() {
			t.Logf("stderr:\n%s", h.stderr)
		}
	}()
	is.Equal(cs.InitializeResult().ProtocolVersion, version)
	is.Equal(h.srv.Sessions(), 1)
	is.Equal(callText(t, ctx, cs, "echo", map[string]any{"text": "over HTTP+SSE"}), "over HTTP+SSE")
	is.Equal(callText(t, ctx, cs, "ask", nil), "hello Ada")
	pid := 0
	fmt.Sscan(callText(t, ctx, cs, "pid", nil), &pid)

	slowCtx, slowCancel := context.WithCancel(ctx)
	slowDone := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "slow"}
		params.SetProgressToken("p")
		_, err := cs.CallTool(slowCtx, params)
		slowDone <- err
	}()
	select {
	case <-progress:
	case <-ctx.Done():
		t.Fatal("no progress from the slow call")
	}
	slowCancel()
	is.True(errors.Is(<-slowDone, context.Canceled))
	is.Equal(callText(t, ctx, cs, "cancelled", nil), "yes") // the child heard the cancel

	is.NoErr(cs.Close()) // the stream closes
	is.True(transporttest.ProcessGone(t, pid, serveTestWait))
	is.True(strings.Contains(h.stderr.String(), `reason="its client closed the stream"`))
	is.Equal(h.srv.Sessions(), 0)
}

// A session that ends on the gateway's side ends its stream: the client
// reads the end of it.
func TestServeSSESessionEndEndsTheStream(t *testing.T) {
	checkServeLeaks(t)
	is := is.New(t)
	h := newServeHarness(t, nil)
	req, _ := http.NewRequest(http.MethodGet, h.ts.URL+DefaultSSEPath, nil)
	resp, err := h.client.Do(req)
	is.NoErr(err)
	defer resp.Body.Close()
	events := frame.NewSSEReader(resp.Body, 0)
	ev, err := events.Next()
	is.NoErr(err)
	is.Equal(ev.Type, "endpoint")
	is.True(strings.HasPrefix(string(ev.Data), "/message?session="))
	is.Equal(h.srv.Sessions(), 1)

	ctx, cancel := context.WithTimeout(context.Background(), serveTestWait)
	defer cancel()
	is.NoErr(h.srv.Close(ctx))
	_, err = events.Next()
	is.True(errors.Is(err, io.EOF)) // the stream ended cleanly
}

// The HTTP+SSE paths are checked, moved, and turned off.
func TestServeSSEPaths(t *testing.T) {
	cmd := []string{"server"}
	for _, tt := range []struct {
		name string
		cfg  ServeConfig
		err  string
	}{
		{"same as the endpoint", ServeConfig{Command: cmd, SSEPath: "/mcp"}, "must differ"},
		{"message path is the endpoint's", ServeConfig{Command: cmd, Path: "/x", MessagePath: "/x"}, "must differ"},
		{"relative", ServeConfig{Command: cmd, MessagePath: "message"}, "must start with /"},
		{"off", ServeConfig{Command: cmd, SSEPath: "/mcp", NoSSE: true}, ""},
		{"one path for both", ServeConfig{Command: cmd, SSEPath: "/events", MessagePath: "/events"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			_, err := NewServer(tt.cfg)
			if tt.err == "" {
				is.NoErr(err)
				return
			}
			is.True(err != nil && strings.Contains(err.Error(), tt.err)) // tt.err
		})
	}
}

func TestSSEEndpoint(t *testing.T) {
	for _, tt := range []struct{ public, path, want string }{
		{"", "/message", "/message"},
		{"https://mcp.example.com", "/message", "/message"},
		{"https://mcp.example.com/", "/message", "/message"},
		{"https://mcp.example.com/tools/", "/message", "/tools/message"},
		{"https://mcp.example.com/a b", "/m", "/a%20b/m"},
		{"", "/with space", "/with%20space"},
	} {
		t.Run(tt.public+tt.path, func(t *testing.T) {
			is := is.New(t)
			got, err := sseEndpoint(tt.public, tt.path)
			is.NoErr(err)
			is.Equal(got, tt.want)
		})
	}
}
