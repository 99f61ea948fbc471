//go:build linux

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// soakServe runs the serve soak and prints its figures.
func soakServe(o options) (bool, error) {
	g, url, err := startServe(o, logPath(o, "serve"))
	if err != nil {
		return false, err
	}
	defer func() {
		select {
		case <-g.exited:
		default:
			g.kill()
		}
	}()
	pid := g.pid()
	hc := &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: o.modern + o.sessions*2 + o.sse*2,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
	}}
	l := &load{url: url, sseURL: strings.TrimSuffix(url, "/mcp") + "/sse", hc: hc, t: newTracker(), think: o.think}

	// The baseline: one 2026-07-28 call (the pooled child started), then
	// quiet.
	id := l.t.start("2026-07-28 echo")
	l.post(context.Background(), url, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"},
		id, callBody(id, "echo", `{"text":"baseline"}`, modernMeta))
	l.t.finish(id)
	hc.CloseIdleConnections()
	base := settle(pid)
	baseKids := len(servers(descendants(pid)))

	began := time.Now()
	ctx, stop := context.WithTimeout(context.Background(), o.duration)
	defer stop()
	peak := sample(pid, o.progress, "serve", l.t.progress)
	var wgs []*sync.WaitGroup
	wgs = append(wgs, runFor(ctx, o.modern, l.modernClient))
	wgs = append(wgs, runFor(ctx, o.sessions, func(ctx context.Context) { l.sessionClient(ctx, o.sessionCalls) }))
	wgs = append(wgs, runFor(ctx, o.sse, func(ctx context.Context) { l.sseClient(ctx, o.sseCalls) }))
	kills := 0
	crashDone := make(chan struct{})
	go func() {
		defer close(crashDone)
		if o.crashEvery <= 0 {
			return
		}
		t := time.NewTicker(o.crashEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			kids := servers(descendants(pid))
			if len(kids) == 0 {
				continue
			}
			k := kids[rand.IntN(len(kids))]
			if syscall.Kill(k.pid, syscall.SIGKILL) == nil {
				kills++
			}
		}
	}()
	warm := afterWarmup(ctx, pid, o.duration)
	<-ctx.Done()
	<-crashDone
	for _, wg := range wgs {
		wg.Wait()
	}
	loadTime := time.Since(began)
	afterLoad := measure(pid)
	hc.CloseIdleConnections()
	time.Sleep(o.idle)
	after := settle(pid)
	peakRSS := peak.end()
	kids := descendants(pid)
	left := servers(kids)

	// The end: SIGHUP, then SIGTERM.
	_ = syscall.Kill(pid, syscall.SIGHUP)
	time.Sleep(2 * time.Second)
	aliveAfterHUP := true
	select {
	case <-g.exited:
		aliveAfterHUP = false
	default:
	}
	kids = append(kids, descendants(pid)...)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	exitCode := -1
	select {
	case <-g.exited:
		exitCode = g.cmd.ProcessState.ExitCode()
	case <-time.After(60 * time.Second):
	}
	var survivors []string
	deadline := time.Now().Add(15 * time.Second)
	for {
		survivors = survivors[:0]
		for _, k := range kids {
			if alive(k) {
				survivors = append(survivors, fmt.Sprintf("%d %s", k.pid, k.cmdline))
			}
		}
		if len(survivors) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}

	sum, strays := l.t.totals()
	w := os.Stdout
	fmt.Fprintf(w, "\n## serve soak: %v of load (%d 2026-07-28 clients, %d session-era clients, %d HTTP+SSE clients, think %v), idle %v\n\n",
		loadTime.Round(time.Second), o.modern, o.sessions, o.sse, o.think, o.idle)
	fmt.Fprint(w, l.t.table())
	var statuses []string
	l.statuses.Range(func(k, v any) bool {
		statuses = append(statuses, fmt.Sprintf("%d×%d", v.(interface{ Load() int64 }).Load(), k))
		return true
	})
	fmt.Fprintf(w, "\nrequests %d (%.0f/s), answered once %d (of which errors %d), cancelled %d (no answer %d), lost %d, duplicated %d, strays %d\n",
		sum.sent, float64(sum.sent)/loadTime.Seconds(), sum.answered, sum.errors, sum.cancelled, sum.cancelNone, sum.lost, sum.dup, strays)
	fmt.Fprintf(w, "error statuses: %s; transport errors %d; notifications received %d\n", orNone(statuses), l.transportErrs.Load(), l.notifications.Load())
	fmt.Fprintf(w, "sessions opened %d, DELETEs answered 2xx %d (failed %d); HTTP+SSE streams %d; streams refused %d; child processes killed %d\n\n",
		l.sessions.Load(), l.deletes.Load(), l.deleteFailed.Load(), l.sseStreams.Load(), l.streamsFailed.Load(), kills)
	fmt.Fprintf(w, "| figure | baseline | after warm-up (%v) | end of load | peak | after idle |\n|---|---|---|---|---|---|\n", warmup(o.duration))
	fmt.Fprintf(w, "| RSS (KiB) | %d | %d | %d | %d | %d |\n", base.rss, warm.rss, afterLoad.rss, peakRSS, after.rss)
	fmt.Fprintf(w, "| open fds | %d | %d | %d | | %d |\n", base.fds, warm.fds, afterLoad.fds, after.fds)
	fmt.Fprintf(w, "| threads | %d | %d | %d | | %d |\n", base.threads, warm.threads, afterLoad.threads, after.threads)
	fmt.Fprintf(w, "| child servers | %d | | | | %d |\n\n", baseKids, len(left))

	r := &report{w: w, ok: true}
	fmt.Fprintln(w, "| gate | | figures |\n|---|---|---|")
	r.gate("answers", sum.lost == 0 && sum.dup == 0 && strays == 0 && sum.sent > 0,
		"%d requests: %d lost, %d duplicated, %d strays (cancelled: %d, %d of them unanswered)", sum.sent, sum.lost, sum.dup, strays, sum.cancelled, sum.cancelNone)
	r.gate("rss", warm.rss > 0 && float64(after.rss) <= o.rssFactor*float64(warm.rss),
		"%d KiB after idle ≤ %.2f × %d KiB after warm-up (%.2f×)", after.rss, o.rssFactor, warm.rss, float64(after.rss)/float64(max(warm.rss, 1)))
	r.gate("fds", after.fds <= base.fds+o.fdSlack, "%d after idle ≤ %d baseline + %d", after.fds, base.fds, o.fdSlack)
	r.gate("threads", after.threads <= max(base.threads, warm.threads)+o.threadSlack, "%d after idle ≤ %d after warm-up + %d (Go keeps the threads it made)", after.threads, max(base.threads, warm.threads), o.threadSlack)
	r.gate("children", len(left) <= o.pooled, "%d child servers after idle ≤ %d pooled %s", len(left), o.pooled, procList(left))
	r.gate("sighup", true, "serve after SIGHUP: %s", map[bool]string{true: "still running (draining or not)", false: "exited"}[aliveAfterHUP])
	r.gate("sigterm", exitCode == 0, "serve's exit status %d (-1: still running 60 s after SIGTERM, or killed by a signal: %v)", exitCode, g.err)
	r.gate("leftovers", len(survivors) == 0, "%d of serve's processes left after its exit %s", len(survivors), strings.Join(survivors, "; "))
	fmt.Fprintf(w, "\nserve's log: %s\n", g.logf.Name())
	return r.ok, nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func procList(ps []proc) string {
	if len(ps) == 0 {
		return ""
	}
	var s []string
	for _, p := range ps {
		s = append(s, fmt.Sprint(p.pid))
	}
	return "(" + strings.Join(s, ", ") + ")"
}
