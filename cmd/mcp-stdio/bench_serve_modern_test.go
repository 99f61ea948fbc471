package main_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-stdio/mcp-stdio/cmd/internal/procfs"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Serve's 2026-07-28 face, measured (issue 12). Figures and commands are in
// BENCHMARKS.md, section "serve at 2026-07-28"; .ci/bench-serve runs them
// with the peers installed:
//
//	go test -run '^$' -bench '^BenchmarkServeModern' -count 5 ./cmd/mcp-stdio
//
// The child is the bundled example server (dual-era), as in the session-era
// benchmarks. The 2026-07-28 client is the go-sdk v1.8.0 client with
// ClientSessionOptions.ProtocolVersion empty: it sends server/discover once,
// then every request with _meta and the routing headers, no session.

// modernPath names a 2026-07-28 client's path in the metrics.
func modernPath(gateway string) string { return gateway + "-2026" }

// connectGatewayAt connects a go-sdk client over Streamable HTTP to g,
// asking for version ("" for 2026-07-28), with its own HTTP transport,
// closed at the end of the benchmark. The path is named name.
func connectGatewayAt(tb testing.TB, ctx context.Context, g *gatewayProc, name, version string) *benchPath {
	tb.Helper()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-" + name, Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, gatewayStartWait)
	defer cancel()
	cs, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: g.url, HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		tb.Fatalf("connect to %s: %v\n%s", name, err, g.log.tail(30))
	}
	if version == "" && cs.InitializeResult().ProtocolVersion != "2026-07-28" {
		tb.Fatalf("%s: the client speaks %s, want 2026-07-28", name, cs.InitializeResult().ProtocolVersion)
	}
	tb.Cleanup(func() {
		_ = cs.Close()
		hc.CloseIdleConnections()
	})
	return &benchPath{name: name, cs: cs, gw: g}
}

// BenchmarkServeModern measures sequential tools/call echo round trips
// with a small payload, b.N on every path: serve's two paths and the
// floor's alternating call by call (in a balanced order, see
// balancedOrder), then supergateway's in a phase
// of its own (see the loop for why):
//
//   - serve-2026: a 2026-07-28 client through serve (its pooled child);
//   - serve: a session-era client (2025-11-25) through the same serve
//     process (its session's child);
//   - floor-2026: a 2026-07-28 client through floorserve (see
//     buildFloorServe), the least any gateway process does, alternating
//     with serve's two;
//   - supergateway-2026: a 2026-07-28 client through supergateway 4.0.0
//     --stateful, which starts a child per 2026-07-28 request, when the
//     peers are installed.
//
// The metrics are each path's throughput and latency, serve's CPU time per
// call (both of serve's paths together) and the ratios the goals name:
// serve-2026/supergateway-2026-throughput (goal ≥ 25) and
// serve-2026/serve-throughput (goal ≥ 1.0); beside them, from the same
// run, floor-2026/supergateway-2026-throughput (what this machine allows
// any gateway) and serve-2026/floor-2026-throughput, and
// floor-2026/serve-throughput: the most serve-2026/serve-throughput any
// gateway could show with this client and child, since the floor's
// 2026-07-28 path does nothing a gateway could leave out.
func BenchmarkServeModern(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bin := relayBinary(b)
	serve := startBenchGateway(b, gwServe, bin, "", "")
	floor := startBenchGateway(b, gwFloor, bin, "", buildFloorServe(b))
	paths := []*benchPath{
		connectGatewayAt(b, ctx, serve, modernPath(gwServe), ""),
		connectGatewayAt(b, ctx, serve, gwServe, clientVersion),
		connectGatewayAt(b, ctx, floor, modernPath(gwFloor), ""),
	}
	if peers, node, ok := benchPeers(b); ok {
		sg := startBenchGateway(b, gwSupergateway, bin, peers, node)
		paths = append(paths, connectGatewayAt(b, ctx, sg, modernPath(gwSupergateway), ""))
	}

	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": serveBenchText}}
	// supergateway starts a node child per call: fewer warm-up calls for
	// it would be fairer to the clock, but the same number keeps the
	// rounds simple, and its JIT needs them.
	for range serveBenchWarmup / 10 {
		for _, p := range paths {
			p.call(b, ctx, params)
		}
	}
	// serve's two paths and the floor alternate, call by call, serve's
	// two swapping places every other round.
	// supergateway's calls come after them, in a phase of their own: on
	// two cores the node process and the child it starts for every call,
	// still exiting after the answer, would slow whichever call came next,
	// serve's included.
	servePaths, others := paths[:3], paths[3:]
	b.ResetTimer()
	cpuBefore, cpuErr := procCPU(serve.pid())
	i := 0
	for ; i < b.N; i++ {
		for j := range servePaths {
			p := servePaths[balancedOrder(i, j, len(servePaths))]
			p.times = append(p.times, p.call(b, ctx, params))
		}
	}
	cpuAfter, cpuAfterErr := procCPU(serve.pid())
	for _, p := range others {
		for range b.N {
			p.times = append(p.times, p.call(b, ctx, params))
		}
	}
	sums := make(pathSummaries)
	for _, p := range paths {
		sums.report(b, p.name, p.times)
	}
	if cpuAfterErr == nil && cpuErr == nil && i > 0 {
		b.ReportMetric(us(cpuAfter-cpuBefore)/float64(2*i), "serve-CPU-µs/call")
	}
	sums.ratio(b, modernPath(gwServe), modernPath(gwSupergateway))
	sums.ratio(b, modernPath(gwServe), gwServe)
	sums.ratio(b, modernPath(gwFloor), modernPath(gwSupergateway))
	sums.ratio(b, modernPath(gwServe), modernPath(gwFloor))
	sums.ratio(b, modernPath(gwFloor), gwServe)
}

