//go:build linux

package main_test

import (
	"bytes"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-stdio/mcp-stdio/cmd/internal/procfs"
	"github.com/mcp-stdio/mcp-stdio/frame"
)

// The drain of `mcp-stdio serve`, the built binary, on SIGTERM.

var drainStartedLine = regexp.MustCompile(`msg="drain started`)

// drainChild is the server the drain tests publish: a shell that starts a
// grandchild in its process group, then execs the bundled example server.
func drainChild(bin string) []string {
	return []string{"--", "sh", "-c", `sleep 300 </dev/null >/dev/null 2>&1 & echo "grandchild=$!" >&2; exec "$0" example-server`, bin}
}

// askInFlight opens a session and starts a tools/call of the example
// server's ask, which waits for its client to answer the elicitation it
// sends; it returns the session, the call's event stream and the id of
// the elicitation request.
func askInFlight(t *testing.T, g *servedGateway) (sid string, stream *http.Response, events *frame.SSEReader, elicitID frame.ID) {
	t.Helper()
	status, answer, sid := g.post(t, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"e2e","version":"1"}}}`)
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", status, answer)
	}
	if status, _, _ := g.post(t, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("initialized: %d", status)
	}
	req, _ := http.NewRequest(http.MethodPost, g.url, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{"question":"your name?"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	stream, err := g.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stream.Body.Close() })
	events = frame.NewSSEReader(stream.Body, 0)
	ev, err := events.Next()
	if err != nil {
		t.Fatalf("the ask call's stream: %v", err)
	}
	m := frame.MustParse(string(ev.Data))
	if m.Method() != "elicitation/create" {
		t.Fatalf("the ask call sent %s, want elicitation/create", m)
	}
	return sid, stream, events, m.ID()
}

// processGroup returns the process group of pid, from /proc.
func processGroup(t *testing.T, pid int) int {
	t.Helper()
	pgrp, ok := procGroup(pid)
	if !ok {
		t.Fatalf("no process %d", pid)
	}
	return pgrp
}

// procGroup reads the process group from /proc/PID/stat; a zombie (dead,
// not yet reaped by its parent, which may be an init that reaps late) has
// none.
func procGroup(pid int) (int, bool) {
	st, err := procfs.ReadStat(pid)
	if err != nil || st.State == 'Z' {
		return 0, false
	}
	return st.PGRP, true
}

// groupMembers returns the pids of the live processes in group pgrp.
func groupMembers(pgrp int) []int {
	var pids []int
	for _, pid := range procfs.PIDs() {
		if g, ok := procGroup(pid); ok && g == pgrp {
			pids = append(pids, pid)
		}
	}
	return pids
}

// awaitExit waits for serve to exit, within bound, and returns its error.
func awaitExit(t *testing.T, g *servedGateway, bound time.Duration) error {
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- g.cmd.Wait() }()
	select {
	case err := <-exited:
		return err
	case <-time.After(bound):
		t.Fatalf("serve did not exit within %s", bound)
		return nil
	}
}

// On SIGTERM serve drains: the call in flight (waiting for its client)
// still gets its client's answer and finishes with its result, a new
// initialize meanwhile gets 503 with Retry-After; then serve exits 0 well
// within its bound, and no process of the server's process group is left
// (the server and the grandchild it started).
func TestServeDrainOnSIGTERM(t *testing.T) {
	bin := relayBinary(t)
	const drainTimeout, termGrace = 10 * time.Second, 2 * time.Second
	g := startServe(t, append([]string{"--drain-timeout", drainTimeout.String(), "--term-grace", termGrace.String()}, drainChild(bin)...)...)
	started := g.stderr.Watch(serverLine)
	grandchildren := g.stderr.Watch(grandchildLine)
	draining := g.stderr.Watch(drainStartedLine)
	sid, _, events, elicitID := askInFlight(t, g)
	procs := serverProcs(t, started)
	procs["grandchild"], _ = strconv.Atoi(grandchildren.Next(t, serveProcWait)[1])
	checkRunning(t, procs)
	pgrp := processGroup(t, procs["server"])
	if g := processGroup(t, procs["grandchild"]); g != pgrp {
		t.Fatalf("the grandchild is in group %d, the server in %d", g, pgrp)
	}

	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	draining.Next(t, serveProcWait)

	// A new session is refused, with Retry-After.
	req, _ := http.NewRequest(http.MethodPost, g.url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"late","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(body.String(), `"id":7,"error":{"code":-32000,"message":"the gateway is draining`) {
		t.Errorf("a new initialize while draining got %d, Retry-After %q, %s; want 503, Retry-After and a -32000 naming the drain", resp.StatusCode, resp.Header.Get("Retry-After"), &body)
	}

	// The call in flight gets its client's answer and finishes.
	if status, answer, _ := g.post(t, sid, `{"jsonrpc":"2.0","id":`+string(elicitID)+`,"result":{"action":"accept","content":{"answer":"Ada"}}}`); status != http.StatusAccepted {
		t.Fatalf("the elicitation's answer got %d %s", status, answer)
	}
	ev, err := events.Next()
	if err != nil {
		t.Fatalf("the ask call's stream ended without its result: %v", err)
	}
	if m := frame.MustParse(string(ev.Data)); m.ID() != "2" || m.Kind() != frame.Result || !strings.Contains(m.String(), "Ada") {
		t.Errorf("the ask call ended with %s, want its result", m)
	}

	bound := drainTimeout + termGrace + 2*time.Second
	if err := awaitExit(t, g, bound); err != nil {
		t.Errorf("serve after SIGTERM: %v, want exit 0", err)
	}
	if took := time.Since(signalled); took > bound {
		t.Errorf("serve took %s to exit, more than %s", took, bound)
	}
	checkGone(t, procs, "after serve drained and exited")
	if left := groupMembers(pgrp); len(left) > 0 {
		t.Errorf("processes %v of the server's group %d are left", left, pgrp)
	}
	if !regexp.MustCompile(`msg="drain ended" .*outcome=idle in_flight=0`).MatchString(g.stderr.String()) {
		t.Errorf("no drain-ended line with outcome=idle")
	}
	if strings.Contains(g.stderr.String(), sid) {
		t.Errorf("serve's log names the session id")
	}
}

