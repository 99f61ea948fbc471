package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// The relay in the field (issue 23): hosts on the TypeScript SDK, v1 (the
// session era) and v2 (2026-07-28 when it negotiates it), run the relay
// binary over stdio, as a desktop app does, against servers nobody here
// wrote — supergateway and server-everything from npm — and against serve.
// The packages are installed with npm into the user cache directory once,
// pinned, as the conformance suite is (confInstall).
const (
	// peersSupergateway: in Streamable HTTP mode it answers a request
	// it does not know, server/discover included, with 404 and -32601.
	peersSupergateway = "supergateway@4.0.0"
	// peersEverything is session era only: its SDK (1.x) has no
	// 2026-07-28.
	peersEverything = "@modelcontextprotocol/server-everything@2026.8.31"
	// peersSDKv1 is the hosts' session-era SDK.
	peersSDKv1 = "@modelcontextprotocol/sdk@1.32.2"
	// peersSDKv2 is the TypeScript SDK v2's client package (v2 split the
	// SDK; @modelcontextprotocol/sdk itself stays at 1.x): it speaks
	// 2026-07-28 with versionNegotiation, and the session era by default.
	peersSDKv2 = "@modelcontextprotocol/client@2.4.0"
	// peersSkipEnv set to 1 skips these tests explicitly.
	peersSkipEnv = "MCP_STDIO_SKIP_PEERS"
	// peersHostTimeout bounds one host run.
	peersHostTimeout = 60 * time.Second
)

// peers is an installed copy of the npm peers.
type peers struct {
	dir  string // the install directory
	node string // the Node.js binary installed with them
}

// path returns the file rel inside the installed packages.
func (p *peers) path(rel string) string { return filepath.Join(p.dir, "node_modules", rel) }

// peersInstall returns the peers, installing them with npm into the user
// cache directory when no complete install is there yet (in a temporary
// directory renamed into place once complete, like confInstall). Without
// npm the test is skipped, saying what it needs.
func peersInstall(t *testing.T) *peers {
	t.Helper()
	if os.Getenv(peersSkipEnv) == "1" {
		t.Skipf("%s=1", peersSkipEnv)
	}
	nodePkg, err := confNodePackage()
	if err != nil {
		t.Skipf("the npm peers cannot run here: %v", err)
	}
	pkgs := []string{nodePkg + "@" + confNodeMajor, peersSupergateway, peersEverything, peersSDKv1, peersSDKv2}
	nodeRel := filepath.Join("node_modules", nodePkg, "bin", "node")
	var files []string
	for _, f := range []string{supergatewayScript, "@modelcontextprotocol/server-everything/dist/index.js",
		"@modelcontextprotocol/sdk/dist/esm/client/index.js", "@modelcontextprotocol/client/dist/index.mjs"} {
		files = append(files, filepath.Join("node_modules", f))
	}
	dir := npmInstall{
		what:     "the npm peers",
		dir:      "peers-" + strings.NewReplacer("@modelcontextprotocol/", "", "@", "-").Replace(strings.Join(pkgs[1:], "+")) + "-node" + confNodeMajor,
		packages: pkgs,
		files:    append(files, nodeRel),
	}.ensure(t)
	return &peers{dir: dir, node: filepath.Join(dir, nodeRel)}
}

// peersListening is the line testdata/peers/loopback.cjs writes once a
// preloaded server listens.
var peersListening = regexp.MustCompile(`^LISTENING (127\.0\.0\.1:\d+)$`)

