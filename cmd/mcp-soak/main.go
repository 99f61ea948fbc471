//go:build linux

package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"
)

// options are the command's flags.
type options struct {
	bin             string
	mode            string
	duration        time.Duration
	idle            time.Duration
	modern          int
	sessions        int
	sse             int
	workers         int
	think           time.Duration
	crashEvery      time.Duration
	rssFactor       float64
	fdSlack         int64
	threadSlack     int64
	pooled          int
	log             string
	sessionCalls    int
	sseCalls        int
	extraServeFlags string
	progress        time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "", "the mcp-stdio binary (required)")
	flag.StringVar(&o.mode, "mode", "serve", "serve or relay")
	flag.DurationVar(&o.duration, "duration", time.Minute, "how long the load runs")
	flag.DurationVar(&o.idle, "idle", time.Minute, "how long the process stays idle after the load before it is measured")
	flag.IntVar(&o.modern, "modern", 200, "serve: concurrent 2026-07-28 clients")
	flag.IntVar(&o.sessions, "sessions", 20, "serve: concurrent session-era clients")
	flag.IntVar(&o.sse, "sse", 10, "serve: concurrent HTTP+SSE clients")
	flag.IntVar(&o.sessionCalls, "session-calls", 40, "serve: calls per session before its DELETE")
	flag.IntVar(&o.sseCalls, "sse-calls", 40, "serve: calls per HTTP+SSE stream before it is closed")
	flag.IntVar(&o.workers, "workers", 16, "relay: concurrent callers on the relay's stdin")
	flag.DurationVar(&o.think, "think", 500*time.Millisecond, "each client's pause between calls (0.5–1.5× at random; relay: default 100ms)")
	flag.DurationVar(&o.crashEvery, "crash-every", 20*time.Second, "serve: kill a random child server process this often (0 = never)")
	flag.Float64Var(&o.rssFactor, "rss-factor", 1.5, "gate: RSS after the load and the idle at most this times RSS after the warm-up")
	flag.Int64Var(&o.fdSlack, "fd-slack", 4, "gate: open fds after the idle at most the baseline plus this")
	flag.Int64Var(&o.threadSlack, "thread-slack", 4, "gate: threads after the idle at most the baseline plus this")
	flag.IntVar(&o.pooled, "pooled", 1, "serve: child server processes allowed after the idle (the pooled 2026-07-28 child)")
	flag.StringVar(&o.log, "log", "", "write the gateway's stderr to this file (default: a file in the temporary directory)")
	flag.DurationVar(&o.progress, "progress", 5*time.Minute, "print the figures so far on stderr this often (0 = never)")
	flag.StringVar(&o.extraServeFlags, "serve-flags", "", "serve: more flags for serve, space-separated")
	flag.Parse()
	if o.bin == "" || (o.mode != "serve" && o.mode != "relay") {
		fmt.Fprintln(os.Stderr, "mcp-soak: give -bin PATH (a built mcp-stdio) and -mode serve or relay")
		os.Exit(2)
	}
	var ok bool
	var err error
	thinkSet := false
	flag.Visit(func(f *flag.Flag) { thinkSet = thinkSet || f.Name == "think" })
	if o.mode == "relay" && !thinkSet {
		o.think = 100 * time.Millisecond
	}
	if o.mode == "serve" {
		ok, err = soakServe(o)
	} else {
		ok, err = soakRelay(o)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcp-soak: %v\n", err)
		os.Exit(2)
	}
	if !ok {
		fmt.Println("FAIL")
		os.Exit(1)
	}
	fmt.Println("PASS")
}

// warmup is how long the load runs before RSS is taken as the reference.
func warmup(d time.Duration) time.Duration {
	return min(max(d/6, 10*time.Second), 5*time.Minute)
}

// afterWarmup returns pid's figures once a load of duration d has run
// for its warm-up, or zero figures when ctx ends first.
func afterWarmup(ctx context.Context, pid int, d time.Duration) figures {
	select {
	case <-time.After(warmup(d)):
		return measure(pid)
	case <-ctx.Done():
		return figures{}
	}
}

