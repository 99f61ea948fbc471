package main_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/cmd/internal/procfs"
	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Serve's benchmarks, side by side with the npm gateways that do the same
// job. Figures and how to reproduce them are in BENCHMARKS.md at the
// repository root; .ci/bench-serve installs the peers and runs them all:
//
//	go test -run '^$' -bench BenchmarkServe -count 5 ./cmd/mcp-stdio
//
// Every configuration publishes the same stdio server, the bundled example
// server (`mcp-stdio example-server`, tool echo), so the figures differ by
// the gateway alone:
//
//   - direct: no gateway, a go-sdk client speaking stdio to the server;
//   - serve: `mcp-stdio serve -- mcp-stdio example-server`;
//   - supergateway: supergateway 4.0.0, stdio to Streamable HTTP, --stateful;
//   - mcp-proxy: mcp-proxy 6.7.19, Streamable HTTP endpoint only.
//
// The peers run only when benchPeersEnv names the node_modules directory
// they are installed in; otherwise they are skipped with a message.

// benchPeersEnv names a node_modules directory holding supergateway@4.0.0
// and mcp-proxy@6.7.19 (.ci/bench-serve installs them and sets it).
const benchPeersEnv = "MCP_STDIO_BENCH_PEERS"

// The gateways compared, by the name their metrics carry.
const (
	gwDirect       = "direct"
	gwServe        = "serve"
	gwSupergateway = "supergateway"
	gwMCPProxy     = "mcp-proxy"
	// gwFloor is cmd/mcp-stdio/internal/floorserve: the least a gateway
	// does (see buildFloorServe).
	gwFloor = "floor"
)

// The peers' entry points inside node_modules (their package.json "bin").
const (
	supergatewayScript = "supergateway/dist/index.js"
	mcpProxyScript     = "mcp-proxy/dist/bin/mcp-proxy.mjs"
)

// Timings of the serve benchmarks.
const (
	// gatewayStartWait bounds a gateway's start until it listens.
	gatewayStartWait = 30 * time.Second
	// gatewayStopWait is how long a stopped gateway may take to exit after
	// SIGTERM before it is killed.
	gatewayStopWait = 10 * time.Second
	// gatewayPollEvery is how often a peer that prints nothing when ready
	// is probed for a listening port.
	gatewayPollEvery = 20 * time.Millisecond
	// serveBenchWarmup is how many calls warm each path up: enough for
	// node's JIT to compile the peers' hot paths.
	serveBenchWarmup = 1000
	// serveBenchText is the echo argument of the throughput benchmark.
	serveBenchText = "hello, serve"
)

// exampleServerArgs runs the bundled example server quietly: the child of
// every configuration.
func exampleServerArgs(bin string) []string {
	return []string{bin, "example-server", "--log-level", benchLogLevel}
}

// gatewayProc is one running gateway process.
type gatewayProc struct {
	name   string
	cmd    *exec.Cmd
	url    string // the MCP endpoint
	log    *confLog
	exited chan struct{} // closed when cmd.Wait has returned
}