// buildFloorServe builds cmd/mcp-stdio/internal/floorserve, statically as
// mcp-stdio is released, and returns its path: a Streamable HTTP gateway
// that writes each POST to its child and answers with the child's line,
// one request at a time, with no validation, routing or security. Behind
// the same client, on the same machine, in the same run, it shows what
// any gateway process can reach there.
func buildFloorServe(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "floorserve")
	build := exec.Command("go", "build", "-o", bin, "./internal/floorserve")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("building the floor: %v\n%s", err, out)
	}
	return bin
}

// modernClients is how many 2026-07-28 clients BenchmarkServeModernConcurrent
// runs at once.
const modernClients = 64

// BenchmarkServeModernConcurrent runs 64 2026-07-28 clients at once
// through one serve, each with its own HTTP connection, making echo calls
// until b.N calls are done in all. Without authentication they are all the
// same principal, so serve must serve them all from one pooled child. The
// metrics are the total throughput, latency percentiles, serve's CPU per
// call, and how many children serve had running (from /proc; the goal is
// 1). For comparison, the same with 64 session-era clients (64 sessions,
// 64 children) when run as client=session.
func BenchmarkServeModernConcurrent(b *testing.B) {
	for _, tc := range []struct{ name, version string }{{"client=2026", ""}, {"client=session", clientVersion}} {
		b.Run(tc.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			bin := relayBinary(b)
			serve := startBenchGateway(b, gwServe, bin, "", "")
			clients := make([]*benchPath, modernClients)
			for i := range clients {
				clients[i] = connectGatewayAt(b, ctx, serve, gwServe+"-"+strconv.Itoa(i), tc.version)
			}
			params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": serveBenchText}}
			for _, c := range clients {
				c.call(b, ctx, params)
			}
			children, childrenOK := procChildren(serve.pid())
			cpuBefore, cpuErr := procCPU(serve.pid())
			var left atomic.Int64
			left.Store(int64(b.N))
			var mu sync.Mutex
			var all []time.Duration
			var failed error
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for _, c := range clients {
				wg.Go(func() {
					var mine []time.Duration
					var err error
					for err == nil && left.Add(-1) >= 0 {
						t0 := time.Now()
						var res *mcp.CallToolResult
						res, err = c.cs.CallTool(ctx, params)
						mine = append(mine, time.Since(t0))
						if err == nil && resultText(res) != serveBenchText {
							err = fmt.Errorf("%s: unexpected result %v", c.name, res)
						}
					}
					mu.Lock()
					all = append(all, mine...)
					if failed == nil {
						failed = err
					}
					mu.Unlock()
				})
			}
			wg.Wait()
			took := time.Since(start)
			b.StopTimer()
			if failed != nil {
				b.Fatalf("a call failed: %v\n%s", failed, serve.log.tail(30))
			}
			s := summarize(all)
			b.ReportMetric(float64(len(all))/took.Seconds(), "req/s")
			b.ReportMetric(us(s.p50), "p50-µs")
			b.ReportMetric(us(s.p99), "p99-µs")
			if after, err := procCPU(serve.pid()); err == nil && cpuErr == nil && len(all) > 0 {
				b.ReportMetric(us(after-cpuBefore)/float64(len(all)), "serve-CPU-µs/call")
			}
			if childrenOK {
				b.ReportMetric(float64(children), "children")
			}
			if kb, err := procfs.StatusKB(serve.pid(), "VmHWM"); err == nil {
				b.ReportMetric(float64(kb)/1024, "serve-peak-RSS-MiB")
			}
		})
	}
}

