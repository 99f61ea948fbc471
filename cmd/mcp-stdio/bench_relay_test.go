package main_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/cmd/internal/procfs"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// The relay's benchmarks. Figures and how to reproduce them are in
// BENCHMARKS.md at the repository root:
//
//	go test -run '^$' -bench . -count 5 ./cmd/mcp-stdio

// benchLogLevel keeps the relay's stderr quiet while measuring.
const benchLogLevel = "warn"

// BenchmarkRelayVsDirect measures sequential tools/call round trips with a
// small payload against one go-sdk stateful Streamable HTTP server on
// loopback, (a) from a go-sdk client over StreamableClientTransport and (b)
// from a go-sdk client over stdio through the relay binary. Each iteration
// makes one call each way, alternating which goes first, so both see the
// same machine conditions. ns/op is the time of the pair; the custom
// metrics give each path's throughput and latency percentiles, and the
// relay's cost relative to the direct path.
//
// The server runs in a process of its own (own-process: a relay's server
// is always in another process, usually on another machine), or, to
// compare with earlier figures, inside the benchmark process next to the
// client (in-process), where the direct path crosses no process boundary
// at all.
func BenchmarkRelayVsDirect(b *testing.B) {
	b.Run("server=own-process", func(b *testing.B) {
		url, _ := startServerProcess(b)
		benchRelayVsDirect(b, url, nil)
	})
	b.Run("server=in-process", func(b *testing.B) {
		srv := startServer(b, streamableServer, "")
		benchRelayVsDirect(b, srv.url, srv)
	})
}

// benchRelayVsDirect is BenchmarkRelayVsDirect against the server at url;
// srv, when the server is in this process, also yields the connection
// counts.
func benchRelayVsDirect(b *testing.B, url string, srv *testServer) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-direct", Version: "1"}, nil)
	direct, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: clientVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	relay := startRelay(b, ctx, url, "--log-level", benchLogLevel)

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
	// Warm both paths (connections, caches) outside the measurement.
	for range 50 {
		call(direct)
		call(relay.cs)
	}

	pid := relay.cmd.Process.Pid
	cpuBefore, cpuErr := procCPU(pid) // Linux only; the metric is left out elsewhere
	var directTimes, relayTimes []time.Duration
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			directTimes = append(directTimes, call(direct))
			relayTimes = append(relayTimes, call(relay.cs))
		} else {
			relayTimes = append(relayTimes, call(relay.cs))
			directTimes = append(directTimes, call(direct))
		}
		i++
	}

	cpuAfter, err := procCPU(pid)
	if cpuErr == nil && err == nil {
		b.ReportMetric(us(cpuAfter-cpuBefore)/float64(len(relayTimes)), "relay-CPU-µs/call")
	}

	d, r := summarize(directTimes), summarize(relayTimes)
	b.ReportMetric(d.perSecond, "direct-req/s")
	b.ReportMetric(r.perSecond, "relay-req/s")
	b.ReportMetric(r.perSecond/d.perSecond, "relay/direct-throughput")
	b.ReportMetric(us(d.p50), "direct-p50-µs")
	b.ReportMetric(us(d.p99), "direct-p99-µs")
	b.ReportMetric(us(r.p50), "relay-p50-µs")
	b.ReportMetric(us(r.p99), "relay-p99-µs")
	b.ReportMetric(us(r.p50-d.p50), "added-p50-µs")
	b.ReportMetric(us(r.p99-d.p99), "added-p99-µs")
	if srv != nil {
		// TCP connections per 1000 calls, as the server saw them.
		for ss := range srv.fx.server.Sessions() {
			metric := "relay-conns/1000-calls"
			if ss.ID() == direct.ID() {
				metric = "direct-conns/1000-calls"
			}
			b.ReportMetric(float64(srv.connections(ss.ID()))*1000/float64(len(relayTimes)+50), metric)
		}
	}
	if kb, err := procfs.StatusKB(pid, "VmHWM"); err == nil {
		b.ReportMetric(float64(kb)/1024, "relay-peak-RSS-MiB")
	}
}

