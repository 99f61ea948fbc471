// Command mcp-load runs concurrent 2026-07-28 MCP clients against serve
// and reports what came of their calls.
//
//	mcp-load [flags] [-- SERVE-ARGS...]
//
// Without --url it starts `mcp-stdio serve --listen 127.0.0.1:0
// SERVE-ARGS...` (the binary named by --serve, by default mcp-stdio next
// to this program or on PATH; with no SERVE-ARGS, serve publishes its
// bundled example server), and stops it with SIGTERM at the end. Each of
// the --clients clients has a keep-alive connection of its own and makes
// tools/call requests, one at a time, until --duration has passed or
// --calls calls have been made in all; a client told 503 waits its
// Retry-After. Each call has an id of its own, and is counted answered
// exactly once when its answer holds one response with that id.
//
// The report: calls/s, latency percentiles of the calls answered, the
// outcome of every call by kind (ok, 503, eof, reset, timeout, ...),
// connections opened, and serve's resident memory, open file descriptors
// and child processes (peak during the run, and at the end), read from
// /proc (Linux). It exits 1 when a call was not answered exactly once
// with a result.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcp-stdio/mcp-stdio/cmd/internal/modernclient"
	"github.com/mcp-stdio/mcp-stdio/cmd/internal/procfs"
	"github.com/mcp-stdio/mcp-stdio/transport"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		var fail failedCalls
		if !errors.As(err, &fail) {
			fmt.Fprintln(os.Stderr, "mcp-load:", err)
		}
		os.Exit(1)
	}
}

// failedCalls is run's error when calls were not answered exactly once.
type failedCalls int

func (n failedCalls) Error() string { return strconv.Itoa(int(n)) + " calls not answered exactly once" }

type options struct {
	url      string
	serve    string
	clients  int
	duration time.Duration
	calls    int64
	tool     string
	args     string
	timeout  time.Duration
	dials    int
	pid      int
	asJSON   bool
}