// BenchmarkServeModernIdleRSS is BenchmarkServeIdleRSS for serve's two
// faces, side by side: one serve process used by a 2026-07-28 client
// (discover, tools/list, a few calls: its pooled child is running), one by
// a session-era client (a session open with its GET stream), then a second
// of idle, then each serve process's VmRSS, RssAnon and RssFile; and the
// same two again with --admin-addr (metrics on, /metrics scraped once).
// The goal is that serving 2026-07-28 leaves the idle footprint as it is
// (≤ 10 MB), metrics on.
func BenchmarkServeModernIdleRSS(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bin := relayBinary(b)
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": serveBenchText}}
	// Each face also with --admin-addr: metrics on, scraped once.
	faces := []struct {
		name, version string
		flags         []string
	}{
		{modernPath(gwServe), "", nil}, {gwServe, clientVersion, nil},
		{modernPath(gwServe) + "+metrics", "", []string{"--admin-addr", "127.0.0.1:0"}},
		{gwServe + "+metrics", clientVersion, []string{"--admin-addr", "127.0.0.1:0"}},
	}
	sums := make(map[string]*[3]float64)
	n := 0
	for b.Loop() {
		var paths []*benchPath
		for _, f := range faces {
			g := startBenchGateway(b, gwServe, bin, "", "", f.flags...)
			p := connectGatewayAt(b, ctx, g, f.name, f.version)
			if _, err := p.cs.ListTools(ctx, nil); err != nil {
				b.Fatalf("%s: tools/list: %v", p.name, err)
			}
			for range serveIdleCalls {
				p.call(b, ctx, params)
			}
			if f.flags != nil {
				scrape(b, adminURL(b, g))
			}
			paths = append(paths, p)
		}
		// Not synchronisation: the measurement is "RSS after a second
		// with nothing to do".
		time.Sleep(relayIdleWait)
		for _, p := range paths {
			s := sums[p.name]
			if s == nil {
				s = &[3]float64{}
				sums[p.name] = s
			}
			for i, field := range []string{"VmRSS", "RssAnon", "RssFile"} {
				kb, err := procfs.StatusKB(p.gw.pid(), field)
				if err != nil {
					b.Fatal(err)
				}
				s[i] += float64(kb)
			}
			_ = p.cs.Close()
			p.gw.stop(b)
		}
		n++
	}
	for _, f := range faces {
		s := sums[f.name]
		b.ReportMetric(s[0]/float64(n)/1024, f.name+"-idle-RSS-MiB")
		b.ReportMetric(s[1]/float64(n)/1024, f.name+"-idle-RssAnon-MiB")
		b.ReportMetric(s[2]/float64(n)/1024, f.name+"-idle-RssFile-MiB")
	}
}

// procChildren counts the live child processes of pid from /proc (every
// thread's children file); ok is false where /proc cannot tell.
func procChildren(pid int) (n int, ok bool) {
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "children"))
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, false
		}
		n += len(strings.Fields(string(b)))
	}
	return n, true
}