// procCPU returns the user plus system CPU time a process has used, from
// /proc/<pid>/stat (in clock ticks of 10ms).
func procCPU(pid int) (time.Duration, error) {
	st, err := procfs.ReadStat(pid)
	if err != nil {
		return 0, err
	}
	return st.CPU(), nil
}

// latencies summarises one path's call times.
type latencies struct {
	perSecond float64
	p50, p99  time.Duration
}

func summarize(ds []time.Duration) latencies {
	if len(ds) == 0 {
		return latencies{}
	}
	var total time.Duration
	for _, d := range ds {
		total += d
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	pct := func(p float64) time.Duration { return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))] }
	return latencies{
		perSecond: float64(len(ds)) / total.Seconds(),
		p50:       pct(0.50),
		p99:       pct(0.99),
	}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// pathSummaries are the latencies of a benchmark's paths, by name.
type pathSummaries map[string]latencies

// report summarizes the call times of path name, keeps the summary and
// reports its throughput, p50 and p99 as name-req/s, name-p50-µs and
// name-p99-µs.
func (ps pathSummaries) report(b *testing.B, name string, times []time.Duration) {
	s := summarize(times)
	ps[name] = s
	b.ReportMetric(s.perSecond, name+"-req/s")
	b.ReportMetric(us(s.p50), name+"-p50-µs")
	b.ReportMetric(us(s.p99), name+"-p99-µs")
}

// ratio reports the throughput of path over other's, as
// path/other-throughput, when both were reported and answered.
func (ps pathSummaries) ratio(b *testing.B, path, other string) {
	if p, o := ps[path], ps[other]; p.perSecond > 0 && o.perSecond > 0 {
		b.ReportMetric(p.perSecond/o.perSecond, path+"/"+other+"-throughput")
	}
}

// relayIdleWait is how long the relay sits idle before its RSS is read.
const relayIdleWait = time.Second

// BenchmarkRelayIdleRSS starts the relay against a go-sdk Streamable HTTP
// server, initializes through it and lists the tools (so its GET stream is
// open and a request has run), lets it sit idle for a second and reads its
// resident set size from /proc: VmRSS, and its two parts, RssAnon (the
// process's own memory: heap, stacks) and RssFile (pages of the binary
// mapped from the page cache); then once more after relayQuietWait, by
// when the relay has given back its start-up pages (quiet-…), and once
// more a second after listing the tools again (resumed-…: what the relay
// maps back to work; resumed-call-ms is how long that tools/list took).
// Each iteration is a new relay process; the metrics are the means.
func BenchmarkRelayIdleRSS(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := startServer(b, streamableServer, "")
	var idle, quiet, resumed [3]float64
	var resumedCall time.Duration
	n := 0
	read := func(pid int, sums *[3]float64) {
		for i, field := range []string{"VmRSS", "RssAnon", "RssFile"} {
			kb, err := procfs.StatusKB(pid, field)
			if err != nil {
				b.Fatal(err)
			}
			sums[i] += float64(kb)
		}
	}
	for b.Loop() {
		relay := startRelay(b, ctx, srv.url, "--log-level", benchLogLevel)
		if _, err := relay.cs.ListTools(ctx, nil); err != nil {
			b.Fatal(err)
		}
		// Not synchronisation: the measurements are "RSS after a second
		// with nothing to do", "after relayQuietWait" and "a second after
		// the next request".
		time.Sleep(relayIdleWait)
		read(relay.cmd.Process.Pid, &idle)
		time.Sleep(relayQuietWait - relayIdleWait)
		read(relay.cmd.Process.Pid, &quiet)
		start := time.Now()
		if _, err := relay.cs.ListTools(ctx, nil); err != nil {
			b.Fatal(err)
		}
		resumedCall += time.Since(start)
		time.Sleep(relayIdleWait)
		read(relay.cmd.Process.Pid, &resumed)
		n++
		relay.close(b)
	}
	for i, name := range []string{"RSS", "RssAnon", "RssFile"} {
		b.ReportMetric(idle[i]/float64(n)/1024, "idle-"+name+"-MiB")
		b.ReportMetric(quiet[i]/float64(n)/1024, "quiet-"+name+"-MiB")
		b.ReportMetric(resumed[i]/float64(n)/1024, "resumed-"+name+"-MiB")
	}
	b.ReportMetric(float64(resumedCall.Microseconds())/1000/float64(n), "resumed-call-ms")
}