func run(argv []string, stdout, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("mcp-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.url, "url", "", "load the MCP endpoint at `URL` (else start serve)")
	fs.StringVar(&o.serve, "serve", "", "start serve from the mcp-stdio binary at `PATH` (default: next to mcp-load, else on PATH)")
	fs.IntVar(&o.clients, "clients", 100, "run `N` clients at once, each on a connection of its own")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "make calls for `DURATION`")
	fs.Int64Var(&o.calls, "calls", 0, "stop after `N` calls in all (0: run for --duration)")
	fs.StringVar(&o.tool, "tool", "echo", "call the tool `NAME` (a plain name: letters, digits, '_', '-', '.')")
	fs.StringVar(&o.args, "arguments", `{"text":"hello"}`, "call the tool with the arguments `JSON` (an object)")
	fs.DurationVar(&o.timeout, "timeout", time.Minute, "count a call without a whole answer after `DURATION` as a timeout")
	fs.IntVar(&o.dials, "dials", 256, "open at most `N` connections at once while clients start")
	fs.IntVar(&o.pid, "pid", 0, "with --url, report the memory, fds and children of process `PID`")
	fs.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	if err := fs.Parse(argv); err != nil {
		return err
	}
	if o.clients <= 0 || o.dials <= 0 || (o.duration <= 0 && o.calls <= 0) {
		return errors.New("--clients and --dials must be positive, and --duration or --calls")
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_.-]+$`).MatchString(o.tool) || !json.Valid([]byte(o.args)) || !strings.HasPrefix(strings.TrimSpace(o.args), "{") {
		return errors.New("--tool must be a plain name and --arguments a JSON object")
	}
	if lim := transport.RaiseFileLimit(); lim > 0 && o.clients+64 > lim {
		return fmt.Errorf("--clients %d needs more file descriptors than this process may open (%d); raise `ulimit -n`", o.clients, lim)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	endpoint, pid := o.url, o.pid
	if endpoint == "" {
		s, err := startServe(ctx, o.serve, fs.Args(), stderr)
		if err != nil {
			return err
		}
		defer s.stop()
		endpoint, pid = s.url, s.cmd.Process.Pid
	}
	rep, err := load(ctx, o, endpoint, pid)
	if err != nil {
		return err
	}
	rep.Command = "mcp-load " + strings.Join(argv, " ")
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		rep.print(stdout)
	}
	if bad := rep.Calls - rep.Outcomes[modernclient.OK]; bad > 0 {
		return failedCalls(bad)
	}
	return nil
}

// report is what a run came to.
type report struct {
	Command     string            `json:"command"`
	Endpoint    string            `json:"endpoint"`
	Clients     int               `json:"clients"`
	Seconds     float64           `json:"seconds"`
	Calls       int64             `json:"calls"`
	CallsPerSec float64           `json:"calls_per_second"`
	P50ms       float64           `json:"p50_ms"`
	P90ms       float64           `json:"p90_ms"`
	P99ms       float64           `json:"p99_ms"`
	Maxms       float64           `json:"max_ms"`
	Outcomes    map[string]int64  `json:"outcomes"`
	Conns       int64             `json:"connections_opened"`
	Examples    map[string]string `json:"examples,omitempty"`
	// ConnectSeconds is how long the clients took to connect, before
	// the calls; ServeConnected serve's stats then (every connection open
	// and silent).
	ConnectSeconds float64    `json:"connect_seconds"`
	ServeConnected *procStats `json:"serve_connected,omitempty"`
	Serve          *procStats `json:"serve,omitempty"`
	ServePeak      *procStats `json:"serve_peak,omitempty"`
	Load           [3]float64 `json:"load_average"`
}

// load runs the clients and gathers the report.
func load(ctx context.Context, o options, endpoint string, pid int) (*report, error) {
	clients := make([]*modernclient.Client, o.clients)
	for i := range clients {
		c, err := modernclient.New(endpoint)
		if err != nil {
			return nil, err
		}
		clients[i] = c
	}
	// Every client connects first, --dials at a time; the calls start
	// once all are connected, so that all are open at once.
	connectStart := time.Now()
	var (
		cwg      sync.WaitGroup
		dialErrs atomic.Int64
		firstErr atomic.Value
		dialing  = make(chan struct{}, o.dials)
	)
	for _, c := range clients {
		dialing <- struct{}{}
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			defer func() { <-dialing }()
			if err := c.Connect(ctx); err != nil {
				dialErrs.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
			}
		}()
	}
	cwg.Wait()
	connectTook := time.Since(connectStart)
	idle, idleErr := readProc(pid)
	if n := dialErrs.Load(); n > 0 {
		return nil, fmt.Errorf("%d of %d clients could not connect: %v", n, o.clients, firstErr.Load())
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	runCtx := ctx
	if o.duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	var (
		budget   atomic.Int64 // calls left, with --calls
		mu       sync.Mutex
		outcomes = map[string]int64{}
		examples = map[string]string{}
		lats     = make([][]time.Duration, o.clients)
		wg       sync.WaitGroup
	)
	budget.Store(o.calls)
	var peak procStats
	sampleDone := make(chan struct{})
	stopSample := make(chan struct{})
	go func() { // serve's peak RSS, fds and children, once a second
		defer close(sampleDone)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			if s, err := readProc(pid); err == nil {
				peak.max(s)
			}
			select {
			case <-stopSample:
				return
			case <-t.C:
			}
		}
	}()
	start := time.Now()
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			local := map[string]int64{}
			for n := int64(0); runCtx.Err() == nil; n++ {
				if o.calls > 0 && budget.Add(-1) < 0 {
					break
				}
				id := int64(i)<<32 | n
				t0 := time.Now()
				r := c.Call(runCtx, id, o.tool, o.args, o.timeout)
				d := time.Since(t0)
				if r.Kind == modernclient.DialFailure && runCtx.Err() != nil {
					break // the run ended while it dialed: not a call
				}
				if r.Kind == modernclient.Timeout && runCtx.Err() != nil && o.calls == 0 && d < o.timeout {
					break
				}
				local[r.Kind]++
				if r.Kind == modernclient.OK {
					lats[i] = append(lats[i], d)
					continue
				}
				mu.Lock()
				if _, ok := examples[r.Kind]; !ok && r.Err != nil {
					examples[r.Kind] = r.Err.Error()
				}
				mu.Unlock()
				if r.Kind == modernclient.Refused {
					select {
					case <-runCtx.Done():
					case <-time.After(max(r.RetryAfter, 100*time.Millisecond)):
					}
				}
			}
			mu.Lock()
			for k, v := range local {
				outcomes[k] += v
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stopSample)
	<-sampleDone

	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	slices.Sort(all)
	rep := &report{Endpoint: endpoint, Clients: o.clients, Seconds: elapsed.Seconds(), Outcomes: outcomes, Examples: examples}
	for _, v := range outcomes {
		rep.Calls += v
	}
	for _, c := range clients {
		rep.Conns += int64(c.Conns)
	}
	rep.CallsPerSec = float64(rep.Calls) / elapsed.Seconds()
	rep.P50ms, rep.P90ms, rep.P99ms = ms(pct(all, 50)), ms(pct(all, 90)), ms(pct(all, 99))
	if len(all) > 0 {
		rep.Maxms = ms(all[len(all)-1])
	}
	if s, err := readProc(pid); err == nil {
		rep.Serve = &s
		rep.ServePeak = &peak
	}
	rep.Load = loadAverage()
	rep.ConnectSeconds = connectTook.Seconds()
	if idleErr == nil {
		rep.ServeConnected = &idle
	}
	return rep, nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "%s\n", r.Command)
	fmt.Fprintf(w, "endpoint %s, %d clients, %.1f s, load average %.2f %.2f %.2f\n", r.Endpoint, r.Clients, r.Seconds, r.Load[0], r.Load[1], r.Load[2])
	fmt.Fprintf(w, "calls %d, %.0f calls/s, latency p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms\n", r.Calls, r.CallsPerSec, r.P50ms, r.P90ms, r.P99ms, r.Maxms)
	kinds := make([]string, 0, len(r.Outcomes))
	for k := range r.Outcomes {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	fmt.Fprintf(w, "answered exactly once: %d of %d; outcomes:", r.Outcomes[modernclient.OK], r.Calls)
	for _, k := range kinds {
		fmt.Fprintf(w, " %s=%d", k, r.Outcomes[k])
	}
	fmt.Fprintf(w, "; connections opened %d\n", r.Conns)
	for _, k := range kinds {
		if e, ok := r.Examples[k]; ok {
			fmt.Fprintf(w, "  e.g. %s: %s\n", k, e)
		}
	}
	if r.ServeConnected != nil {
		fmt.Fprintf(w, "serve with every client connected (%.1f s), before the calls: RSS %.1f MiB, fds %d\n", r.ConnectSeconds, float64(r.ServeConnected.RSSKiB)/1024, r.ServeConnected.FDs)
	}
	if r.Serve != nil {
		fmt.Fprintf(w, "serve: RSS %.1f MiB (peak %.1f), fds %d (peak %d), children %d (peak %d)\n",
			float64(r.Serve.RSSKiB)/1024, float64(r.ServePeak.RSSKiB)/1024, r.Serve.FDs, r.ServePeak.FDs, r.Serve.Children, r.ServePeak.Children)
	}
}

// procStats are a process's resident memory, open fds and children.
type procStats struct {
	RSSKiB   int64 `json:"rss_kib"`
	FDs      int   `json:"fds"`
	Children int   `json:"children"`
}

func (p *procStats) max(s procStats) {
	p.RSSKiB = max(p.RSSKiB, s.RSSKiB)
	p.FDs = max(p.FDs, s.FDs)
	p.Children = max(p.Children, s.Children)
}

// readProc reads pid's stats from /proc.
func readProc(pid int) (procStats, error) {
	var s procStats
	if pid <= 0 {
		return s, errors.New("no process")
	}
	rss, err := procfs.StatusKB(pid, "VmRSS")
	if err != nil {
		return s, err
	}
	s.RSSKiB = int64(rss)
	s.FDs, _ = procfs.FDs(pid)
	s.Children = len(procfs.Children(pid))
	return s, nil
}

func loadAverage() [3]float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	f := strings.Fields(string(b))
	for i := range min(3, len(f)) {
		l[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return l
}

// serveProc is a serve started by mcp-load.
type serveProc struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
}

var servingLine = regexp.MustCompile(`serving .* at (http://\S+)`)

// startServe starts serve and waits for the line with its URL; serve's
// stderr goes on to stderr.
func startServe(ctx context.Context, bin string, args []string, stderr io.Writer) (*serveProc, error) {
	if bin == "" {
		if exe, err := os.Executable(); err == nil {
			if p := filepath.Join(filepath.Dir(exe), "mcp-stdio"); fileExists(p) {
				bin = p
			}
		}
		if bin == "" {
			p, err := exec.LookPath("mcp-stdio")
			if err != nil {
				return nil, errors.New("no mcp-stdio binary: build one (go build -o /tmp/mcp-stdio ./cmd/mcp-stdio) and pass --serve /tmp/mcp-stdio, or give --url")
			}
			bin = p
		}
	}
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start serve: %w", err)
	}
	s := &serveProc{cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(pipe)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if m := servingLine.FindStringSubmatch(line); m != nil && !sent {
				found <- m[1]
				sent = true
			}
			fmt.Fprintln(stderr, "serve:", line)
		}
		_ = cmd.Wait()
		if !sent {
			close(found)
		}
	}()
	select {
	case u, ok := <-found:
		if !ok {
			return nil, errors.New("serve ended before it listened (its stderr is above)")
		}
		s.url = u
		return s, nil
	case <-time.After(30 * time.Second):
		s.stop()
		return nil, errors.New("serve did not start listening within 30 s")
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	}
}

// stop ends serve with SIGTERM (SIGKILL 30 s later) and waits for it.
func (s *serveProc) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