// benchPeers returns the peers' node_modules directory and the node binary,
// or ok false, having logged why, when the peers are not installed.
func benchPeers(tb testing.TB) (dir, node string, ok bool) {
	tb.Helper()
	dir = os.Getenv(benchPeersEnv)
	if dir == "" {
		tb.Logf("supergateway and mcp-proxy skipped: %s is not set (.ci/bench-serve installs them and sets it)", benchPeersEnv)
		return "", "", false
	}
	for _, s := range []string{supergatewayScript, mcpProxyScript} {
		if _, err := os.Stat(filepath.Join(dir, s)); err != nil {
			tb.Fatalf("%s=%s: %v", benchPeersEnv, dir, err)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		tb.Fatalf("%s is set but node is not on PATH: %v", benchPeersEnv, err)
	}
	return dir, node, true
}

// startBenchGateway starts the named gateway (serve, supergateway,
// mcp-proxy or the floor) in front of the example server of bin, with
// extra flags for the gateway, and returns once it listens. node is the
// program that runs it: node for the peers, floorserve's binary for the
// floor. It is stopped at the end of the benchmark.
func startBenchGateway(tb testing.TB, name, bin, peers, node string, extra ...string) *gatewayProc {
	tb.Helper()
	g := &gatewayProc{name: name, exited: make(chan struct{})}
	g.log = &confLog{}
	var urls <-chan []string // serve's URL, from its startup line
	var addr string
	switch name {
	case gwServe:
		urls = g.log.Watch(confServeURL).C
		args := append([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", benchLogLevel}, extra...)
		g.cmd = exec.Command(bin, append(append(args, "--"), exampleServerArgs(bin)...)...)
	case gwFloor:
		urls = g.log.Watch(confServeURL).C
		g.cmd = exec.Command(node, append([]string{"serve", "--"}, exampleServerArgs(bin)...)...)
	case gwSupergateway:
		port := freePort(tb)
		addr = net.JoinHostPort("127.0.0.1", port)
		// supergateway runs --stdio through a shell.
		child := strings.Join(exampleServerArgs(bin), " ")
		args := []string{filepath.Join(peers, supergatewayScript), "--stdio", child,
			"--outputTransport", "streamableHttp", "--stateful", "--port", port, "--logLevel", "none"}
		g.cmd = exec.Command(node, append(args, extra...)...)
	case gwMCPProxy:
		port := freePort(tb)
		addr = net.JoinHostPort("127.0.0.1", port)
		args := append([]string{filepath.Join(peers, mcpProxyScript), "--host", "127.0.0.1", "--port", port, "--server", "stream"}, extra...)
		g.cmd = exec.Command(node, append(append(args, "--"), exampleServerArgs(bin)...)...)
	default:
		tb.Fatalf("unknown gateway %q", name)
	}
	g.cmd.Stdout = g.log
	g.cmd.Stderr = g.log
	// A child may inherit the gateway's output pipes and outlive it.
	g.cmd.WaitDelay = gatewayStopWait
	if err := g.cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = g.cmd.Wait()
		close(g.exited)
	}()
	tb.Cleanup(func() { g.stop(tb) })

	deadline := time.After(gatewayStartWait)
	if addr == "" {
		select {
		case m := <-urls:
			g.url = m[1]
		case <-g.exited:
			tb.Fatalf("%s exited before listening:\n%s", name, g.log.tail(30))
		case <-deadline:
			tb.Fatalf("%s printed no URL within %v:\n%s", name, gatewayStartWait, g.log.tail(30))
		}
		return g
	}
	// The peers print nothing we can wait for at log level none: probe
	// the port until it accepts.
	tick := time.NewTicker(gatewayPollEvery)
	defer tick.Stop()
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			_ = c.Close()
			g.url = "http://" + addr + "/mcp"
			return g
		}
		select {
		case <-tick.C:
		case <-g.exited:
			tb.Fatalf("%s exited before listening:\n%s", name, g.log.tail(30))
		case <-deadline:
			tb.Fatalf("%s did not listen on %s within %v:\n%s", name, addr, gatewayStartWait, g.log.tail(30))
		}
	}
}

// pid is the gateway process's id: for the peers, the node process.
func (g *gatewayProc) pid() int { return g.cmd.Process.Pid }

// stop sends SIGTERM, waits for the gateway to exit, and kills it if it
// does not. Later calls do nothing.
func (g *gatewayProc) stop(tb testing.TB) {
	select {
	case <-g.exited:
		return
	default:
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(gatewayStopWait):
		tb.Logf("%s did not exit within %v of SIGTERM; killed", g.name, gatewayStopWait)
		_ = g.cmd.Process.Kill()
		<-g.exited
	}
}

// freePort returns a loopback TCP port that was free a moment ago, for a
// peer that cannot report the port it bound.
func freePort(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// benchPath is one way of calling the example server, through a gateway
// process or directly: a go-sdk client session, or the benchmark's raw
// client.
type benchPath struct {
	name  string
	cs    *mcp.ClientSession  // the go-sdk client, or nil
	raw   func(tb testing.TB) // one echo call by the raw client, when cs is nil
	gw    *gatewayProc        // nil for direct
	times []time.Duration
}

// connectGateway connects a go-sdk client over Streamable HTTP to g, with
// its own HTTP transport, closed at the end of the benchmark.
func connectGateway(tb testing.TB, ctx context.Context, g *gatewayProc) *benchPath {
	tb.Helper()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-" + g.name, Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, gatewayStartWait)
	defer cancel()
	cs, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: g.url, HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: clientVersion})
	if err != nil {
		tb.Fatalf("connect to %s: %v\n%s", g.name, err, g.log.tail(30))
	}
	tb.Cleanup(func() {
		_ = cs.Close()
		hc.CloseIdleConnections()
	})
	return &benchPath{name: g.name, cs: cs, gw: g}
}

