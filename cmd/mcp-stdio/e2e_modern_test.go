package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// The 2026-07-28 end-to-end tests (issue 11) run the relay binary between
// the go-sdk v1.8.0 client and a go-sdk server in its stateless mode, which
// speaks MCP 2026-07-28 and, statelessly, the session era too: the client
// as a session-era host (it asks for 2025-11-25 and sends initialize), and
// as a 2026-07-28 host (it sends server/discover). Under --era auto a
// session-era host talks the session era to such a server (issue 23,
// TestRelaySessionEraHostDualEraServer); the bridge tests force it with
// --era modern, the flag for a stateless server behind a balancer. Against
// the stateful server TestRelayE2E runs unchanged, with no probe.

// TestRelaySessionEraHostModernServer: with --era modern the relay
// probes, finds 2026-07-28, answers the host's handshake itself and stamps
// every request with _meta and the routing headers; the stateless server,
// which checks them all, answers.
func TestRelaySessionEraHostModernServer(t *testing.T) {
	relayBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := startServer(t, modernServer, "")
	e := &e2e{ctx: ctx, srv: srv, relay: startRelay(t, ctx, srv.url, "--era", "modern")}

	t.Run("initialize", func(t *testing.T) {
		is := is.New(t)
		init := e.relay.cs.InitializeResult()
		is.Equal(init.ProtocolVersion, clientVersion)   // the host's version, echoed
		is.Equal(init.ServerInfo.Name, "e2e-server")    // from the DiscoverResult's _meta
		is.True(init.Capabilities.Tools != nil)         // the server's capabilities
		is.Equal(e.srv.fx.initializes.Load(), int32(0)) // the server never saw an initialize
		is.NoErr(e.relay.cs.Ping(e.ctx, nil))           // answered by the relay
	})
	t.Run("paginated tools/list", func(t *testing.T) { testPaginatedList(t, relayCase{}, e) })
	t.Run("tools/call", func(t *testing.T) { testToolsCall(t, relayCase{}, e) })
	t.Run("progress notifications", func(t *testing.T) { testProgress(t, relayCase{}, e) })
	t.Run("cancelled slow call", func(t *testing.T) { testCancel(t, relayCase{}, e) })
	t.Run("16 MiB each way", func(t *testing.T) { testBigMessages(t, relayCase{}, e) })
	t.Run("no session", func(t *testing.T) {
		is := is.New(t)
		e.relay.close(t)
		is.True(strings.Contains(e.relay.stderr.String(), "speaking MCP 2026-07-28 to the server")) // read once the relay ended
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
// the session-era host's initialize, so the relay speaks the session era
// without asking anything else: the handshake reaches the server and a
// session is kept, as with --era session.
func TestRelayStatefulServerFallsBack(t *testing.T) {
	is := is.New(t)
	e := setup(t, relayCases[0])
	testInitialize(t, relayCases[0], e)
	testToolsCall(t, relayCases[0], e)
	e.relay.close(t)
	is.True(strings.Contains(e.relay.stderr.String(), "speaking the session era to the server"))
	reqs := e.srv.requests()
	is.True(strings.HasPrefix(reqs[0], "POST  session=")) // initialize, as a session-era client sends it
	for _, r := range reqs {
		is.True(!strings.Contains(r, "server/discover")) // no probe
	}
}

// TestRelaySessionEraHostDualEraServer: under --era auto a session-era
// host talks the session era to the stateless go-sdk server, which speaks
// both eras (issue 23): its initialize reaches the server, nothing is
// probed, and the host's calls run as the session era's.
func TestRelaySessionEraHostDualEraServer(t *testing.T) {
	relayBinary(t)
	is := is.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := startServer(t, modernServer, "")
	e := &e2e{ctx: ctx, srv: srv, relay: startRelay(t, ctx, srv.url)}
	init := e.relay.cs.InitializeResult()
	is.Equal(init.ProtocolVersion, clientVersion) // the server's answer, not the relay's
	is.Equal(init.ServerInfo.Name, "e2e-server")
	testToolsCall(t, relayCase{}, e)
	e.relay.close(t)
	is.Equal(srv.fx.initializes.Load(), int32(1)) // the host's own
	for _, r := range srv.requests() {
		is.True(!strings.Contains(r, "server/discover")) // no probe
	}
	is.True(strings.Contains(e.relay.stderr.String(), "the host speaks the session era, and the server answered its initialize"))
}

// TestRelayEraSessionFlag: --era session sends no probe.
func TestRelayEraSessionFlag(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := startServer(t, streamableServer, "")
	rc := startRelay(t, ctx, srv.url, "--era", "session")
	_, err := rc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	is.NoErr(err)
	for _, r := range srv.requests() {
		is.True(!strings.Contains(r, "server/discover")) // no probe
	}
}

// The tests below use a small stateless go-sdk server of their own
// (newFeatureServer), with the 2026-07-28 features the relay bridges:
// a tool that asks for input by MRTR, a tool with an x-mcp-header
// annotation, and change notifications on subscriptions/listen.

// featureServer is a stateless go-sdk server with probes the tests read.
type featureServer struct {
	*testServer
	// acked receives each notifications/subscriptions/acknowledged the
	// server sends: once it is sent, the listen is registered and a change
	// reaches it.
	acked chan struct{}

	mu sync.Mutex
	// paramHeaders lists, per tools/call request, its Mcp-Param-* headers
	// as "Name=value" joined by ",", in the order the requests came.
	paramHeaders []string
}

// calls returns the Mcp-Param-* headers of the tools/call requests so far.
func (fs *featureServer) calls() []string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]string(nil), fs.paramHeaders...)
}

