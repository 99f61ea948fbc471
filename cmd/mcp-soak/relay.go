//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// host is the local MCP host of the relay soak: it writes requests on the
// relay's stdin and reads everything the relay writes on its stdout.
type host struct {
	t             *tracker
	mu            sync.Mutex // serialises writes to in
	in            io.WriteCloser
	waiting       sync.Map // id (int64) → chan struct{}, closed at its answer
	notifications atomic.Int64
	progress      atomic.Int64
	logs          atomic.Int64
}

func (h *host) send(line string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.in, line+"\n")
	return err
}

// read routes the relay's output until it ends.
func (h *host) read(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		r := gjson.GetManyBytes(sc.Bytes(), "id", "method", "error")
		if r[1].Exists() {
			h.notifications.Add(1)
			switch r[1].Str {
			case "notifications/progress":
				h.progress.Add(1)
			case "notifications/message":
				h.logs.Add(1)
			}
			if r[0].Exists() { // a request of the server's: answer it
				_ = h.send(`{"jsonrpc":"2.0","id":` + r[0].Raw + `,"result":{}}`)
			}
			continue
		}
		if r[0].Type == gjson.Number {
			h.t.answer(r[0].Int(), r[2].Exists(), "line "+sc.Text())
			if c, ok := h.waiting.LoadAndDelete(r[0].Int()); ok {
				close(c.(chan struct{}))
			}
		}
	}
}