// A second SIGTERM during the drain ends it at once: the call in flight is
// answered with an error, the children are stopped, and serve exits 0 —
// long before a drain timeout of an hour.
func TestServeSecondSIGTERMEndsTheDrain(t *testing.T) {
	secondSignalEndsTheDrain(t, syscall.SIGTERM, syscall.SIGTERM)
}

// SIGHUP (the terminal serve runs in closed) starts the drain as SIGTERM
// does, and a SIGTERM after it ends the drain at once: serve exits 0 with
// no process of its server left.
func TestServeSIGHUPThenSIGTERM(t *testing.T) {
	secondSignalEndsTheDrain(t, syscall.SIGHUP, syscall.SIGTERM)
}

func secondSignalEndsTheDrain(t *testing.T, first, second syscall.Signal) {
	bin := relayBinary(t)
	g := startServe(t, append([]string{"--drain-timeout", "1h"}, drainChild(bin)...)...)
	started := g.stderr.Watch(serverLine)
	grandchildren := g.stderr.Watch(grandchildLine)
	draining := g.stderr.Watch(drainStartedLine)
	_, _, events, _ := askInFlight(t, g)
	procs := serverProcs(t, started)
	procs["grandchild"], _ = strconv.Atoi(grandchildren.Next(t, serveProcWait)[1])
	pgrp := processGroup(t, procs["server"])

	if err := g.cmd.Process.Signal(first); err != nil {
		t.Fatal(err)
	}
	draining.Next(t, serveProcWait)
	if err := g.cmd.Process.Signal(second); err != nil {
		t.Fatal(err)
	}
	if err := awaitExit(t, g, serveProcWait); err != nil {
		t.Errorf("serve after %v then %v: %v, want exit 0", first, second, err)
	}
	if ev, err := events.Next(); err == nil && !strings.Contains(string(ev.Data), `"id":2,"error"`) {
		t.Errorf("the call in flight got %s, want an error or the end of its stream", ev.Data)
	}
	checkGone(t, procs, "after serve exited")
	if left := groupMembers(pgrp); len(left) > 0 {
		t.Errorf("processes %v of the server's group %d are left", left, pgrp)
	}
	if !regexp.MustCompile(`msg="drain ended" .*outcome=interrupted`).MatchString(g.stderr.String()) {
		t.Errorf("no drain-ended line with outcome=interrupted")
	}
}