// regionTool is a tool whose "where" argument is mirrored as the header
// Mcp-Param-{header}.
func regionTool(header string) *mcp.Tool {
	return &mcp.Tool{Name: "regional", InputSchema: json.RawMessage(`{"type":"object","properties":{"where":{"type":"string","x-mcp-header":"` + header + `"}},"required":["where"]}`)}
}

// regionHandler returns "where:<where>".
func regionHandler(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return textResult("where:" + gjson.GetBytes(req.Params.Arguments, "where").String()), nil
}

// startFeatureServer serves, statelessly on loopback, a go-sdk server
// with these tools:
//
//   - ask-mrtr: without input responses it answers input_required with an
//     elicitation "your name?" under the key "name" and the request state
//     "state-1"; on the retry it returns "<action>:<name>:<state>".
//   - regional {where}: returns "where:<where>"; "where" is annotated
//     x-mcp-header "Region", which the server checks against
//     Mcp-Param-Region.
//
// listChanged false keeps the server from sending tools/list_changed.
func startFeatureServer(t *testing.T, listChanged bool) *featureServer {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "e2e-features", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: listChanged}},
	})
	fs := &featureServer{acked: make(chan struct{}, 16)}
	s.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "notifications/subscriptions/acknowledged" {
				select {
				case fs.acked <- struct{}{}:
				default:
				}
			}
			return res, err
		}
	})
	s.AddTool(&mcp.Tool{Name: "ask-mrtr", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if answer, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult); ok {
				return textResult(fmt.Sprintf("%s:%v:%s", answer.Action, answer.Content["name"], req.Params.RequestState)), nil
			}
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{
					Message: "your name?",
					RequestedSchema: map[string]any{
						"type":       "object",
						"properties": map[string]any{"name": map[string]any{"type": "string"}},
					},
				}},
				RequestState: "state-1",
			}, nil
		})
	s.AddTool(regionTool("Region"), regionHandler)

	ts := &testServer{fx: &fixture{server: s}, streamUp: make(chan struct{}, 16), remotes: make(map[string]map[string]bool)}
	inner := modernServer.handler(s)
	ts.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.sawRequest(r)
		if r.Header.Get("Mcp-Method") == "tools/call" {
			var hs []string
			for name, vs := range r.Header {
				if strings.HasPrefix(name, "Mcp-Param-") {
					hs = append(hs, name+"="+strings.Join(vs, ";"))
				}
			}
			sort.Strings(hs)
			fs.mu.Lock()
			fs.paramHeaders = append(fs.paramHeaders, strings.Join(hs, ","))
			fs.mu.Unlock()
		}
		inner.ServeHTTP(w, r)
	}))
	ts.url = ts.srv.URL + "/mcp"
	t.Cleanup(ts.stop)
	fs.testServer = ts
	return fs
}