// connectDirect starts the example server and connects a go-sdk client to
// it over stdio.
func connectDirect(tb testing.TB, ctx context.Context, bin string) *benchPath {
	tb.Helper()
	args := exampleServerArgs(bin)
	cmd := exec.Command(args[0], args[1:]...)
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-direct", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: gatewayStopWait},
		&mcp.ClientSessionOptions{ProtocolVersion: clientVersion})
	if err != nil {
		tb.Fatalf("connect to the example server: %v", err)
	}
	tb.Cleanup(func() { _ = cs.Close() })
	return &benchPath{name: gwDirect, cs: cs}
}

// call makes one echo call and returns how long it took.
func (p *benchPath) call(tb testing.TB, ctx context.Context, params *mcp.CallToolParams) time.Duration {
	start := time.Now()
	if p.cs == nil {
		p.raw(tb)
		return time.Since(start)
	}
	res, err := p.cs.CallTool(ctx, params)
	took := time.Since(start)
	if err != nil || resultText(res) != serveBenchText {
		tb.Fatalf("%s: call: %v, %v", p.name, err, res)
	}
	return took
}

// benchGateways starts serve and, when installed, the peers, and connects
// a go-sdk client to each.
func benchGateways(tb testing.TB, ctx context.Context, bin string) []*benchPath {
	return startGateways(tb, bin, func(g *gatewayProc) *benchPath { return connectGateway(tb, ctx, g) })
}

// startGateways starts serve and, when installed, the peers, and connects
// a client to each with connect.
func startGateways(tb testing.TB, bin string, connect func(*gatewayProc) *benchPath) []*benchPath {
	tb.Helper()
	paths := []*benchPath{connect(startBenchGateway(tb, gwServe, bin, "", ""))}
	if peers, node, ok := benchPeers(tb); ok {
		for _, name := range []string{gwSupergateway, gwMCPProxy} {
			paths = append(paths, connect(startBenchGateway(tb, name, bin, peers, node)))
		}
	}
	return paths
}

