package main_test

import (
	"context"
	"io"
	"testing"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/cli"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// TestRelayInProcess drives cli.Relay, the code the binary runs, in this
// process over pipes, with a go-sdk client on the stdio side and a go-sdk
// Streamable HTTP server on loopback. Once the client closes the relay's
// stdin, Relay must return nil, having ended its session, and no goroutine
// it started may outlive it. (The server drops its connections first; the
// next test checks that the relay needs no such help.)
func TestRelayInProcess(t *testing.T) {
	is := is.New(t)
	srv, before := relayInProcess(t)
	srv.srv.CloseClientConnections()
	is.Equal(srv.fx.sessions(), 0) // the relay ended its session (DELETE)
	goleak.VerifyNone(t, before)
}

// TestRelayInProcessClosesConnections is TestRelayInProcess with the server
// left alone: the relay alone must leave nothing behind.
func TestRelayInProcessClosesConnections(t *testing.T) {
	_, before := relayInProcess(t)
	goleak.VerifyNone(t, before)
}

// relayInProcess runs a session through cli.Relay and returns once Relay
// has returned, with the server and the goroutines that ran before the
// relay started.
func relayInProcess(t *testing.T) (*testServer, goleak.Option) {
	is := is.New(t)
	if testing.Short() {
		t.Skip("end-to-end over loopback")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := startServer(t, streamableServer, "")
	before := goleak.IgnoreCurrent()

	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	var stderr transporttest.SyncBuffer
	defer func() {
		if t.Failed() {
			t.Logf("relay stderr:\n%s", &stderr)
		}
	}()
	relayDone := make(chan error, 1)
	go func() {
		noEnv := func(string) string { return "" }
		err := cli.Relay(ctx, []string{"--log-level", "debug", srv.url}, noEnv, stdinR, stdoutW, &stderr, cli.Options{Version: "test"})
		_ = stdoutW.Close() // the client's reader sees the end
		relayDone <- err
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-client", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: stdoutR, Writer: stdinW}, &mcp.ClientSessionOptions{ProtocolVersion: clientVersion})
	is.NoErr(err)

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "in process"}})
	is.NoErr(err)
	is.Equal(resultText(res), "in process")
	list, err := cs.ListTools(ctx, nil)
	is.NoErr(err)
	is.Equal(len(list.Tools), fixtureTools) // pages merged

	is.NoErr(cs.Close()) // closes the relay's stdin
	is.NoErr(<-relayDone)
	return srv, before
}
