package main_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkRelayModern is BenchmarkRelayVsDirect against an MCP 2026-07-28
// server: the go-sdk v1.8.0 fixture server in its stateless mode, in a
// process of its own. Each iteration makes one small tools/call (echo)
// each of three ways, rotating which goes first, so all three see the same
// machine conditions:
//
//   - direct: the go-sdk client over StreamableClientTransport speaking
//     2026-07-28 itself (ClientSessionOptions.ProtocolVersion empty: it
//     sends server/discover, then _meta and the routing headers on every
//     request);
//   - relay-session-era: a go-sdk client asking for 2025-11-25 over stdio to
//     the relay binary with --era modern, which answers the handshake itself
//     and stamps each request with _meta and the routing headers (the era
//     bridges at work);
//   - relay-modern: a go-sdk client speaking 2026-07-28 over stdio to the
//     relay, which passes its lines through and derives the routing
//     headers.
//
// ns/op is the time of the three calls; the custom metrics give each
// path's throughput and latency percentiles, and each relay path's
// throughput relative to the direct one of the same run.
func BenchmarkRelayModern(b *testing.B) {
	url, _ := startServerProcessOf(b, modernServer)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-direct", Version: "1"}, nil)
	direct, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	if v := direct.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		b.Fatalf("direct client speaks %q, want 2026-07-28", v)
	}
	sessionEra := startRelay(b, ctx, url, "--era", "modern", "--log-level", benchLogLevel)
	modern := startRelayAt(b, ctx, "", url, "--log-level", benchLogLevel)
	if v := sessionEra.cs.InitializeResult().ProtocolVersion; v != clientVersion {
		b.Fatalf("session-era host got %q, want %s", v, clientVersion)
	}
	if v := modern.cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		b.Fatalf("modern host got %q, want 2026-07-28", v)
	}

	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello, relay"}}
	call := func(cs *mcp.ClientSession) time.Duration {
		start := time.Now()
		res, err := cs.CallTool(ctx, params)
		took := time.Since(start)
		if err != nil || resultText(res) != "hello, relay" {
			b.Fatalf("call: %v, %v", err, res)
		}
		return took
	}
	paths := []*mcp.ClientSession{direct, sessionEra.cs, modern.cs}
	// Warm every path (connections, caches) outside the measurement.
	for range 50 {
		for _, cs := range paths {
			call(cs)
		}
	}

	sessionEraPid, modernPid := sessionEra.cmd.Process.Pid, modern.cmd.Process.Pid
	sessionEraCPU0, err1 := procCPU(sessionEraPid) // Linux only; the metric is left out elsewhere
	modernCPU0, err2 := procCPU(modernPid)
	times := make([][]time.Duration, len(paths))
	i := 0
	for b.Loop() {
		for k := range paths {
			p := (i + k) % len(paths)
			times[p] = append(times[p], call(paths[p]))
		}
		i++
	}
	calls := float64(len(times[0]))
	sessionEraCPU1, err3 := procCPU(sessionEraPid)
	modernCPU1, err4 := procCPU(modernPid)
	if err1 == nil && err2 == nil && err3 == nil && err4 == nil {
		b.ReportMetric(us(sessionEraCPU1-sessionEraCPU0)/calls, "relay-session-era-CPU-µs/call")
		b.ReportMetric(us(modernCPU1-modernCPU0)/calls, "relay-modern-CPU-µs/call")
	}

	d, s, m := summarize(times[0]), summarize(times[1]), summarize(times[2])
	b.ReportMetric(d.perSecond, "direct-req/s")
	b.ReportMetric(s.perSecond, "relay-session-era-req/s")
	b.ReportMetric(m.perSecond, "relay-modern-req/s")
	b.ReportMetric(s.perSecond/d.perSecond, "relay-session-era/direct")
	b.ReportMetric(m.perSecond/d.perSecond, "relay-modern/direct")
	b.ReportMetric(us(d.p50), "direct-p50-µs")
	b.ReportMetric(us(s.p50), "relay-session-era-p50-µs")
	b.ReportMetric(us(m.p50), "relay-modern-p50-µs")
	b.ReportMetric(us(d.p99), "direct-p99-µs")
	b.ReportMetric(us(s.p99), "relay-session-era-p99-µs")
	b.ReportMetric(us(m.p99), "relay-modern-p99-µs")
}
