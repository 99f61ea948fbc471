//go:build linux

package main_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// serve's HTTP+SSE face (MCP 2024-11-05), end to end: the built binary
// publishing the bundled example server, reached by the official Go SDK's
// HTTP+SSE client directly, and by the relay binary with --transport sse.

// sseURL returns the URL of the HTTP+SSE stream of a serve whose
// Streamable HTTP endpoint is at the default path.
func (g *servedGateway) sseURL() string { return strings.TrimSuffix(g.url, "/mcp") + "/sse" }

// sseClient is a go-sdk client for the example server: it answers the ask
// tool's question with its own name, and signals progress.
func sseClient(name string, progressed chan<- struct{}) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": name + " heard: " + req.Params.Message}}, nil
		},
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			select {
			case progressed <- struct{}{}:
			default:
			}
		},
	})
}

// exerciseExampleServer runs the scenario both tests share on a session
// with the example server, cs, whose client is name: tools/list and
// tools/call, a question asked by the server (elicitation) and answered,
// a slow call cancelled once it runs, and then a call after it, and
// (unless big is 0) messages of big bytes each way.
func exerciseExampleServer(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, progressed <-chan struct{}, big int) {
	is := is.New(t)
	tools, err := cs.ListTools(ctx, nil)
	is.NoErr(err)
	is.True(len(tools.Tools) >= 5) // echo, add, slow, bytes, ask, toggle
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "through HTTP+SSE"}})
	is.NoErr(err)
	is.Equal(res.Content[0].(*mcp.TextContent).Text, "through HTTP+SSE")

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"question": "who are you?"}})
	is.NoErr(err)
	is.Equal(res.Content[0].(*mcp.TextContent).Text, "The user answered: "+name+" heard: who are you?")

	slowCtx, slowCancel := context.WithCancel(ctx)
	defer slowCancel()
	slowDone := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 60, "steps": 600}}
		params.SetProgressToken("slow-1")
		_, err := cs.CallTool(slowCtx, params)
		slowDone <- err
	}()
	select {
	case <-progressed: // the call runs in the child
	case <-ctx.Done():
		t.Fatal("no progress from the slow call")
	}
	slowCancel()
	select {
	case err := <-slowDone:
		is.True(errors.Is(err, context.Canceled)) // the cancelled call
	case <-ctx.Done():
		t.Fatal("the cancelled call did not end")
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after the cancel"}})
	is.NoErr(err)
	is.Equal(res.Content[0].(*mcp.TextContent).Text, "after the cancel") // the session goes on

	if big == 0 {
		return
	}
	text := payload(big)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
	is.NoErr(err)
	got := res.Content[0].(*mcp.TextContent).Text
	is.Equal(sha256.Sum256([]byte(got)), sha256.Sum256([]byte(text))) // big to the server and back
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "bytes", Arguments: map[string]any{"n": big}})
	is.NoErr(err)
	is.Equal(len(res.Content[0].(*mcp.TextContent).Text), big) // big from the server
}

// sseTestTimeout bounds each of these tests: 16 MiB through go-sdk's
// codecs under the race detector, on a machine shared with other tests,
// takes minutes.
const sseTestTimeout = 5 * time.Minute

// The Go SDK's HTTP+SSE client against serve's HTTP+SSE face: two clients
// at once, each with its session and child (each asked its own question
// by its own child); a cancelled call; 16 MiB each way (on one of them);
// and closing a client's stream ends its session and its child.
func TestServeSSEWithGoSDKClient(t *testing.T) {
	g := startServe(t)
	started := g.stderr.Watch(serverLine)
	ctx, cancel := context.WithTimeout(context.Background(), sseTestTimeout)
	defer cancel()
	httpClient := &http.Client{Transport: &http.Transport{}}
	defer httpClient.CloseIdleConnections()

	connect := func(name string, progressed chan struct{}) *mcp.ClientSession {
		t.Helper()
		transport := &mcp.SSEClientTransport{Endpoint: g.sseURL(), HTTPClient: httpClient, MaxEventSize: 32 << 20}
		cs, err := sseClient(name, progressed).Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: "2024-11-05"})
		if err != nil {
			t.Fatalf("connect over HTTP+SSE: %v", err)
		}
		return cs
	}
	adaProgress, bobProgress := make(chan struct{}, 1), make(chan struct{}, 1)
	ada := connect("ada", adaProgress)
	adaProcs := serverProcs(t, started)
	bob := connect("bob", bobProgress)
	bobProcs := serverProcs(t, started)
	checkRunning(t, adaProcs)
	checkRunning(t, bobProcs)
	is := is.New(t)
	is.Equal(ada.InitializeResult().ProtocolVersion, "2024-11-05")

	t.Run("clients at once", func(t *testing.T) {
		t.Run("ada", func(t *testing.T) {
			t.Parallel()
			exerciseExampleServer(t, ctx, ada, "ada", adaProgress, 0)
		})
		t.Run("bob", func(t *testing.T) {
			t.Parallel()
			exerciseExampleServer(t, ctx, bob, "bob", bobProgress, 16<<20)
		})
	})
	if t.Failed() {
		return
	}

	// Closing the client closes its stream: its session and child end,
	// the other's go on.
	is.NoErr(ada.Close())
	checkGone(t, adaProcs, "after its client closed its stream")
	res, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still here"}})
	is.NoErr(err)
	is.Equal(res.Content[0].(*mcp.TextContent).Text, "still here")
	is.NoErr(bob.Close())
	checkGone(t, bobProcs, "after its client closed its stream")
	is.True(strings.Contains(g.stderr.String(), `reason="its client closed the stream"`))

	is.NoErr(g.cmd.Process.Signal(os.Interrupt))
	is.NoErr(g.cmd.Wait()) // exit 0
}

