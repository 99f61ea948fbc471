package main_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-stdio/mcp-stdio/cmd/internal/procfs"
)

// rawEraBlock is how many calls BenchmarkServeModernRaw makes on one path
// before it turns to the next: the CPU time of the gateway and of its
// children is read around each block and counted to the block's path.
const rawEraBlock = 100

// pinEnv, set to 1, has BenchmarkServeModernRaw pin the gateways and
// their children to the machine's last CPU and the benchmark's client to
// its first (with taskset), so that where the scheduler puts three
// processes on few CPUs does not add its noise to the difference between
// the paths. Unset, nothing is pinned.
const pinEnv = "MCP_STDIO_BENCH_PIN"

// BenchmarkServeModernRaw measures serve's two eras, and the floor's,
// without a client library: a raw HTTP client POSTs the same bytes every
// call (a 2026-07-28 tools/call echo with its _meta and routing headers; a
// session-era one in an initialized session), b.N calls on each path, in
// blocks of rawEraBlock calls in a balanced order (see balancedOrder).
// serve and floorserve (see buildFloorServe) each run the example server. What the go-sdk client
// costs in BenchmarkServeModern (most of that benchmark's CPU) is left
// out. The metrics are each path's throughput, p50 and p99, the gateway's
// CPU time per call, the gateway's and its children's together, and the
// client's, this process's (from /proc's schedstat, in nanoseconds), and
// the ratios
// serve-2026/serve-throughput, floor-2026/serve-throughput,
// serve-2026/floor-2026-throughput and floor-2026/floor-throughput: the
// last is what the 2026-07-28 messages themselves cost the client, the
// child and the kernel against the session era's, through a gateway that
// does the same on both. With MCP_STDIO_BENCH_PIN=1 the
// processes are pinned (see pinEnv). Figures in BENCHMARKS.md, "serve at
// 2026-07-28":
//
//	go test -run '^$' -bench '^BenchmarkServeModernRaw$' -benchtime 4000x -count 5 ./cmd/mcp-stdio
//	MCP_STDIO_BENCH_PIN=1 go test -run '^$' -bench '^BenchmarkServeModernRaw$' -benchtime 10000x -count 3 ./cmd/mcp-stdio
func BenchmarkServeModernRaw(b *testing.B) {
	bin := relayBinary(b)
	serve := startBenchGateway(b, gwServe, bin, "", "")
	floor := startBenchGateway(b, gwFloor, bin, "", buildFloorServe(b))
	if os.Getenv(pinEnv) == "1" {
		pinBenchmark(b, serve.pid(), floor.pid())
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	b.Cleanup(hc.CloseIdleConnections)
	want := []byte(serveBenchText)
	post := func(url string, body []byte, hdr http.Header) http.Header {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header = hdr.Clone()
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("%d %s: %v\n%s", resp.StatusCode, out, err, serve.log.tail(30))
		}
		if !bytes.Contains(out, want) && !bytes.Contains(body, []byte(`"initialize"`)) {
			b.Fatalf("unexpected answer %s", out)
		}
		return resp.Header
	}
	base := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	modern := base.Clone()
	modern.Set("Mcp-Protocol-Version", "2026-07-28")
	modern.Set("Mcp-Method", "tools/call")
	modern.Set("Mcp-Name", "echo")
	// open starts a session on the gateway at url: its initialize, its
	// notifications/initialized, and the headers of its later requests.
	open := func(url string) http.Header {
		session := base.Clone()
		hdr := post(url, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+clientVersion+`","capabilities":{},"clientInfo":{"name":"bench-raw","version":"1"}}}`), session)
		session.Set("Mcp-Session-Id", hdr.Get("Mcp-Session-Id"))
		session.Set("Mcp-Protocol-Version", clientVersion)
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)))
		if err != nil {
			b.Fatal(err)
		}
		req.Header = session.Clone()
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return session
	}
	session := open(serve.url)
	floorSession := open(floor.url)
	sessionBody := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + serveBenchText + `"}}}`)

	modernBody := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + serveBenchText + `"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench-raw","version":"1"}}}}`)
	paths := []struct {
		name     string
		gw       *gatewayProc
		body     []byte
		hdr      http.Header
		cpu, all time.Duration // the gateway's; with its children
		client   time.Duration // this process's: the client's
		lat      []time.Duration
	}{
		{name: modernPath(gwServe), gw: serve, hdr: modern, body: modernBody},
		{name: gwServe, gw: serve, hdr: session, body: sessionBody},
		{name: modernPath(gwFloor), gw: floor, hdr: modern, body: modernBody},
		{name: gwFloor, gw: floor, hdr: floorSession, body: sessionBody},
	}
	for range serveBenchWarmup {
		for _, p := range paths {
			post(p.gw.url, p.body, p.hdr)
		}
	}
	b.ResetTimer()
	cpuOK := true
	for done := 0; done < b.N; done += rawEraBlock {
		n := min(rawEraBlock, b.N-done)
		for i := range paths {
			p := &paths[balancedOrder(done/rawEraBlock, i, len(paths))]
			before, all0, err1 := treeCPU(p.gw.pid())
			client0, err3 := threadsCPU(os.Getpid())
			for range n {
				t0 := time.Now()
				post(p.gw.url, p.body, p.hdr)
				p.lat = append(p.lat, time.Since(t0))
			}
			client1, err4 := threadsCPU(os.Getpid())
			after, all1, err2 := treeCPU(p.gw.pid())
			cpuOK = cpuOK && err1 == nil && err2 == nil && err3 == nil && err4 == nil
			p.cpu += after - before
			p.all += all1 - all0
			p.client += client1 - client0
		}
	}
	b.StopTimer()
	sums := make(pathSummaries)
	for _, p := range paths {
		sums.report(b, p.name, p.lat)
		if cpuOK {
			b.ReportMetric(us(p.cpu)/float64(len(p.lat)), p.name+"-CPU-µs/call")
			b.ReportMetric(us(p.all)/float64(len(p.lat)), p.name+"+children-CPU-µs/call")
			b.ReportMetric(us(p.client)/float64(len(p.lat)), p.name+"-client-CPU-µs/call")
		}
	}
	sums.ratio(b, modernPath(gwServe), gwServe)
	sums.ratio(b, modernPath(gwFloor), gwServe)
	sums.ratio(b, modernPath(gwServe), modernPath(gwFloor))
	sums.ratio(b, modernPath(gwFloor), gwFloor)
}

