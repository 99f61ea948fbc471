//go:build linux

package main_test

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// Chaos settings: clients at once (modern ones; session-era ones behind
// the relay, in the session era and bridged to 2026-07-28), and the calls
// answered between the steps.
const (
	chaosModernClients  = 48
	chaosSessionClients = 16
	chaosBridgedClients = 8
	chaosCallsPerStep   = 400
	chaosDrainTimeout   = 5 * time.Second
)

// chaosTally counts what the clients of one kind saw.
type chaosTally struct {
	ok, failed atomic.Int64
	// cut counts the session-era calls the relay reported cut mid-answer
	// by the SIGKILL (see cutMidAnswer).
	cut  atomic.Int64
	mu   sync.Mutex
	errs []string // the first few failures
}

// cutMidAnswer reports whether err is the relay's report of a tools/call
// whose answer stream had begun on a replica that then died: resuming the
// stream got 404 (the session is gone with its replica), and the relay
// does not send a tools/call again once the server may have run it.
func cutMidAnswer(err error) bool {
	return strings.Contains(err.Error(), "stream ended before the response; resuming it failed: HTTP 404")
}

func (c *chaosTally) fail(format string, args ...any) {
	c.failed.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.errs) < 10 {
		c.errs = append(c.errs, fmt.Sprintf(format, args...))
	}
}

// callCounter tells when the clients together have made n more calls.
type callCounter struct {
	n       atomic.Int64
	mu      sync.Mutex
	waiters map[int64]chan struct{}
}

func (c *callCounter) add() {
	n := c.n.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	for at, ch := range c.waiters {
		if n >= at {
			close(ch)
			delete(c.waiters, at)
		}
	}
}

// await waits until more calls than now+n have been answered.
func (c *callCounter) await(t *testing.T, n int64) {
	t.Helper()
	c.mu.Lock()
	at := c.n.Load() + n
	ch := make(chan struct{})
	if c.waiters == nil {
		c.waiters = map[int64]chan struct{}{}
	}
	if old, ok := c.waiters[at]; ok {
		ch = old
	} else {
		c.waiters[at] = ch
	}
	c.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(3 * replicaWait):
		t.Fatalf("the clients made fewer than %d calls in %v", n, 3*replicaWait)
	}
}

// TestReplicasSurviveSIGTERMAndSIGKILL runs 72 clients through each
// shipped proxy configuration (deploy/haproxy.cfg, deploy/nginx.conf) in
// front of three replicas: 48 at 2026-07-28 (the go-sdk client straight
// to the proxy), 16 of the session era (the go-sdk client at 2025-11-25
// behind the relay, --era session) and 8 of the session era bridged to
// 2026-07-28 (behind the relay, --era modern), each calling echo in a
// loop. One replica gets SIGTERM: it drains (its /readyz turns 503, which
// HAProxy acts on; its open sessions and 2026-07-28 requests are still
// served; once the drain is over it takes nothing new: 404 for a
// session, 503 otherwise, which both proxies retry elsewhere) and exits
// 0. Later another gets SIGKILL. No 2026-07-28 call fails (the proxy
// retries elsewhere what a dead replica never answered); no session-era
// call fails either (the relay initializes a new session when its
// session's replica is gone, a 404, and sends the call again), but one
// whose answer stream the killed replica had begun (its header goes out
// after HeaderHold, 10 ms, without an answer): the relay cannot resume
// it, since the session went with the replica, and does not send a
// tools/call again once the server may have run it, so it reports the
// call cut (at most one a client, and only after the SIGKILL). No
// process of either replica's servers remains.
func TestReplicasSurviveSIGTERMAndSIGKILL(t *testing.T) {
	for _, rule := range proxyRules {
		if rule.control {
			continue
		}
		t.Run(rule.name, func(t *testing.T) { replicasSurviveSIGTERMAndSIGKILL(t, rule) })
	}
}