// The relay binary with --transport sse against serve's HTTP+SSE face,
// the Go SDK client on the relay's stdio: the same scenario (the big
// messages 64 KiB under go-sdk's 16 MiB stdio line limit), and the
// relay's exit on stdin EOF closes its stream, which ends the session and
// its child.
func TestServeSSEThroughTheRelay(t *testing.T) {
	g := startServe(t)
	started := g.stderr.Watch(serverLine)
	ctx, cancel := context.WithTimeout(context.Background(), sseTestTimeout)
	defer cancel()

	progressed := make(chan struct{}, 1)
	relay := exec.Command(relayBinary(t), "--log-level", "debug", "--transport", "sse", g.sseURL())
	stderr := &transporttest.SyncBuffer{}
	relay.Stderr = stderr
	relay.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=50")
	cs, err := sseClient("ada", progressed).Connect(ctx, &mcp.CommandTransport{Command: relay, TerminateDuration: relayExitBound},
		&mcp.ClientSessionOptions{ProtocolVersion: clientVersion})
	if err != nil {
		if relay.Process != nil {
			_ = relay.Process.Kill()
			_ = relay.Wait()
		}
		t.Fatalf("connect through the relay: %v\nrelay stderr:\n%s", err, stderr)
	}
	defer func() {
		if t.Failed() {
			t.Logf("relay stderr:\n%s", stderr)
		}
	}()
	procs := serverProcs(t, started)
	checkRunning(t, procs)

	exerciseExampleServer(t, ctx, cs, "ada", progressed, 16<<20-64<<10)

	is := is.New(t)
	start := time.Now()
	is.NoErr(cs.Close()) // stdin EOF: the relay exits by itself
	is.True(time.Since(start) < relayExitBound)
	is.Equal(relay.ProcessState.ExitCode(), 0)
	checkGone(t, procs, "after the relay's stream closed")
	is.True(strings.Contains(g.stderr.String(), `reason="its client closed the stream"`))
}

// --sse-path and --message-path move the HTTP+SSE paths; supergateway's
// --ssePath and --messagePath are the same flags.
func TestServeSSEPathFlags(t *testing.T) {
	for _, flags := range [][2]string{{"--sse-path", "--message-path"}, {"--ssePath", "--messagePath"}} {
		t.Run(flags[0], func(t *testing.T) {
			is := is.New(t)
			g := startServe(t, flags[0], "/events", flags[1], "/msg")
			base := strings.TrimSuffix(g.url, "/mcp")
			ctx, cancel := context.WithTimeout(context.Background(), serveProcWait)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/events", nil)
			resp, err := g.client.Do(req)
			is.NoErr(err)
			defer resp.Body.Close()
			is.Equal(resp.StatusCode, http.StatusOK)
			ev, err := frame.NewSSEReader(resp.Body, 0).Next()
			is.NoErr(err)
			is.Equal(ev.Type, "endpoint")
			is.True(strings.HasPrefix(string(ev.Data), "/msg?session="))
			post, err := g.client.Post(base+string(ev.Data), "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
			is.NoErr(err)
			post.Body.Close()
			is.Equal(post.StatusCode, http.StatusAccepted)
			old, err := g.client.Get(base + "/sse")
			is.NoErr(err)
			old.Body.Close()
			is.Equal(old.StatusCode, http.StatusNotFound) // the default path is not served
		})
	}
}