// TestRelayModernFeatures runs a session-era host (2025-11-25) through the
// relay, bridged with --era modern, against the 2026-07-28 features of a
// stateless go-sdk server.
func TestRelayModernFeatures(t *testing.T) {
	relayBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	fs := startFeatureServer(t, true)
	rc := startRelay(t, ctx, fs.url, "--era", "modern")
	call := func(name string, args map[string]any) (*mcp.CallToolResult, error) {
		return rc.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	}

	// The MRTR bridge turns the server's input_required into an
	// elicitation/create the host answers, and retries the call with the
	// answer and the request state.
	t.Run("elicitation by MRTR", func(t *testing.T) {
		is := is.New(t)
		res, err := call("ask-mrtr", nil)
		is.NoErr(err)
		is.True(!res.IsError)
		is.Equal(resultText(res), "accept:Ada, asked your name?:state-1")
	})

	// Once the tools are listed, the relay mirrors the annotated argument
	// into Mcp-Param-Region, which the server checks.
	t.Run("x-mcp-header", func(t *testing.T) {
		is := is.New(t)
		_, err := rc.cs.ListTools(ctx, nil)
		is.NoErr(err)
		before := len(fs.calls())
		res, err := call("regional", map[string]any{"where": "eu-west"})
		is.NoErr(err)
		is.True(!res.IsError)
		is.Equal(resultText(res), "where:eu-west")
		is.Equal(fs.calls()[before:], []string{"Mcp-Param-Region=eu-west"}) // one request, with the header
	})

	// A tool added while the host is connected reaches it as
	// notifications/tools/list_changed through the relay's listen.
	t.Run("list change through the listen bridge", func(t *testing.T) {
		is := is.New(t)
		select {
		case <-fs.acked:
		case <-ctx.Done():
			t.Fatal("the relay's subscriptions/listen was never acknowledged")
		}
		fs.fx.server.AddTool(&mcp.Tool{Name: "late", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return textResult("late"), nil
			})
		select {
		case <-rc.toolsChanged:
		case <-ctx.Done():
			t.Fatal("notifications/tools/list_changed never arrived")
		}
		res, err := call("late", nil)
		is.NoErr(err)
		is.Equal(resultText(res), "late")
	})

	// The annotation changes and the server says so: the call made after
	// the notification carries the new header.
	t.Run("x-mcp-header changed, notified", func(t *testing.T) {
		is := is.New(t)
		_, err := rc.cs.ListTools(ctx, nil)
		is.NoErr(err)
		fs.fx.server.RemoveTools("regional")
		fs.fx.server.AddTool(regionTool("Zone"), regionHandler)
		select {
		case <-rc.toolsChanged:
		case <-ctx.Done():
			t.Fatal("notifications/tools/list_changed never arrived")
		}
		res, err := call("regional", map[string]any{"where": "ap-south"})
		is.NoErr(err)
		is.True(!res.IsError)
		is.Equal(resultText(res), "where:ap-south")
		calls := fs.calls()
		is.Equal(calls[len(calls)-1], "Mcp-Param-Zone=ap-south") // the last attempt had the new header
	})
}

// TestRelayModernParamHeaderSelfHeal: the server changes a tool's
// x-mcp-header annotation after the host listed the tools, and sends no
// notification (it does not advertise tools listChanged). The relay's
// first attempt carries the old header, the server refuses it with
// -32020, and the relay lists the tools again and retries with the new
// header; the host sees only the result.
func TestRelayModernParamHeaderSelfHeal(t *testing.T) {
	relayBinary(t)
	is := is.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	fs := startFeatureServer(t, false)
	rc := startRelay(t, ctx, fs.url, "--era", "modern")

	_, err := rc.cs.ListTools(ctx, nil)
	is.NoErr(err)
	fs.fx.server.RemoveTools("regional")
	fs.fx.server.AddTool(regionTool("Zone"), regionHandler)
	res, err := rc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "regional", Arguments: map[string]any{"where": "us-east"}})
	is.NoErr(err)
	is.True(!res.IsError)
	is.Equal(resultText(res), "where:us-east")
	is.Equal(fs.calls(), []string{"Mcp-Param-Region=us-east", "Mcp-Param-Zone=us-east"}) // refused, then healed
	lists := 0
	for _, r := range fs.requests() {
		if strings.HasPrefix(r, "POST tools/list ") {
			lists++
		}
	}
	is.Equal(lists, 2) // the host's, then the relay's own after the refusal
	is.True(strings.Contains(rc.stderr.String(), "refused a tool call's Mcp-Param headers (-32020)"))
}