func replicasSurviveSIGTERMAndSIGKILL(t *testing.T, rule proxyRule) {
	rs := startReplicas(t, nil, "--log-level", "debug", "--drain-timeout", chaosDrainTimeout.String())
	p := rule.start(t, rs)
	bin := relayBinary(t)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var modern, session chaosTally
	var calls callCounter
	var killed atomic.Bool // the SIGKILL has been sent
	var wg sync.WaitGroup
	hc := newChaosHTTPClient()
	defer hc.CloseIdleConnections()
	client := mcp.NewClient(&mcp.Implementation{Name: "chaos", Version: "1"}, nil)
	loop := func(kind string, tally *chaosTally, cs *mcp.ClientSession, i int) {
		defer cs.Close()
		for j := 0; ctx.Err() == nil; j++ {
			text := fmt.Sprintf("%s %d call %d", kind, i, j)
			cctx, ccancel := context.WithTimeout(ctx, replicaWait)
			res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
			ccancel()
			switch {
			case ctx.Err() != nil:
				return
			case err != nil && kind == "session" && killed.Load() && cutMidAnswer(err):
				tally.cut.Add(1)
			case err != nil:
				tally.fail("%s: %v", text, err)
			case resultText(res) != text:
				tally.fail("%s: answered %s", text, resultText(res))
			default:
				tally.ok.Add(1)
				calls.add()
			}
		}
	}
	for i := range chaosModernClients {
		cctx, ccancel := context.WithTimeout(ctx, replicaWait)
		cs, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", HTTPClient: hc}, nil)
		ccancel()
		if err != nil {
			t.Fatalf("modern client %d: %v", i, err)
		}
		wg.Go(func() { loop("modern", &modern, cs, i) })
	}
	var bridged chaosTally
	relayClients := func(kind, era string, n int, tally *chaosTally) {
		for i := range n {
			relay := exec.Command(bin, "--era", era, p.url+"/mcp")
			cctx, ccancel := context.WithTimeout(ctx, replicaWait)
			cs, err := client.Connect(cctx, &mcp.CommandTransport{Command: relay}, &mcp.ClientSessionOptions{ProtocolVersion: clientVersion})
			ccancel()
			if err != nil {
				t.Fatalf("%s client %d: %v", kind, i, err)
			}
			wg.Go(func() { loop(kind, tally, cs, i) })
		}
	}
	relayClients("session", "session", chaosSessionClients, &session)
	relayClients("bridged", "modern", chaosBridgedClients, &bridged)
	defer func() { cancel(); wg.Wait() }()

	calls.await(t, chaosCallsPerStep)
	term, kill := rs.replicas[0], rs.replicas[1]
	t.Logf("SIGTERM to replica %s after %d calls", term.id, calls.n.Load())
	if err := term.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	calls.await(t, chaosCallsPerStep)
	select {
	case <-term.exited:
		if term.exitErr != nil {
			t.Errorf("replica %s on SIGTERM: %v, want exit status 0", term.id, term.exitErr)
		}
	case <-time.After(chaosDrainTimeout + 2*replicaWait):
		t.Fatalf("replica %s still runs %v after SIGTERM", term.id, chaosDrainTimeout+2*replicaWait)
	}
	t.Logf("replica %s exited; SIGKILL to replica %s after %d calls", term.id, kill.id, calls.n.Load())
	killed.Store(true)
	if err := kill.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-kill.exited
	calls.await(t, chaosCallsPerStep)
	cancel()
	wg.Wait()

	for _, k := range []struct {
		what  string
		tally *chaosTally
	}{
		{"2026-07-28 calls", &modern},
		{"session-era calls behind the relay", &session},
		{"session-era calls bridged to 2026-07-28 by the relay", &bridged},
	} {
		t.Logf("%s: %d answered, %d failed, %d cut mid-answer by the SIGKILL", k.what, k.tally.ok.Load(), k.tally.failed.Load(), k.tally.cut.Load())
		if cut := k.tally.cut.Load(); cut > chaosSessionClients {
			t.Errorf("%d %s cut mid-answer by the SIGKILL, want at most one a client (%d)", cut, k.what, chaosSessionClients)
		}
		if k.tally.failed.Load() != 0 {
			t.Errorf("%d %s failed, want none; first ones:\n%v", k.tally.failed.Load(), k.what, k.tally.errs)
		}
		if k.tally.ok.Load() == 0 {
			t.Errorf("no %s were answered", k.what)
		}
	}
	// No process of the ended replicas' servers remains.
	for _, r := range []*replica{term, kill} {
		for _, m := range serverLine.FindAllStringSubmatch(r.log.String(), -1) {
			for _, s := range m[1:] {
				if pid, _ := strconv.Atoi(s); pid > 0 && !transporttest.ProcessGone(t, pid, serveProcWait) {
					t.Errorf("process %d of replica %s's servers still runs after the replica ended", pid, r.id)
				}
			}
		}
	}
}

// newChaosHTTPClient is the modern clients' HTTP client: connections kept
// for all of them.
func newChaosHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: chaosModernClients}}
}

// Behind the shipped nginx configuration, a request of a session whose
// replica is gone gets 404 and a JSON-RPC error (nginx's own 502 mapped),
// the answer a client starts a new session on; a new session, which has
// no replica yet, opens on another replica.
func TestNginxAnswers404ForASessionWhoseReplicaIsGone(t *testing.T) {
	rs := startReplicas(t, nil)
	var rule proxyRule
	for _, r := range proxyRules {
		if r.name == "nginx" && !r.control {
			rule = r
		}
	}
	p := rule.start(t, rs)
	// A gateway's client, sent through the proxy.
	g := &servedGateway{url: p.url + "/mcp", client: &http.Client{Transport: &http.Transport{}, Timeout: replicaWait}}
	defer g.client.CloseIdleConnections()
	sid := g.initialize(t)
	var home *replica
	for _, r := range rs.replicas {
		if strings.HasPrefix(sid, r.id+".") {
			home = r
		}
	}
	if home == nil {
		t.Fatalf("session id %q names no replica", sid)
	}
	if err := home.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-home.exited

	status, answer, _ := g.post(t, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if status != http.StatusNotFound || answer != `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"session not found: its replica is unreachable"}}` {
		t.Errorf("a request of the killed replica's session: %d %s, want 404 and a JSON-RPC error", status, answer)
	}
	if again := g.initialize(t); strings.HasPrefix(again, home.id+".") {
		t.Errorf("a new session opened on the killed replica %s: %q", home.id, again)
	}
}