// balancedOrder returns the index of the path that comes i-th in round
// round, of n paths listed in pairs (a gateway's 2026-07-28 path, then its
// session-era one): in even rounds the paths as listed, in odd ones each
// pair swapped; a last path without a pair keeps its place. A path's
// first calls in a round are slower when the process before them was
// another gateway (its caches cold, its threads asleep) than when it was
// its own gateway's other path: in this order each path of a pair comes
// after another gateway in one round of two, and after its own gateway in
// the other. The rotation used before (the first path moving by one each
// round) put serve's 2026-07-28 path after the floor in every round of
// BenchmarkServeModernRaw, and its session-era path after serve, which
// showed the 2026-07-28 path slower against the session era than it is
// (see BENCHMARKS.md, "Measured in a balanced order").
func balancedOrder(round, i, n int) int {
	if i^1 < n {
		return i ^ round&1
	}
	return i
}

// pinBenchmark pins the processes pids (and what they start later) to the
// machine's last CPU and this process, the client, to its first, with
// taskset; the client's affinity is restored at the end. It skips the
// benchmark where that cannot be done.
func pinBenchmark(b *testing.B, pids ...int) {
	b.Helper()
	taskset, err := exec.LookPath("taskset")
	if err != nil || runtime.NumCPU() < 2 {
		b.Skipf("%s=1 needs taskset and two CPUs", pinEnv)
	}
	last := strconv.Itoa(runtime.NumCPU() - 1)
	pin := func(cpus string, pid int) {
		if out, err := exec.Command(taskset, "-a", "-p", "-c", cpus, strconv.Itoa(pid)).CombinedOutput(); err != nil {
			b.Fatalf("taskset %s %d: %v\n%s", cpus, pid, err, out)
		}
	}
	for _, pid := range pids {
		pin(last, pid)
	}
	pin("0", os.Getpid())
	b.Cleanup(func() { pin("0-"+last, os.Getpid()) })
}

// treeCPU returns the CPU time process pid has used (all its threads) and
// that of pid and every process under it together, from /proc's schedstat
// (nanoseconds). Processes that ended are not counted.
func treeCPU(pid int) (own, all time.Duration, err error) {
	own, err = threadsCPU(pid)
	if err != nil {
		return 0, 0, err
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0, err
	}
	parent := make(map[int]int)
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, err := parentPID(p); err == nil {
			parent[p] = pp
		}
	}
	all = own
	for p := range parent {
		if p == pid || !descends(parent, p, pid) {
			continue
		}
		if d, err := threadsCPU(p); err == nil {
			all += d
		}
	}
	return own, all, nil
}

// descends reports whether p is under root in the process tree parent.
func descends(parent map[int]int, p, root int) bool {
	for range len(parent) {
		pp, ok := parent[p]
		if !ok || pp <= 1 {
			return false
		}
		if pp == root {
			return true
		}
		p = pp
	}
	return false
}

// parentPID reads the parent of process pid from /proc.
func parentPID(pid int) (int, error) {
	st, err := procfs.ReadStat(pid)
	return st.PPID, err
}

// threadsCPU sums the run time of every thread of process pid, from
// /proc/PID/task/*/schedstat (nanoseconds).
func threadsCPU(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
	if err != nil || len(tasks) == 0 {
		return 0, os.ErrNotExist
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, err
		}
		total += time.Duration(ns)
	}
	return total, nil
}

// TestBalancedOrder: in every two rounds, each path of a pair comes once
// after its partner and once after another gateway's path, for the four
// paths of BenchmarkServeModernRaw and the three of BenchmarkServeModern
// (whose last, the floor, has no partner).
func TestBalancedOrder(t *testing.T) {
	for _, n := range []int{3, 4} {
		var seq []int
		for round := range 5 {
			for i := range n {
				seq = append(seq, balancedOrder(round, i, n))
			}
		}
		afterPartner, afterOther := make([]int, n), make([]int, n)
		for k := n; k < len(seq); k++ { // the rounds after the first
			switch cur, prev := seq[k], seq[k-1]; {
			case prev == cur^1:
				afterPartner[cur]++
			case prev != cur:
				afterOther[cur]++
			default:
				t.Fatalf("n=%d: path %d twice in a row in %v", n, cur, seq)
			}
		}
		for p := range n &^ 1 { // the paths with a partner
			if afterPartner[p] == 0 || afterPartner[p] != afterOther[p] {
				t.Errorf("n=%d: path %d follows its partner %d times and another gateway %d times in %v", n, p, afterPartner[p], afterOther[p], seq)
			}
		}
	}
}