// rawEcho returns the raw client's echo request with the given id.
func rawEcho(id int) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}}}`, id, serveBenchText)
}

// checkRawEcho fails the benchmark unless msg is the echo's answer.
func checkRawEcho(tb testing.TB, name string, msg []byte) {
	if got := gjson.GetBytes(msg, "result.content.0.text").Str; got != serveBenchText {
		tb.Fatalf("%s: unexpected answer %.300s", name, msg)
	}
}

// rawDirect starts the example server with the raw NDJSON client on its
// stdio.
func rawDirect(tb testing.TB, bin string) *benchPath {
	rc := startRawExampleServer(tb, bin)
	id := 1
	return &benchPath{name: gwDirect, raw: func(tb testing.TB) {
		id++
		checkRawEcho(tb, gwDirect, rc.roundTrip(tb, rawEcho(id)))
	}}
}

// rawGateway opens a session at g with the raw HTTP client.
func rawGateway(tb testing.TB, g *gatewayProc) *benchPath {
	rs := openRawSession(tb, g)
	id := 1
	return &benchPath{name: g.name, gw: g, raw: func(tb testing.TB) {
		id++
		status, _, msg, err := rs.post(rawEcho(id), strconv.Itoa(id))
		if err != nil || status != http.StatusOK {
			tb.Fatalf("%s: HTTP %d, %v", g.name, status, err)
		}
		checkRawEcho(tb, g.name, msg)
	}}
}

// BenchmarkServeVsPeers measures sequential tools/call echo round trips
// with a small payload to the example server: directly over stdio, through
// serve, and through the npm peers when installed. Each iteration makes one
// call on every path, rotating which goes first, so all paths see the same
// machine conditions; ns/op is the time of the whole round. The metrics
// give each path's throughput and latency percentiles, serve's throughput
// relative to direct and to each peer, each gateway process's CPU time per
// call (the gateway alone, not its child) and its peak resident set (VmHWM).
//
// Two clients make the calls. client=go-sdk is the go-sdk v1.8.0 client
// (stdio for direct, Streamable HTTP for the gateways), as an application
// would use; its own work is about half of a direct call, the same on
// every path. client=raw is the benchmark's minimal client (one keep-alive
// HTTP connection, a POST, the answer read as JSON or SSE; NDJSON lines
// for direct), so that the time of a call is mostly the gateway's.
func BenchmarkServeVsPeers(b *testing.B) {
	b.Run("client=go-sdk", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		bin := relayBinary(b)
		benchServeVsPeers(b, ctx, append([]*benchPath{connectDirect(b, ctx, bin)}, benchGateways(b, ctx, bin)...))
	})
	b.Run("client=raw", func(b *testing.B) {
		bin := relayBinary(b)
		paths := append([]*benchPath{rawDirect(b, bin)}, startGateways(b, bin, func(g *gatewayProc) *benchPath { return rawGateway(b, g) })...)
		benchServeVsPeers(b, context.Background(), paths)
	})
}

// benchServeVsPeers is BenchmarkServeVsPeers over the given paths.
func benchServeVsPeers(b *testing.B, ctx context.Context, paths []*benchPath) {
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": serveBenchText}}
	for range serveBenchWarmup {
		for _, p := range paths {
			p.call(b, ctx, params)
		}
	}
	cpuBefore := make(map[string]time.Duration)
	for _, p := range paths {
		if p.gw != nil {
			if c, err := procCPU(p.gw.pid()); err == nil {
				cpuBefore[p.name] = c
			}
		}
	}
	i := 0
	for b.Loop() {
		for j := range paths {
			p := paths[(i+j)%len(paths)]
			p.times = append(p.times, p.call(b, ctx, params))
		}
		i++
	}

	sums := make(pathSummaries)
	for _, p := range paths {
		sums.report(b, p.name, p.times)
		if p.gw == nil {
			continue
		}
		if before, ok := cpuBefore[p.name]; ok {
			if after, err := procCPU(p.gw.pid()); err == nil {
				b.ReportMetric(us(after-before)/float64(len(p.times)), p.name+"-CPU-µs/call")
			}
		}
		if kb, err := procfs.StatusKB(p.gw.pid(), "VmHWM"); err == nil {
			b.ReportMetric(float64(kb)/1024, p.name+"-peak-RSS-MiB")
		}
	}
	for _, other := range []string{gwDirect, gwSupergateway, gwMCPProxy} {
		sums.ratio(b, gwServe, other)
	}
}

// serveIdleCalls is how many calls each gateway serves before it idles.
const serveIdleCalls = 5

// BenchmarkServeIdleRSS starts each gateway, initializes a session through
// it (so the gateway has started its child and the client's GET stream is
// open), lists the tools and makes a few calls, lets everything sit idle
// for a second (relayIdleWait) and reads the gateway process's resident
// set from /proc: VmRSS, RssAnon (its own memory) and RssFile (pages of
// its executable and libraries). The child is a separate process and is
// not counted; for the peers the process is node. Each iteration starts
// fresh processes; the metrics are the means.
func BenchmarkServeIdleRSS(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bin := relayBinary(b)
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": serveBenchText}}
	type total struct{ rss, anon, file float64 }
	totals := make(map[string]*total)
	var order []string
	n := 0
	for b.Loop() {
		paths := benchGateways(b, ctx, bin)
		for _, p := range paths {
			if _, err := p.cs.ListTools(ctx, nil); err != nil {
				b.Fatalf("%s: tools/list: %v", p.name, err)
			}
			for range serveIdleCalls {
				p.call(b, ctx, params)
			}
		}
		// Not synchronisation: the measurement is "RSS after a second
		// with nothing to do".
		time.Sleep(relayIdleWait)
		for _, p := range paths {
			t := totals[p.name]
			if t == nil {
				t = &total{}
				totals[p.name] = t
				order = append(order, p.name)
			}
			for _, f := range []struct {
				field string
				sum   *float64
			}{{"VmRSS", &t.rss}, {"RssAnon", &t.anon}, {"RssFile", &t.file}} {
				kb, err := procfs.StatusKB(p.gw.pid(), f.field)
				if err != nil {
					b.Fatal(err)
				}
				*f.sum += float64(kb)
			}
		}
		for _, p := range paths {
			_ = p.cs.Close()
			p.gw.stop(b)
		}
		n++
	}
	for _, name := range order {
		t := totals[name]
		b.ReportMetric(t.rss/float64(n)/1024, name+"-idle-RSS-MiB")
		b.ReportMetric(t.anon/float64(n)/1024, name+"-idle-RssAnon-MiB")
		b.ReportMetric(t.file/float64(n)/1024, name+"-idle-RssFile-MiB")
	}
}

// largeBodySize is the size of the whole request body of the large-body
// benchmark: 64 MiB, the JSON envelope included.
const largeBodySize = 64 << 20

// largeAnswerWait bounds one large round trip, answer read included.
const largeAnswerWait = time.Minute

// largeBodyID is the JSON-RPC id of the large call.
const largeBodyID = "2"

// largeCall returns a tools/call echo request of exactly size bytes, and
// the echo text it carries.
func largeCall(size int) (body []byte, text string) {
	const head = `{"jsonrpc":"2.0","id":` + largeBodyID + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`
	const tail = `"}}}`
	text = payload(size - len(head) - len(tail))
	return []byte(head + text + tail), text
}