// TestRelayModernHostFeatures: a 2026-07-28 host (go-sdk with its latest
// version) through the relay: it answers input_required itself, and the
// relay, the HTTP client, mirrors the x-mcp-header argument it cannot.
func TestRelayModernHostFeatures(t *testing.T) {
	relayBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	fs := startFeatureServer(t, true)
	rc := startRelayAt(t, ctx, "", fs.url)

	t.Run("elicitation by MRTR", func(t *testing.T) {
		is := is.New(t)
		res, err := rc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask-mrtr"})
		is.NoErr(err)
		is.Equal(resultText(res), "accept:Ada, asked your name?:state-1")
	})
	t.Run("x-mcp-header", func(t *testing.T) {
		is := is.New(t)
		_, err := rc.cs.ListTools(ctx, nil)
		is.NoErr(err)
		before := len(fs.calls())
		res, err := rc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "regional", Arguments: map[string]any{"where": "eu-north"}})
		is.NoErr(err)
		is.True(!res.IsError)
		is.Equal(resultText(res), "where:eu-north")
		is.Equal(fs.calls()[before:], []string{"Mcp-Param-Region=eu-north"})
	})
}

// TestRelayModernHostSessionServer: a 2026-07-28 host (go-sdk's latest
// version, which sends server/discover and no initialize) through the
// relay to a session-era server (go-sdk's stateful Streamable HTTP). The
// probe finds the session era; the relay initializes the server itself,
// answers the host's server/discover from that initialize (so the host
// stays at 2026-07-28 instead of falling back), strips the
// io.modelcontextprotocol/* keys off its requests and stamps the results.
func TestRelayModernHostSessionServer(t *testing.T) {
	relayBinary(t)
	is := is.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := startServer(t, streamableServer, "")
	rc := startRelayAt(t, ctx, "", srv.url)
	e := &e2e{ctx: ctx, srv: srv, relay: rc}

	init := rc.cs.InitializeResult()
	is.Equal(init.ProtocolVersion, "2026-07-28") // the relay's discover kept the host modern
	is.Equal(init.ServerInfo.Name, "e2e-server") // the server's, from its initialize
	is.True(init.Capabilities.Tools != nil)
	// The stateful server refuses a request that carries the 2026-07-28
	// _meta version (-32022): these pass because the relay strips it.
	testPaginatedList(t, relayCase{}, e)
	testToolsCall(t, relayCase{}, e)
	testProgress(t, relayCase{}, e)
	is.Equal(srv.fx.initializes.Load(), int32(1)) // the relay's own, once
	rc.close(t)

	reqs := srv.requests()
	is.Equal(reqs[0], "POST server/discover session=")    // the relay's probe
	is.True(strings.HasPrefix(reqs[1], "POST  session=")) // its initialize, session-era style
	discovers := 0
	for _, r := range reqs {
		if strings.HasPrefix(r, "POST server/discover ") {
			discovers++
		}
	}
	is.Equal(discovers, 1) // the host's discover never reached the server
	is.True(strings.Contains(rc.stderr.String(), "speaking the session era to the server"))
	is.True(strings.Contains(rc.stderr.String(), "initialized the server for 2026-07-28 clients"))
}

// TestRelaySessionEraHostModernOnlyServe: a session-era host (go-sdk at
// 2025-11-25) through the relay to serve --modern-only, which refuses the
// session era's initialize with 400 and -32022: the relay asks
// server/discover, finds 2026-07-28, and bridges the host, answering its
// initialize from the DiscoverResult (issue 23, point 1: a bridge only
// where the server lacks the host's era).
func TestRelaySessionEraHostModernOnlyServe(t *testing.T) {
	bin := relayBinary(t)
	is := is.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := startServeWith(t, bin, []string{"--modern-only"}, bin, "example-server")
	rc := startRelay(t, ctx, srv.url)
	init := rc.cs.InitializeResult()
	is.Equal(init.ProtocolVersion, clientVersion)       // the host's version, echoed
	is.Equal(init.ServerInfo.Name, "mcp-stdio-example") // from the DiscoverResult's _meta
	res, err := rc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "bridged"}})
	is.NoErr(err)
	is.Equal(resultText(res), "bridged")
	rc.close(t)
	is.True(strings.Contains(rc.stderr.String(), "the server refused its initialize with HTTP 400 and error -32022, and server/discover lists 2026-07-28: bridging the host to 2026-07-28"))
}
