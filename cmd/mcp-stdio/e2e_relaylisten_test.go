package main_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// TestRelayModernHostListensToASessionEraServer: a 2026-07-28 host (the
// go-sdk client at its latest version) through the relay binary to a
// session-era server (go-sdk's stateful Streamable HTTP, which knows no
// subscriptions/listen). The host's listens — the one it opens at connect
// for tools/list_changed, and the one Subscribe opens for a resource —
// are served by the relay (issue 23, point 3): it subscribes the server
// to the resource with resources/subscribe, and the server's
// list_changed and resources/updated reach the host's handlers. When the
// host lets go of the resource, the server is unsubscribed; and no
// subscriptions/listen ever reaches the server.
func TestRelayModernHostListensToASessionEraServer(t *testing.T) {
	relayBinary(t)
	is := is.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	subscribed := make(chan string, 4)
	unsubscribed := make(chan string, 4)
	server := mcp.NewServer(&mcp.Implementation{Name: "session-era", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			subscribed <- req.Params.URI
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			unsubscribed <- req.Params.URI
			return nil
		},
	})
	server.AddResource(&mcp.Resource{URI: "file:///a", Name: "a"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///a", Text: "a"}}}, nil
	})
	var once sync.Once
	server.AddTool(&mcp.Tool{Name: "touch", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		once.Do(func() { // a new tool: tools/list_changed to every session
			server.AddTool(&mcp.Tool{Name: "bonus", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return textResult("bonus"), nil
			})
		})
		if err := server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "file:///a"}); err != nil {
			return nil, err
		}
		return textResult("touched"), nil
	})
	var mu sync.Mutex
	var methods []string
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		methods = append(methods, r.Method+" "+r.Header.Get("Mcp-Method"))
		mu.Unlock()
		inner.ServeHTTP(w, r)
	}))
	defer srv.Close()

	toolsChanged := make(chan struct{}, 16)
	updated := make(chan string, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "modern-host", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			toolsChanged <- struct{}{}
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		},
	})
	stderr := &transporttest.SyncBuffer{}
	cmd := exec.Command(relayBinary(t), "--log-level", "debug", srv.URL+"/mcp")
	cmd.Stderr = stderr
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=50")
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: relayExitBound}, nil)
	if err != nil {
		t.Fatalf("connect through the relay: %v\n%s", err, stderr)
	}
	defer func() {
		if t.Failed() {
			t.Logf("relay stderr:\n%s", stderr)
		}
	}()
	is.Equal(cs.InitializeResult().ProtocolVersion, "2026-07-28")   // the host stays at 2026-07-28
	is.True(cs.InitializeResult().Capabilities.Resources.Subscribe) // kept: the relay serves it
	acked := stderr.Watch(regexp.MustCompile(`msg="acknowledged a listen"`))
	acked.Next(t, testTimeout)                                          // the connect's listen, for tools/list_changed
	is.NoErr(cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "file:///a"})) // a listen with resourceSubscriptions
	acked.Next(t, testTimeout)
	is.Equal(waitFor(t, subscribed), "file:///a") // the server subscribed by the relay

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{}})
	is.NoErr(err)
	is.Equal(resultText(res), "touched")
	waitFor(t, toolsChanged)
	is.Equal(waitFor(t, updated), "file:///a")

	is.NoErr(cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "file:///a"})) // the host closes that listen
	is.Equal(waitFor(t, unsubscribed), "file:///a")

	start := time.Now()
	is.NoErr(cs.Close())
	is.True(time.Since(start) < relayExitBound) // the relay ended the listens and exited on its own
	is.Equal(cmd.ProcessState.ExitCode(), 0)
	mu.Lock()
	defer mu.Unlock()
	for _, m := range methods {
		is.True(!strings.HasSuffix(m, "subscriptions/listen")) // never at the server
	}
}

// waitFor returns the next value on ch, failing after testTimeout.
func waitFor[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testTimeout):
		t.Fatal("timed out")
		var zero T
		return zero
	}
}