// BenchmarkServeLargeBody sends one tools/call whose request body is 64
// MiB (a text argument of 64 MiB less the JSON envelope) and checks that
// the echo comes back whole, through each gateway with its default
// settings, and through mcp-proxy with its body limit lifted. The client
// is a raw HTTP client of the benchmark's own (go-sdk's limits would get
// in the way); "direct" writes the same line to the example server's stdin
// and reads the answer line, the floor the gateways add to. MB/s counts
// the text both ways.
//
// A gateway that refuses the body, or does not answer within
// largeAnswerWait, is tried once: ns/op is then the time it took to
// refuse, accepted is 0, and http-status is its status (0: no response).
// Every row reports the gateway process's peak resident set (VmHWM).
func BenchmarkServeLargeBody(b *testing.B) {
	body, text := largeCall(largeBodySize)
	wantSum := sha256.Sum256([]byte(text))
	bin := relayBinary(b)

	b.Run(gwDirect, func(b *testing.B) {
		rc := startRawExampleServer(b, bin)
		check := func(resp []byte) {
			if got := gjson.GetBytes(resp, "result.content.0.text").Str; sha256.Sum256([]byte(got)) != wantSum {
				b.Fatalf("echo came back altered (%d bytes): %.200s", len(got), resp)
			}
		}
		check(rc.roundTrip(b, body))
		b.SetBytes(2 * int64(len(text)))
		for b.Loop() {
			check(rc.roundTrip(b, body))
		}
		b.ReportMetric(1, "accepted")
	})

	type variant struct {
		name, gateway string
		extra         []string
	}
	variants := []variant{{gwServe, gwServe, nil}}
	peers, node, havePeers := benchPeers(b)
	if havePeers {
		variants = append(variants,
			variant{gwSupergateway, gwSupergateway, nil},
			variant{gwMCPProxy, gwMCPProxy, nil},
			// mcp-proxy's limit is a flag; 0 lifts it.
			variant{gwMCPProxy + "-maxBodySize-0", gwMCPProxy, []string{"--maxBodySize", "0"}},
		)
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			g := startBenchGateway(b, v.gateway, bin, peers, node, v.extra...)
			rs := openRawSession(b, g)
			defer func() {
				if kb, err := procfs.StatusKB(g.pid(), "VmHWM"); err == nil {
					b.ReportMetric(float64(kb)/1024, "peak-RSS-MiB")
				}
			}()
			first := rs.largeCall(b, body, wantSum)
			// After b.Loop, which clears the metrics reported before it.
			defer b.ReportMetric(float64(first.status), "http-status")
			if !first.accepted {
				b.Logf("%s refused the 64 MiB body after %v: %s", v.name, first.took.Round(time.Millisecond), first.why)
				for b.Loop() { // refused once is enough; ns/op is set below
				}
				b.ReportMetric(0, "accepted")
				b.ReportMetric(float64(first.took.Nanoseconds()), "ns/op")
				return
			}
			b.SetBytes(2 * int64(len(text)))
			for b.Loop() {
				if o := rs.largeCall(b, body, wantSum); !o.accepted {
					b.Fatalf("%s refused the body it accepted before: %s", v.name, o.why)
				}
			}
			b.ReportMetric(1, "accepted")
		})
	}
}