// call sends the request body(id) of kind and waits for its answer; with
// cancel, it sends notifications/cancelled after cancelAfter and waits a
// little for an answer that may not come.
func (h *host) call(kind string, cancel bool, body func(id int64) string) {
	id := h.t.start(kind)
	defer h.t.finish(id)
	c := make(chan struct{})
	h.waiting.Store(id, c)
	defer h.waiting.Delete(id)
	if h.send(body(id)) != nil {
		return
	}
	if cancel {
		select {
		case <-c:
			return
		case <-time.After(cancelAfter):
		}
		h.t.cancel(id)
		_ = h.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"soak"}}`, id))
		select {
		case <-c:
		case <-time.After(5 * time.Second):
		}
		return
	}
	select {
	case <-c:
	case <-time.After(callTimeout):
	}
}

// soakRelay runs the relay soak and prints its figures.
func soakRelay(o options) (bool, error) {
	srv, url, err := startServe(o, logPath(o, "relay-remote"))
	if err != nil {
		return false, err
	}
	defer srv.kill()
	cmd := exec.Command(o.bin, "--log-level", "warn", url)
	in, err := cmd.StdinPipe()
	if err != nil {
		return false, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return false, err
	}
	lf, err := os.Create(logPath(o, "relay"))
	if err != nil {
		return false, err
	}
	cmd.Stderr = lf
	g, err := start(cmd, lf)
	if err != nil {
		return false, err
	}
	pid := g.pid()
	h := &host{t: newTracker(), in: in}
	go h.read(out)

	h.call("initialize", false, func(id int64) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"mcp-soak","version":"1"}}}`, id, sessionVersion)
	})
	if err := h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return false, fmt.Errorf("the relay's stdin: %v", err)
	}
	h.call("logging/setLevel", false, func(id int64) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"logging/setLevel","params":{"level":"info"}}`, id)
	})
	h.call("echo", false, func(id int64) string { return callBody(id, "echo", `{"text":"baseline"}`, "") })
	base := settle(pid)

	began := time.Now()
	ctx, stop := context.WithTimeout(context.Background(), o.duration)
	defer stop()
	peak := sample(pid, o.progress, "relay", h.t.progress)
	wg := runFor(ctx, o.workers, func(ctx context.Context) {
		for ctx.Err() == nil {
			switch r := rand.Float64(); {
			case r < 0.05:
				h.call("slow, cancelled", true, func(id int64) string {
					return callBody(id, "slow", `{"seconds":30,"steps":30}`, fmt.Sprintf(`"progressToken":%d`, id))
				})
			case r < 0.30:
				h.call("slow (progress, log)", false, func(id int64) string {
					return callBody(id, "slow", `{"seconds":1,"steps":10}`, fmt.Sprintf(`"progressToken":%d`, id))
				})
			case r < 0.35:
				h.call("tools/list", false, func(id int64) string {
					return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, id)
				})
			default:
				h.call("echo", false, func(id int64) string {
					return callBody(id, "echo", fmt.Sprintf(`{"text":"soak %d"}`, id), "")
				})
			}
			_ = frame.Sleep(ctx, time.Duration(float64(o.think)*(0.5+rand.Float64())))
		}
	})
	warm := afterWarmup(ctx, pid, o.duration)
	<-ctx.Done()
	wg.Wait()
	loadTime := time.Since(began)
	afterLoad := measure(pid)
	time.Sleep(o.idle)
	after := settle(pid)
	peakRSS := peak.end()

	// The end: the host closes stdin; the relay exits.
	_ = in.Close()
	exitCode := -1
	select {
	case <-g.exited:
		exitCode = g.cmd.ProcessState.ExitCode()
	case <-time.After(30 * time.Second):
		g.kill()
	}

	sum, strays := h.t.totals()
	w := os.Stdout
	fmt.Fprintf(w, "\n## relay soak: %v of load (%d workers, think %v), idle %v\n\n", loadTime.Round(time.Second), o.workers, o.think, o.idle)
	fmt.Fprint(w, h.t.table())
	fmt.Fprintf(w, "\nrequests %d (%.0f/s), answered once %d (of which errors %d), cancelled %d (no answer %d), lost %d, duplicated %d, strays %d\n",
		sum.sent, float64(sum.sent)/loadTime.Seconds(), sum.answered, sum.errors, sum.cancelled, sum.cancelNone, sum.lost, sum.dup, strays)
	fmt.Fprintf(w, "notifications received %d (progress %d, notifications/message %d)\n\n", h.notifications.Load(), h.progress.Load(), h.logs.Load())
	fmt.Fprintf(w, "| figure | baseline | after warm-up (%v) | end of load | peak | after idle |\n|---|---|---|---|---|---|\n", warmup(o.duration))
	fmt.Fprintf(w, "| RSS (KiB) | %d | %d | %d | %d | %d |\n", base.rss, warm.rss, afterLoad.rss, peakRSS, after.rss)
	fmt.Fprintf(w, "| open fds | %d | %d | %d | | %d |\n", base.fds, warm.fds, afterLoad.fds, after.fds)
	fmt.Fprintf(w, "| threads | %d | %d | %d | | %d |\n\n", base.threads, warm.threads, afterLoad.threads, after.threads)

	r := &report{w: w, ok: true}
	fmt.Fprintln(w, "| gate | | figures |\n|---|---|---|")
	r.gate("answers", sum.lost == 0 && sum.dup == 0 && strays == 0 && sum.sent > 0,
		"%d requests: %d lost, %d duplicated, %d strays (cancelled: %d, %d of them unanswered)", sum.sent, sum.lost, sum.dup, strays, sum.cancelled, sum.cancelNone)
	r.gate("rss", warm.rss > 0 && float64(after.rss) <= o.rssFactor*float64(warm.rss),
		"%d KiB after idle ≤ %.2f × %d KiB after warm-up (%.2f×)", after.rss, o.rssFactor, warm.rss, float64(after.rss)/float64(max(warm.rss, 1)))
	// The relay keeps an idle connection to its server, for reuse, for
	// each request it had in flight at once: up to one per worker, however
	// many there were at the end of the warm-up. A descriptor leaked per
	// request would pass that bound within the first seconds of load.
	r.gate("fds", after.fds <= base.fds+int64(o.workers)+o.fdSlack, "%d after idle ≤ %d baseline + %d workers + %d (after warm-up %d; the relay keeps an idle connection to the server per request it had in flight at once)", after.fds, base.fds, o.workers, o.fdSlack, warm.fds)
	r.gate("threads", after.threads <= max(base.threads, warm.threads)+o.threadSlack, "%d after idle ≤ %d after warm-up + %d (Go keeps the threads it made)", after.threads, max(base.threads, warm.threads), o.threadSlack)
	r.gate("exit", exitCode == 0, "the relay's exit status at the end of its stdin: %d", exitCode)
	fmt.Fprintf(w, "\nthe relay's log: %s; the remote serve's: %s\n", lf.Name(), srv.logf.Name())
	return r.ok, nil
}
