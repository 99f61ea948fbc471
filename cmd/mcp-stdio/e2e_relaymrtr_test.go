package main_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// TestRelayModernHostSessionServerMRTR: the go-sdk v1.8.0 client in its
// 2026-07-28 mode, over stdio through the built relay, calls the interview
// tool of a stateful go-sdk server that speaks only the session era (issue
// 12, item 8). The server elicits (a form) and samples with requests of its
// own during the call; the relay turns each into an input_required result
// for the host, whose handlers answer and whose retries carry the answers
// back, and the tool's result carries what they answered.
func TestRelayModernHostSessionServerMRTR(t *testing.T) {
	is := is.New(t)
	bin := relayBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	server := sessionEraFixture()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer srv.Close()

	ic := newInterviewClient()
	var stderr transporttest.SyncBuffer
	cmd := exec.Command(bin, "--log-level", "debug", srv.URL)
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=50")
	var wire transporttest.SyncBuffer // what the host read and wrote
	cs, err := ic.client.Connect(ctx, &mcp.LoggingTransport{
		Transport: &mcp.CommandTransport{Command: cmd, TerminateDuration: relayExitBound},
		Writer:    &wire,
	}, nil)
	if err != nil {
		t.Fatalf("connect through the relay: %v\n%s", err, stderr.String())
	}
	defer func() {
		is.NoErr(cs.Close()) // the relay exits 0 once its stdin ends
		if t.Failed() {
			t.Logf("relay stderr:\n%s", stderr.String())
		}
	}()
	is.Equal(cs.InitializeResult().ProtocolVersion, "2026-07-28")         // the relay kept the host modern
	is.Equal(cs.InitializeResult().ServerInfo.Name, "session-era-server") // the server's, from the relay's initialize
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "interview"})
	is.NoErr(err)
	is.True(!res.IsError)
	is.Equal(resultText(res), interviewAnswer)                              // the answers reached the server
	is.Equal([]int32{ic.elicited.Load(), ic.sampled.Load()}, []int32{1, 1}) // each handler once
	is.True(strings.Contains(stderr.String(), "speaking the session era to the server"))

	// The host was asked through input_required results, one a round,
	// never with a request of the server's: the go-sdk client would
	// answer one on stdio too.
	var rounds []string
	for line := range strings.Lines(wire.String()) {
		read, ok := strings.CutPrefix(strings.TrimSpace(line), "read: ")
		if !ok {
			continue
		}
		msg := gjson.Parse(read)
		is.True(!msg.Get("method").Exists() || !msg.Get("id").Exists()) // no request reached the host
		if msg.Get("result.resultType").String() == "input_required" {
			msg.Get("result.inputRequests").ForEach(func(_, in gjson.Result) bool {
				rounds = append(rounds, in.Get("method").String())
				return true
			})
		}
	}
	is.Equal(rounds, []string{"elicitation/create", "sampling/createMessage"})
}