// startRawExampleServer runs the example server with a raw NDJSON client
// on its stdio (the relay benchmark's client; here there is no relay in
// between) and performs the MCP handshake.
func startRawExampleServer(tb testing.TB, bin string) *rawRelayClient {
	tb.Helper()
	args := exampleServerArgs(bin)
	return startRaw(tb, "example server", exec.Command(args[0], args[1:]...))
}

// The raw clients' handshake.
const (
	rawInitialize  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + clientVersion + `","capabilities":{},"clientInfo":{"name":"bench-raw","version":"1"}}}`
	rawInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// rawSession is a Streamable HTTP session opened by hand, for messages
// larger than go-sdk's clients take.
type rawSession struct {
	g   *gatewayProc
	hc  *http.Client
	sid string
}

// openRawSession initializes a session at g with plain HTTP requests.
func openRawSession(tb testing.TB, g *gatewayProc) *rawSession {
	tb.Helper()
	rs := &rawSession{g: g, hc: &http.Client{Transport: &http.Transport{}, Timeout: largeAnswerWait}}
	tb.Cleanup(rs.hc.CloseIdleConnections)
	status, header, _, err := rs.post([]byte(rawInitialize), "1")
	if err != nil || status != http.StatusOK {
		tb.Fatalf("%s: initialize: HTTP %d, %v\n%s", g.name, status, err, g.log.tail(30))
	}
	rs.sid = header.Get("Mcp-Session-Id")
	if status, _, _, err := rs.post([]byte(rawInitialized), ""); err != nil || status/100 != 2 {
		tb.Fatalf("%s: notifications/initialized: HTTP %d, %v", g.name, status, err)
	}
	return rs
}

// post sends one message and returns the HTTP status and, when the answer
// is a JSON-RPC response with the id wantID (application/json, or an event
// of an SSE stream), that message.
func (rs *rawSession) post(body []byte, wantID string) (status int, header http.Header, msg []byte, err error) {
	req, err := http.NewRequest(http.MethodPost, rs.g.url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if rs.sid != "" {
		req.Header.Set("Mcp-Session-Id", rs.sid)
		req.Header.Set("Mcp-Protocol-Version", clientVersion)
	}
	resp, err := rs.hc.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	if wantID == "" || resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header, nil, nil
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "text/event-stream" {
		msg, err = io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, msg, err
	}
	sse := frame.NewSSEReader(resp.Body, 4*largeBodySize)
	for {
		ev, err := sse.Next()
		if err != nil {
			return resp.StatusCode, resp.Header, nil, fmt.Errorf("SSE stream ended before the answer: %w", err)
		}
		if gjson.GetBytes(ev.Data, "id").Raw == wantID {
			// The stream ends after the answer; read to its end so
			// that the connection is reused.
			_, _ = io.Copy(io.Discard, resp.Body)
			return resp.StatusCode, resp.Header, ev.Data, nil
		}
	}
}

// largeOutcome is what became of one large call.
type largeOutcome struct {
	accepted bool
	status   int           // HTTP status; 0 when no response came
	why      string        // when not accepted
	took     time.Duration // from sending to the answer (or the refusal)
}

// largeCall posts body and checks that the echo's text hashes to wantSum.
func (rs *rawSession) largeCall(tb testing.TB, body []byte, wantSum [sha256.Size]byte) largeOutcome {
	start := time.Now()
	o := rs.tryLarge(tb, body, wantSum)
	o.took = time.Since(start)
	return o
}

func (rs *rawSession) tryLarge(tb testing.TB, body []byte, wantSum [sha256.Size]byte) largeOutcome {
	status, _, msg, err := rs.post(body, largeBodyID)
	switch {
	case err != nil && status == 0:
		return largeOutcome{why: "no response: " + err.Error()}
	case err != nil:
		return largeOutcome{status: status, why: err.Error()}
	case status != http.StatusOK:
		return largeOutcome{status: status, why: "HTTP " + strconv.Itoa(status)}
	case msg == nil:
		return largeOutcome{status: status, why: "no answer in the response"}
	}
	if e := gjson.GetBytes(msg, "error"); e.Exists() {
		return largeOutcome{status: status, why: "JSON-RPC error " + e.Raw}
	}
	got := gjson.GetBytes(msg, "result.content.0.text").Str
	if sha256.Sum256([]byte(got)) != wantSum {
		tb.Fatalf("%s: the echo came back altered (%d bytes)", rs.g.name, len(got))
	}
	return largeOutcome{accepted: true, status: status}
}