// gateway is a started mcp-stdio process.
type gateway struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // Wait's, once exited is closed
	logf   *os.File
}

var serveURLLine = regexp.MustCompile(`serving .* at (http://\S+)$`)

// startServe runs `mcp-stdio serve` on a free loopback port and returns it
// with its URL once it listens.
func startServe(o options, logPath string) (*gateway, string, error) {
	args := []string{"serve", "--listen", "127.0.0.1:0", "--log-level", "warn"}
	args = append(args, strings.Fields(o.extraServeFlags)...)
	cmd := exec.Command(o.bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, "", err
	}
	f, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	g, err := start(cmd, f)
	if err != nil {
		return nil, "", err
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(g.logf, line)
			if m := serveURLLine.FindStringSubmatch(line); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case u := <-urls:
		return g, u, nil
	case <-g.exited:
		return nil, "", fmt.Errorf("serve exited before listening (%v); see %s", g.err, g.logf.Name())
	case <-time.After(30 * time.Second):
		g.kill()
		return nil, "", fmt.Errorf("serve printed no URL in 30s; see %s", g.logf.Name())
	}
}

// start starts cmd, whose stderr goes (or is copied) to f.
func start(cmd *exec.Cmd, f *os.File) (*gateway, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g := &gateway{cmd: cmd, exited: make(chan struct{}), logf: f}
	go func() {
		g.err = cmd.Wait()
		close(g.exited)
	}()
	return g, nil
}

func (g *gateway) pid() int { return g.cmd.Process.Pid }

func (g *gateway) kill() {
	_ = g.cmd.Process.Kill()
	<-g.exited
}

// figures are one measurement of a process.
type figures struct {
	rss, fds, threads int64
}

func measure(pid int) figures {
	return figures{rss: rssKiB(pid), fds: fds(pid), threads: threads(pid)}
}

// settle measures pid until two measurements a second apart agree on fds
// and threads (connections being closed, goroutines ending), at most for
// 10 s, and returns the last.
func settle(pid int) figures {
	prev := measure(pid)
	for range 10 {
		time.Sleep(time.Second)
		now := measure(pid)
		if now.fds == prev.fds && now.threads == prev.threads {
			return now
		}
		prev = now
	}
	return prev
}

// sampler records the peak RSS of pid until stopped.
type sampler struct {
	mu   sync.Mutex
	peak int64
	stop chan struct{}
	done chan struct{}
}

// Every progress (if not 0) it prints a line on stderr: the figures of
// pid and what status returns.
func sample(pid int, progress time.Duration, name string, status func() string) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	began := time.Now()
	next := began.Add(progress)
	go func() {
		defer close(s.done)
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			if r := rssKiB(pid); r > 0 {
				s.mu.Lock()
				s.peak = max(s.peak, r)
				s.mu.Unlock()
			}
			if progress > 0 && time.Now().After(next) {
				next = next.Add(progress)
				f := measure(pid)
				fmt.Fprintf(os.Stderr, "mcp-soak %s: %v: RSS %d KiB, %d fds, %d threads; %s\n",
					name, time.Since(began).Round(time.Second), f.rss, f.fds, f.threads, status())
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) end() int64 {
	close(s.stop)
	<-s.done
	return s.peak
}

// report prints the gates, each with its figures, and returns whether all
// passed.
type report struct {
	w  io.Writer
	ok bool
}

func (r *report) gate(name string, pass bool, format string, args ...any) {
	verdict := "pass"
	if !pass {
		verdict = "FAIL"
		r.ok = false
	}
	fmt.Fprintf(r.w, "| %-10s | %-4s | %s |\n", name, verdict, fmt.Sprintf(format, args...))
}

func logPath(o options, name string) string {
	if o.log != "" {
		return o.log
	}
	return fmt.Sprintf("%s/mcp-soak-%s-%d.log", os.TempDir(), name, os.Getpid())
}

// runFor runs f in n goroutines until ctx ends and waits for them.
func runFor(ctx context.Context, n int, f func(context.Context)) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { f(ctx) })
	}
	return &wg
}
