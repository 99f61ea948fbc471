package main_test

import (
	"context"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The 2026-07-28 end-to-end tests (issue 11) run the relay binary between
// the go-sdk v1.8.0 client and a go-sdk server in its stateless mode, which
// speaks MCP 2026-07-28: the client as a session-era host (it asks for
// 2025-11-25 and sends initialize), and as a 2026-07-28 host (it sends
// server/discover). Against the stateful server the probe falls back and
// TestRelayE2E runs unchanged.

// TestRelayLegacyHostModernServer: the relay probes, finds 2026-07-28,
// answers the host's handshake itself and stamps every request with
// _meta and the routing headers; the stateless server, which checks them
// all, answers.
func TestRelayLegacyHostModernServer(t *testing.T) {
	relayBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := startServer(t, modernServer, "")
	e := &e2e{ctx: ctx, srv: srv, relay: startRelay(t, ctx, srv.url)}

	t.Run("initialize", func(t *testing.T) {
		is := is.New(t)
		init := e.relay.cs.InitializeResult()
		is.Equal(init.ProtocolVersion, clientVersion)   // the host's version, echoed
		is.Equal(init.ServerInfo.Name, "e2e-server")    // from the DiscoverResult's _meta
		is.True(init.Capabilities.Tools != nil)         // the server's capabilities
		is.Equal(e.srv.fx.initializes.Load(), int32(0)) // the server never saw an initialize
		is.NoErr(e.relay.cs.Ping(e.ctx, nil))           // answered by the relay
		is.True(strings.Contains(e.relay.stderr.String(), "server speaks MCP 2026-07-28"))
	})
	t.Run("paginated tools/list", func(t *testing.T) { testPaginatedList(t, relayCase{}, e) })
	t.Run("tools/call", func(t *testing.T) { testToolsCall(t, relayCase{}, e) })
	t.Run("progress notifications", func(t *testing.T) { testProgress(t, relayCase{}, e) })
	t.Run("cancelled slow call", func(t *testing.T) { testCancel(t, relayCase{}, e) })
	t.Run("16 MiB each way", func(t *testing.T) { testBigMessages(t, relayCase{}, e) })
	t.Run("no session", func(t *testing.T) {
		is := is.New(t)
		e.relay.close(t)
		reqs := e.srv.requests()
		is.True(len(reqs) > 0)
		is.Equal(reqs[0], "POST server/discover session=") // the probe first
		for _, r := range reqs {
			is.True(strings.HasPrefix(r, "POST ")) // no GET stream, no DELETE
			is.True(strings.HasSuffix(r, " session="))
			is.True(!strings.Contains(r, "initialize")) // nor initialize, initialized
			is.True(!strings.Contains(r, "ping"))
			is.True(!strings.Contains(r, "notifications/cancelled")) // a cancel closes the stream
		}
	})
}

// TestRelayModernHostModernServer: a host that speaks 2026-07-28 itself
// sends server/discover and _meta of its own; the relay passes its lines
// through, deriving only the routing headers.
func TestRelayModernHostModernServer(t *testing.T) {
	relayBinary(t)
	is := is.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := startServer(t, modernServer, "")
	rc := startRelayAt(t, ctx, "", srv.url)
	e := &e2e{ctx: ctx, srv: srv, relay: rc}

	init := rc.cs.InitializeResult()
	is.Equal(init.ProtocolVersion, "2026-07-28") // the host's own discovery went through
	is.Equal(init.ServerInfo.Name, "e2e-server")
	testToolsCall(t, relayCase{}, e)
	testPaginatedList(t, relayCase{}, e)
	res, err := e.call("echo", map[string]any{"text": "modern"})
	is.NoErr(err)
	is.Equal(resultText(res), "modern")
	rc.close(t)
	discovers := 0
	for _, r := range srv.requests() {
		is.True(strings.HasPrefix(r, "POST ")) // no GET, no DELETE
		if strings.HasPrefix(r, "POST server/discover ") {
			discovers++
		}
	}
	is.Equal(discovers, 2) // the relay's probe, then the host's own
	is.Equal(srv.fx.initializes.Load(), int32(0))
}

// TestRelayStatefulServerFallsBack: the go-sdk stateful server answers
// the probe's server/discover with no 2026-07-28 version, so the relay
// speaks the session era: the handshake reaches the server and a session
// is kept, as without a probe.
func TestRelayStatefulServerFallsBack(t *testing.T) {
	is := is.New(t)
	e := setup(t, relayCases[0])
	testInitialize(t, relayCases[0], e)
	testToolsCall(t, relayCases[0], e)
	is.True(strings.Contains(e.relay.stderr.String(), "server speaks the session era"))
	reqs := e.srv.requests()
	is.Equal(reqs[0], "POST server/discover session=")
	is.True(strings.HasPrefix(reqs[1], "POST  session=")) // initialize, as a session-era client sends it
}

// TestRelayEraLegacyFlag: --era legacy sends no probe.
func TestRelayEraLegacyFlag(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := startServer(t, streamableServer, "")
	rc := startRelay(t, ctx, srv.url, "--era", "legacy")
	_, err := rc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	is.NoErr(err)
	for _, r := range srv.requests() {
		is.True(!strings.Contains(r, "server/discover")) // no probe
	}
}