// relayQuietWait is how long BenchmarkRelayIdleRSS lets the relay sit
// before its second reading: past the 3 s after its last answer at which
// it gives back its start-up pages.
const relayQuietWait = 5 * time.Second

// BenchmarkRelayLargeMessage measures one tools/call round trip carrying a
// 16 MiB or 64 MiB argument that the server echoes back as the result, so
// the payload crosses the relay twice (b.SetBytes counts both ways).
//
// The server is rawEchoServer, a minimal Streamable HTTP handler, not the
// go-sdk: its cost is a gjson lookup and a copy, so the figures are the
// relay's. The client is rawRelayClient, NDJSON over the relay's stdio:
// go-sdk's stdio client refuses lines over 16 MiB.
//
//   - relay-json, relay-sse: through the relay binary, the server answering
//     with application/json or with an SSE stream (one event).
//   - direct-json, direct-sse: the same request POSTed to the server from
//     this process, the answer read whole: the floor the relay adds to.
func BenchmarkRelayLargeMessage(b *testing.B) {
	for _, size := range []int{16 << 20, 64 << 20} {
		text := payload(size)
		call := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + text + `"}}}`)
		wantSum := sha256.Sum256([]byte(text))
		for _, sse := range []bool{false, true} {
			mode := "json"
			if sse {
				mode = "sse"
			}
			b.Run(fmt.Sprintf("%dMiB/relay-%s", size>>20, mode), func(b *testing.B) {
				srv := startRawEchoServer(b, sse)
				rc := startRawRelay(b, srv.URL+"/mcp")
				check := func(resp []byte) {
					if got := gjson.GetBytes(resp, "result.content.0.text").Str; sha256.Sum256([]byte(got)) != wantSum {
						b.Fatalf("echo came back altered (%d bytes)", len(got))
					}
				}
				check(rc.roundTrip(b, call)) // warm-up and integrity check
				b.SetBytes(2 * int64(size))
				for b.Loop() {
					if resp := rc.roundTrip(b, call); len(resp) < size {
						b.Fatalf("short answer: %d bytes", len(resp))
					}
				}
			})
			b.Run(fmt.Sprintf("%dMiB/direct-%s", size>>20, mode), func(b *testing.B) {
				srv := startRawEchoServer(b, sse)
				var buf bytes.Buffer
				post := func() int {
					req, err := http.NewRequest(http.MethodPost, srv.URL+"/mcp", bytes.NewReader(call))
					if err != nil {
						b.Fatal(err)
					}
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					req.Header.Set("Mcp-Session-Id", rawSessionID)
					resp, err := srv.Client().Do(req)
					if err != nil {
						b.Fatal(err)
					}
					defer resp.Body.Close()
					buf.Reset()
					if _, err := buf.ReadFrom(resp.Body); err != nil {
						b.Fatal(err)
					}
					return buf.Len()
				}
				post()
				b.SetBytes(2 * int64(size))
				for b.Loop() {
					if n := post(); n < size {
						b.Fatalf("short answer: %d bytes", n)
					}
				}
			})
		}
	}
}

// rawSessionID is the session id rawEchoServer hands out.
const rawSessionID = "raw-echo-session"