// startPeerServer runs a Node.js server of the peers with args, bound to
// 127.0.0.1 by the loopback preload (on the port args or env name; 0 for
// any), and returns once it listens, its MCP endpoint at /mcp. It is
// stopped at the end of the test.
func startPeerServer(t *testing.T, p *peers, name string, env []string, args ...string) *gatewayProc {
	t.Helper()
	preload, err := filepath.Abs(filepath.Join("testdata", "peers", "loopback.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	g := &gatewayProc{name: name, exited: make(chan struct{}), log: &confLog{}}
	listening := g.log.Watch(peersListening).C
	g.cmd = exec.Command(p.node, append([]string{"--require", preload}, args...)...)
	g.cmd.Env = append(os.Environ(), env...)
	g.cmd.Stdout = g.log
	g.cmd.Stderr = g.log
	g.cmd.WaitDelay = gatewayStopWait // a child may hold the pipes
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = g.cmd.Wait()
		close(g.exited)
	}()
	t.Cleanup(func() {
		g.stop(t)
		if t.Failed() {
			t.Logf("%s's output:\n%s", name, g.log.tail(40))
		}
	})
	select {
	case m := <-listening:
		g.url = "http://" + m[1] + "/mcp"
	case <-g.exited:
		t.Fatalf("%s exited before listening:\n%s", name, g.log.tail(30))
	case <-time.After(gatewayStartWait):
		t.Fatalf("%s did not listen within %v:\n%s", name, gatewayStartWait, g.log.tail(30))
	}
	return g
}

// everythingStdio is the command line of server-everything on stdio.
func (p *peers) everythingStdio() []string {
	return []string{p.node, p.path("@modelcontextprotocol/server-everything/dist/index.js"), "stdio"}
}

// startEverything runs server-everything over Streamable HTTP.
func startEverything(t *testing.T, p *peers) *gatewayProc {
	t.Helper()
	return startPeerServer(t, p, "server-everything", []string{"PORT=0"},
		p.path("@modelcontextprotocol/server-everything/dist/index.js"), "streamableHttp")
}

// startSupergateway runs supergateway in Streamable HTTP mode (stateful:
// a session per client, as a desktop host's) in front of
// server-everything on stdio.
func startSupergateway(t *testing.T, p *peers) *gatewayProc {
	t.Helper()
	// supergateway runs --stdio through a shell.
	child := strings.Join(p.everythingStdio(), " ")
	return startPeerServer(t, p, "supergateway", nil, p.path(supergatewayScript), "--stdio", child,
		"--outputTransport", "streamableHttp", "--stateful", "--port", "0", "--logLevel", "none")
}

// hostPlan is what testdata/peers/host.mjs does (see the script).
type hostPlan struct {
	SDK         string     `json:"sdk"`
	Negotiation string     `json:"negotiation,omitempty"`
	ListTools   bool       `json:"listTools,omitempty"`
	Calls       []hostCall `json:"calls,omitempty"`
	WaitLogs    int        `json:"waitLogs,omitempty"`
	TimeoutMs   int        `json:"timeoutMs,omitempty"`
}

type hostCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments,omitempty"`
}

// hostRun is what a host run printed.
type hostRun struct {
	Error            string            `json:"error"`
	SDK              string            `json:"sdk"`
	Era              string            `json:"era"`
	ProtocolVersion  string            `json:"protocolVersion"`
	ServerInfo       json.RawMessage   `json:"serverInfo"`
	InitializeResult json.RawMessage   `json:"initializeResult"`
	Tools            []string          `json:"tools"`
	Calls            []json.RawMessage `json:"calls"`
	Logs             int               `json:"logs"`
	Received         []json.RawMessage `json:"received"`
}

// runHost runs a host with plan, the relay binary (--log-level debug, then
// relayArgs) as its server command, and returns what it printed and the
// relay's stderr.
func runHost(t *testing.T, p *peers, plan hostPlan, relayArgs ...string) (hostRun, string) {
	t.Helper()
	bin := relayBinary(t)
	script, err := filepath.Abs(filepath.Join("testdata", "peers", "host.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if plan.TimeoutMs == 0 {
		plan.TimeoutMs = int((peersHostTimeout - 5*time.Second) / time.Millisecond)
	}
	planJSON, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), peersHostTimeout)
	defer cancel()
	args := append([]string{script, string(planJSON), "--", bin, "--log-level", "debug"}, relayArgs...)
	cmd := exec.CommandContext(ctx, p.node, args...)
	cmd.Env = append(os.Environ(), "PEERS_DIR="+p.dir, "GORACE=atexit_sleep_ms=50")
	var stdout bytes.Buffer
	stderr := &transporttest.SyncBuffer{} // the host's, and so the relay's
	cmd.Stdout = &stdout
	cmd.Stderr = stderr
	cmd.WaitDelay = 10 * time.Second
	runErr := cmd.Run()
	var run hostRun
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &run); err != nil {
		t.Fatalf("host (%v) printed no result: %v\nstdout: %s\nstderr:\n%s", runErr, err, stdout.String(), stderr.String())
	}
	if run.Error != "" || runErr != nil {
		t.Fatalf("host failed (%v): %s\nstderr:\n%s", runErr, run.Error, stderr.String())
	}
	return run, stderr.String()
}

