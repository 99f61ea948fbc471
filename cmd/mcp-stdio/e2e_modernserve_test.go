package main_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// Serve's 2026-07-28 face in front of a session-era child (issue 12, item
// 6): a 2026-07-28 client through serve to a stdio server that asks its
// client questions the session era's way, with server→client requests.
// Serve must turn each of them into an input_required result (multi
// round-trip requests, MRTR) and the client's retry back into the answer
// the child waits for.

// sessionEraServer is the program of this test binary that runs
// sessionEraFixture on stdio: a session-era child for serve.
const sessionEraServer = "session-era-server"

// sessionEraVersions are the versions the session-era fixture serves: the
// session era's, as a server written before 2026-07-28 knows them.
var sessionEraVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// sessionEraFixture returns the go-sdk v1.8.0 server narrowed to the
// session era (ServerOptions.SupportedProtocolVersions): it refuses every
// request that carries a 2026-07-28 _meta version with -32022 naming only
// session-era versions, so a probe finds no 2026-07-28 in it, and it may
// send its client requests (go-sdk forbids them only on a 2026-07-28
// session). Its tool:
//
//   - interview: elicits a name with a form (elicitation/create), then
//     samples a greeting for it (sampling/createMessage), and returns
//     "<action>:<name>|<model>:<sampled text>".
func sessionEraFixture() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "session-era-server", Version: "1"},
		&mcp.ServerOptions{SupportedProtocolVersions: sessionEraVersions})
	s.AddTool(&mcp.Tool{Name: "interview", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			asked, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
				Mode:    "form",
				Message: "your name?",
				RequestedSchema: map[string]any{
					"type":       "object",
					"properties": map[string]any{"name": map[string]any{"type": "string"}},
					"required":   []string{"name"},
				},
			})
			if err != nil {
				return nil, fmt.Errorf("elicitation: %w", err)
			}
			name, _ := asked.Content["name"].(string)
			sampled, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
				MaxTokens: 50,
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "greet " + name}}},
			})
			if err != nil {
				return nil, fmt.Errorf("sampling: %w", err)
			}
			text, _ := sampled.Content.(*mcp.TextContent)
			if text == nil {
				return nil, fmt.Errorf("sampling answered %T, want text", sampled.Content)
			}
			return textResult(fmt.Sprintf("%s:%s|%s:%s", asked.Action, name, sampled.Model, text.Text)), nil
		})
	return s
}

// runSessionEraServer is the test binary run as sessionEraServer: the
// fixture on stdin and stdout until stdin ends.
func runSessionEraServer([]string) int {
	if err := sessionEraFixture().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// interviewClient is a go-sdk v1.8.0 client that answers the interview:
// "Ada" to the form, "hello Ada" from model "test-model" to sampling. It
// counts the calls of each handler.
type interviewClient struct {
	client            *mcp.Client
	elicited, sampled atomic.Int32
}

func newInterviewClient() *interviewClient {
	ic := &interviewClient{}
	ic.client = mcp.NewClient(&mcp.Implementation{Name: "interviewer", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			ic.elicited.Add(1)
			if req.Params.Message != "your name?" {
				return nil, fmt.Errorf("unexpected question %q", req.Params.Message)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			ic.sampled.Add(1)
			prompt := ""
			if len(req.Params.Messages) == 1 {
				if tc, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
					prompt = tc.Text
				}
			}
			if prompt != "greet Ada" {
				return nil, fmt.Errorf("unexpected prompt %q", prompt)
			}
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "hello Ada"}}, nil
		},
	})
	return ic
}

// interviewAnswer is the interview tool's result for interviewClient.
const interviewAnswer = "accept:Ada|test-model:hello Ada"

// TestSessionEraFixtureSpeaksOnlyTheSessionEra checks the fixture itself, without
// serve: a go-sdk client in its 2026-07-28 mode probes it, is refused, and
// falls back to the session era; the interview then reaches the client's
// handlers as server→client requests.
func TestSessionEraFixtureSpeaksOnlyTheSessionEra(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ic := newInterviewClient()
	cs, err := ic.client.Connect(ctx, &mcp.CommandTransport{Command: transporttest.ArgCommand(sessionEraServer)}, nil)
	is.NoErr(err)
	defer cs.Close()
	is.Equal(cs.InitializeResult().ProtocolVersion, "2025-11-25") // the probe found no 2026-07-28
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "interview"})
	is.NoErr(err)
	is.Equal(resultText(res), interviewAnswer)
	is.Equal([]int32{ic.elicited.Load(), ic.sampled.Load()}, []int32{1, 1})
}

// TestServeModernClientSessionEraChildMRTR: the go-sdk v1.8.0 client in its
// 2026-07-28 mode (stateless Streamable HTTP: server/discover, _meta on
// every request) calls the interview through the built mcp-stdio serve,
// whose child is the session-era fixture. The child's elicitation/create
// and sampling/createMessage come to the client as input_required results
// (it has no other way to receive them), its handlers answer, its retries
// carry the answers back, and the tool's result carries what they
// answered.
func TestServeModernClientSessionEraChildMRTR(t *testing.T) {
	is := is.New(t)
	bin := relayBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	serve := startServeOf(t, bin, transporttest.ArgCommand(sessionEraServer).Args...)

	ic := newInterviewClient()
	cs, err := ic.client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: serve.url}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, serve.log.tail(40))
	}
	defer cs.Close()
	is.Equal(cs.InitializeResult().ProtocolVersion, "2026-07-28")         // served statelessly by serve
	is.Equal(cs.InitializeResult().ServerInfo.Name, "session-era-server") // the child's identity, from its initialize
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "interview"})
	if err != nil {
		t.Fatalf("interview: %v\n%s", err, serve.log.tail(40))
	}
	is.True(!res.IsError)
	is.Equal(resultText(res), interviewAnswer)                              // the answers reached the child
	is.Equal([]int32{ic.elicited.Load(), ic.sampled.Load()}, []int32{1, 1}) // each handler once
}

// startServeOf runs the built binary as `mcp-stdio serve` publishing the
// child command line child, and returns once it listens. It is stopped at
// the end of the test.
func startServeOf(tb testing.TB, bin string, child ...string) *gatewayProc {
	tb.Helper()
	return startServeWith(tb, bin, nil, child...)
}

// startServeWith is startServeOf with serve's flags flags.
func startServeWith(tb testing.TB, bin string, flags []string, child ...string) *gatewayProc {
	tb.Helper()
	g := &gatewayProc{name: gwServe, exited: make(chan struct{}), log: &confLog{}}
	urls := g.log.Watch(confServeURL).C
	args := slices.Concat([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug"}, flags, []string{"--"}, child)
	g.cmd = exec.Command(bin, args...)
	g.cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	g.cmd.Stdout = g.log
	g.cmd.Stderr = g.log
	g.cmd.WaitDelay = gatewayStopWait
	if err := g.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		_ = g.cmd.Wait()
		close(g.exited)
	}()
	tb.Cleanup(func() {
		g.stop(tb)
		if tb.Failed() {
			tb.Logf("serve's log:\n%s", g.log.tail(60))
		}
	})
	select {
	case m := <-urls:
		g.url = m[1]
	case <-g.exited:
		tb.Fatalf("serve exited before listening:\n%s", g.log.tail(30))
	case <-time.After(gatewayStartWait):
		tb.Fatalf("serve printed no URL within %v:\n%s", gatewayStartWait, g.log.tail(30))
	}
	return g
}