// startRawEchoServer serves a minimal Streamable HTTP server on loopback:
// initialize gets a fixed result and session id, tools/call gets a text
// result whose text is the raw params.arguments.text, notifications get
// 202, GET gets 405 (no standalone stream), DELETE gets 204. Answers are
// application/json, or an SSE stream of one event when sse is set.
func startRawEchoServer(tb testing.TB, sse bool) *httptest.Server {
	var mu sync.Mutex // requests are sequential; the buffers are reused
	var body, out bytes.Buffer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
			return
		case http.MethodPost:
		default:
			w.Header().Set("Allow", "POST, DELETE")
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		body.Reset()
		if _, err := body.ReadFrom(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		msg := body.Bytes()
		id := gjson.GetBytes(msg, "id")
		out.Reset()
		switch method := gjson.GetBytes(msg, "method").Str; {
		case !id.Exists():
			w.WriteHeader(http.StatusAccepted)
			return
		case method == "initialize":
			w.Header().Set("Mcp-Session-Id", rawSessionID)
			out.WriteString(`{"jsonrpc":"2.0","id":` + id.Raw + `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw-echo","version":"1"}}}`)
		case method == "tools/call":
			out.WriteString(`{"jsonrpc":"2.0","id":` + id.Raw + `,"result":{"content":[{"type":"text","text":`)
			out.WriteString(gjson.GetBytes(msg, "params.arguments.text").Raw)
			out.WriteString(`}]}}`)
		default:
			out.WriteString(`{"jsonrpc":"2.0","id":` + id.Raw + `,"result":{}}`)
		}
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "event: message\ndata: ")
			_, _ = w.Write(out.Bytes())
			_, _ = io.WriteString(w, "\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(out.Len()))
		_, _ = w.Write(out.Bytes())
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// rawRelayClient speaks NDJSON to a relay process's stdio directly.
type rawRelayClient struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	line   []byte // reused for each answer
	stderr *transporttest.SyncBuffer
}

// startRawRelay runs the relay against url with room for 64 MiB messages
// and performs the MCP handshake. The relay is stopped (stdin closed,
// exit 0 checked) at the end.
func startRawRelay(tb testing.TB, url string) *rawRelayClient {
	tb.Helper()
	bin := relayBinary(tb)
	return startRaw(tb, "relay", exec.Command(bin, "--log-level", benchLogLevel, "--max-message-size", strconv.Itoa(256<<20), url))
}

// startRaw starts cmd, a process speaking MCP on its stdio (what names it
// in failures), performs the MCP handshake over a raw client, and stops it
// at the end of the test (stdin closed, exit 0 checked).
func startRaw(tb testing.TB, what string, cmd *exec.Cmd) *rawRelayClient {
	tb.Helper()
	rc := &rawRelayClient{cmd: cmd, stderr: &transporttest.SyncBuffer{}}
	rc.cmd.Stderr = rc.stderr
	var err error
	if rc.stdin, err = rc.cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	out, err := rc.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	rc.stdout = bufio.NewReaderSize(out, 1<<20)
	if err := rc.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = rc.stdin.Close()
		if err := rc.cmd.Wait(); err != nil {
			tb.Errorf("%s exit: %v\nstderr:\n%s", what, err, rc.stderr)
		}
	})
	rc.roundTrip(tb, []byte(rawInitialize))
	if _, err := rc.stdin.Write([]byte(rawInitialized + "\n")); err != nil {
		tb.Fatal(err)
	}
	return rc
}

// roundTrip writes one request line and returns the answer line, which is
// valid until the next call.
func (rc *rawRelayClient) roundTrip(tb testing.TB, req []byte) []byte {
	if _, err := rc.stdin.Write(req); err != nil {
		tb.Fatal(err)
	}
	if _, err := rc.stdin.Write([]byte{'\n'}); err != nil {
		tb.Fatal(err)
	}
	rc.line = rc.line[:0]
	for {
		chunk, err := rc.stdout.ReadSlice('\n')
		rc.line = append(rc.line, chunk...)
		switch err {
		case nil:
			return rc.line
		case bufio.ErrBufferFull:
			continue
		default:
			tb.Fatalf("reading the relay's answer: %v\nstderr:\n%s", err, rc.stderr)
		}
	}
}