// noModernMeta fails the test when a message the host received carries a
// _meta key of 2026-07-28 (issue 23, point 4).
func noModernMeta(t *testing.T, run hostRun) {
	t.Helper()
	for _, m := range run.Received {
		for _, path := range []string{"result._meta", "params._meta", "error.data._meta"} {
			gjson.GetBytes(m, path).ForEach(func(k, _ gjson.Result) bool {
				if strings.HasPrefix(k.Str, "io.modelcontextprotocol/") && k.Str != "io.modelcontextprotocol/related-task" {
					t.Errorf("a session-era host got %s in %s: %s", k.Str, path, m)
				}
				return true
			})
		}
	}
}

// serverName returns the name in a serverInfo.
func serverName(raw json.RawMessage) string { return gjson.GetBytes(raw, "name").String() }

// textOf returns the first text content of a tool call's result.
func textOf(raw json.RawMessage) string { return gjson.GetBytes(raw, "content.0.text").String() }

// TestPeersSessionEraHostDualEraServer: a session-era host (TypeScript SDK
// v1) through the relay to a server that speaks both eras — serve, in
// front of its example server and of server-everything on stdio — talks
// the session era, as it does to server-everything itself (session era
// only): the relay asks no server/discover, the initialize result is the
// server's, and the server's own notifications/message reach the host
// (issue 23: none arrived while the relay bridged such a host to
// 2026-07-28).
func TestPeersSessionEraHostDualEraServer(t *testing.T) {
	p := peersInstall(t)
	bin := relayBinary(t)
	logging := hostPlan{SDK: "v1", ListTools: true, Calls: []hostCall{{Name: "toggle-simulated-logging"}}, WaitLogs: 1}
	for _, tc := range []struct {
		name   string
		start  func(t *testing.T) *gatewayProc
		plan   hostPlan
		server string
	}{
		{
			name:   "serve, example server",
			start:  func(t *testing.T) *gatewayProc { return startServeOf(t, bin, bin, "example-server") },
			plan:   hostPlan{SDK: "v1", ListTools: true, Calls: []hostCall{{Name: "echo", Arguments: map[string]any{"text": "hi"}}}},
			server: "mcp-stdio-example",
		},
		{
			name:   "serve, server-everything",
			start:  func(t *testing.T) *gatewayProc { return startServeOf(t, bin, p.everythingStdio()...) },
			plan:   logging,
			server: "mcp-servers/everything",
		},
		{
			name:   "server-everything",
			start:  func(t *testing.T) *gatewayProc { return startEverything(t, p) },
			plan:   logging,
			server: "mcp-servers/everything",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			srv := tc.start(t)
			run, relayLog := runHost(t, p, tc.plan, srv.url)
			is.Equal(run.Era, "legacy")
			is.Equal(run.ProtocolVersion, "2025-11-25")
			is.Equal(serverName(run.ServerInfo), tc.server)
			is.True(len(run.Tools) > 0)
			is.Equal(len(run.Calls), 1)
			is.True(textOf(run.Calls[0]) != "")
			if tc.plan.WaitLogs > 0 {
				is.True(run.Logs >= tc.plan.WaitLogs) // the server's own log messages arrived
			}
			noModernMeta(t, run)
			is.True(strings.Contains(relayLog, "speaking the session era to the server"))
			is.True(strings.Contains(relayLog, "the host speaks the session era, and the server answered its initialize"))
			is.True(!strings.Contains(relayLog, "server/discover")) // no probe
		})
	}
}

// initializeDirectly sends a session-era initialize to url, as a host
// would without the relay, and returns the result.
func initializeDirectly(t *testing.T, url string) json.RawMessage {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"peer-host-v1","version":"1.0.0"}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	// JSON, or an event stream carrying the answer.
	for line := range strings.Lines(string(b)) {
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data:"); ok {
			b = []byte(strings.TrimSpace(data))
			break
		}
	}
	res := gjson.GetBytes(b, "result")
	if !res.IsObject() {
		t.Fatalf("initialize straight to %s: HTTP %d: %s", url, resp.StatusCode, b)
	}
	return json.RawMessage(res.Raw)
}

// TestPeersSupergateway: supergateway 4.0.0 answers server/discover with
// 404 and -32601; the relay took it for a 2026-07-28 server and made up
// its initialize result (issue 23). A session-era host (TypeScript SDK
// v1) now talks the session era to it and gets supergateway's own
// initialize result; a 2026-07-28 host (v2, negotiating) is bridged to the
// session era, connects, and calls a tool.
func TestPeersSupergateway(t *testing.T) {
	p := peersInstall(t)
	relayBinary(t)
	sg := startSupergateway(t, p)

	t.Run("session-era host", func(t *testing.T) {
		is := is.New(t)
		run, relayLog := runHost(t, p, hostPlan{SDK: "v1", ListTools: true, Calls: []hostCall{{Name: "echo", Arguments: map[string]any{"message": "hi"}}}}, sg.url)
		is.Equal(run.Era, "legacy")
		direct := initializeDirectly(t, sg.url)
		for _, member := range []string{"serverInfo", "capabilities", "protocolVersion"} {
			is.Equal(gjson.GetBytes(run.InitializeResult, member).Raw, gjson.GetBytes(direct, member).Raw) // supergateway's own answer
		}
		is.True(serverName(run.ServerInfo) != "mcp-server")
		is.Equal(textOf(run.Calls[0]), "Echo: hi")
		noModernMeta(t, run)
		is.True(strings.Contains(relayLog, "speaking the session era to the server"))
		is.True(!strings.Contains(relayLog, "server/discover"))
	})
	t.Run("2026-07-28 host", func(t *testing.T) {
		is := is.New(t)
		run, relayLog := runHost(t, p, hostPlan{SDK: "v2", Negotiation: "auto", ListTools: true, Calls: []hostCall{{Name: "echo", Arguments: map[string]any{"message": "hi"}}}}, sg.url)
		is.Equal(run.Era, "modern")
		is.Equal(run.ProtocolVersion, "2026-07-28")
		is.Equal(serverName(run.ServerInfo), "mcp-servers/everything") // the server's, from its initialize
		is.True(len(run.Tools) > 0)
		is.Equal(textOf(run.Calls[0]), "Echo: hi")
		is.True(strings.Contains(relayLog, "server/discover answered HTTP 404 with error -32601 (the server does not know the method): bridging the host to the session era"))
	})
}

// TestPeersModernHostModernServer: a 2026-07-28 host (TypeScript SDK v2,
// pinned to 2026-07-28, or negotiating) through the relay to serve, which
// speaks 2026-07-28, talks 2026-07-28: the relay passes its lines.
func TestPeersModernHostModernServer(t *testing.T) {
	p := peersInstall(t)
	bin := relayBinary(t)
	srv := startServeOf(t, bin, bin, "example-server")
	for _, negotiation := range []string{"2026-07-28", "auto"} {
		t.Run(negotiation, func(t *testing.T) {
			is := is.New(t)
			run, relayLog := runHost(t, p, hostPlan{SDK: "v2", Negotiation: negotiation, ListTools: true, Calls: []hostCall{{Name: "echo", Arguments: map[string]any{"text": "modern"}}}}, srv.url)
			is.Equal(run.Era, "modern")
			is.Equal(run.ProtocolVersion, "2026-07-28")
			is.Equal(serverName(run.ServerInfo), "mcp-stdio-example")
			is.Equal(textOf(run.Calls[0]), "modern")
			is.True(strings.Contains(relayLog, "speaking MCP 2026-07-28 to the server"))
			is.True(strings.Contains(relayLog, "the host speaks 2026-07-28, and server/discover lists 2026-07-28"))
			is.True(!strings.Contains(relayLog, "initialized the server")) // no handshake of the relay's
		})
	}
}
