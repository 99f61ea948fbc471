//go:build linux

package main_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// Three serve replicas on 127.0.0.2, 127.0.0.3 and 127.0.0.4 behind a real
// HAProxy and a real nginx running the configurations shipped in deploy/
// (haproxy.cfg, nginx.conf), with only their addresses rewritten
// (deployRewrites). Linux only: other systems route 127.0.0.0/8 beyond
// 127.0.0.1 only where an alias was added.

// replicaHosts are the replicas' loopback addresses; the proxies listen on
// 127.0.0.1.
var replicaHosts = []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}

// replicaWait bounds every wait of these tests.
const replicaWait = 60 * time.Second

// replica is one `mcp-stdio serve` of a replica set.
type replica struct {
	id, addr, admin string // the replica id, its listener and its admin listener (host:port)
	cmd             *exec.Cmd
	log             *transporttest.SyncBuffer
	exited          chan struct{} // closed once cmd has been waited for
	exitErr         error         // set before exited closes
}

// replicaSet is three serve replicas sharing a state key, on one port
// (port) of each of replicaHosts, their admin listeners on another
// (adminPort).
type replicaSet struct {
	replicas        []*replica
	port, adminPort int
	// adminFlag is whether serve has --admin-addr; without it the
	// replicas answer /readyz on their MCP port (--health-path), which
	// is then the port the proxies check.
	adminFlag bool
}

// freePortOn returns a TCP port free on every host at the time of the call.
func freePortOn(t *testing.T, hosts []string) int {
	t.Helper()
	for range 20 {
		ln, err := net.Listen("tcp", net.JoinHostPort(hosts[0], "0"))
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		lns := []net.Listener{ln}
		ok := true
		for _, h := range hosts[1:] {
			l, err := net.Listen("tcp", net.JoinHostPort(h, strconv.Itoa(port)))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, l)
		}
		for _, l := range lns {
			l.Close()
		}
		if ok {
			return port
		}
	}
	t.Fatalf("no port free on all of %v", hosts)
	return 0
}

// startReplicas starts three replicas r0, r1, r2 publishing child (the
// bundled example server when empty), with extra serve flags, and waits
// until each serves.
func startReplicas(t *testing.T, child []string, extra ...string) *replicaSet {
	t.Helper()
	bin := relayBinary(t)
	help, err := exec.Command(bin, "serve", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("serve --help: %v\n%s", err, help)
	}
	rs := &replicaSet{adminFlag: strings.Contains(string(help), "--admin-addr")}
	rs.port = freePortOn(t, replicaHosts)
	rs.adminPort = rs.port
	if rs.adminFlag {
		rs.adminPort = freePortOn(t, replicaHosts)
	}
	key := filepath.Join(t.TempDir(), "state-key")
	if err := os.WriteFile(key, []byte(hex.EncodeToString(randomBytes(t, 32))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, host := range replicaHosts {
		r := &replica{
			id:     "r" + strconv.Itoa(i),
			addr:   net.JoinHostPort(host, strconv.Itoa(rs.port)),
			admin:  net.JoinHostPort(host, strconv.Itoa(rs.adminPort)),
			log:    &transporttest.SyncBuffer{},
			exited: make(chan struct{}),
		}
		args := []string{"serve", "--listen", r.addr, "--replica-id", r.id, "--state-key-file", key}
		if rs.adminFlag {
			args = append(args, "--admin-addr", r.admin)
		} else {
			args = append(args, "--health-path", "/readyz")
		}
		args = append(args, extra...)
		if len(child) > 0 {
			args = append(append(args, "--"), child...)
		}
		r.cmd = exec.Command(bin, args...)
		r.cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
		r.cmd.Stderr = r.log
		urls := r.log.Watch(serveURLLine)
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			r.exitErr = r.cmd.Wait()
			close(r.exited)
		}()
		t.Cleanup(func() {
			_ = r.cmd.Process.Kill()
			<-r.exited
			if t.Failed() {
				t.Logf("replica %s's stderr (last lines):\n%s", r.id, lastLines(r.log.String(), 30))
			}
		})
		urls.Next(t, replicaWait)
		if rs.adminFlag {
			// Ready before a proxy checks it: HAProxy takes a server down
			// at its first failed check, and on a loaded machine the first
			// probe of the server command can outlast that check.
			if status, body := readyz(t, "http://"+r.admin); status != http.StatusOK {
				t.Fatalf("replica %s is not ready: %d %s", r.id, status, body)
			}
		}
		rs.replicas = append(rs.replicas, r)
	}
	return rs
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// The addresses in the shipped configurations, which the tests rewrite:
// the replicas' MCP listeners, their admin port, and where the proxy
// listens.
var (
	deployReplicaAddrs = []string{"10.0.0.10:8080", "10.0.0.11:8080", "10.0.0.12:8080"}
	deployAdminPort    = "port 9090"
	deployListen       = map[string]string{"haproxy.cfg": "bind *:8000", "nginx.conf": "listen 8000;"}
)

// deployConfig reads deploy/NAME and rewrites its addresses for rs and a
// proxy on listen (host:port). Each address it rewrites must be there.
func deployConfig(t *testing.T, name string, rs *replicaSet, listen string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("deploy", name))
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(b)
	rewrite := func(from, to string) {
		if !strings.Contains(cfg, from) {
			t.Fatalf("deploy/%s has no %q to rewrite", name, from)
		}
		cfg = strings.ReplaceAll(cfg, from, to)
	}
	for i, r := range rs.replicas {
		rewrite(deployReplicaAddrs[i], r.addr)
	}
	switch name {
	case "haproxy.cfg":
		rewrite(deployAdminPort, "port "+strconv.Itoa(rs.adminPort))
		rewrite(deployListen[name], "bind "+listen)
	case "nginx.conf":
		rewrite(deployListen[name], "listen "+listen+";")
	}
	return cfg
}

// naiveHashConfig is the control: nginx hashing the Mcp-Session-Id header
// onto the three replicas, the rule most people try first. A request
// without the header (initialize) hashes the empty string.
func naiveHashConfig(rs *replicaSet, listen string) string {
	var servers strings.Builder
	for _, r := range rs.replicas {
		fmt.Fprintf(&servers, "        server %s;\n", r.addr)
	}
	return `worker_processes 1;
events { worker_connections 4096; }
http {
    access_log off;
    upstream mcp {
        hash $http_mcp_session_id consistent;
` + servers.String() + `        keepalive 32;
    }
    server {
        listen ` + listen + `;
        location / {
            proxy_pass http://mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_request_buffering off;
        }
    }
}
`
}

// runningProxy is a proxy process listening at url.
type runningProxy struct {
	name string
	url  string // http://127.0.0.1:PORT
	cmd  *exec.Cmd
}

// proxyBinary returns the path of a proxy's binary, or skips t.
func proxyBinary(t *testing.T, name string) string {
	t.Helper()
	for _, p := range []string{name, "/usr/sbin/" + name, "/usr/local/sbin/" + name} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Skipf("%s is not installed here (.ci/run installs the Debian package with apt-get)", name)
	return ""
}

// startProxy runs haproxy or nginx with the configuration cfg, listening
// on listen, as the current user with its files in a temporary
// directory, and waits until it accepts connections.
func startProxy(t *testing.T, name, cfg, listen string) *runningProxy {
	t.Helper()
	bin := proxyBinary(t, name)
	dir := t.TempDir()
	logFile := filepath.Join(dir, name+".log")
	conf := filepath.Join(dir, name+".conf")
	if err := os.WriteFile(conf, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var cmd *exec.Cmd
	switch name {
	case "haproxy":
		cmd = exec.Command(bin, "-f", conf, "-db")
	case "nginx":
		// The workers of an nginx started as root run as nobody: they
		// must reach the prefix.
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command(bin, "-p", dir, "-c", conf, "-e", logFile,
			"-g", "daemon off; pid "+filepath.Join(dir, "nginx.pid")+";")
	}
	out, err := os.Create(logFile + ".out")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		out.Close()
		if t.Failed() {
			for _, f := range []string{logFile, logFile + ".out"} {
				if b, err := os.ReadFile(f); err == nil && len(b) > 0 {
					t.Logf("%s:\n%s", filepath.Base(f), lastLines(string(b), 30))
				}
			}
		}
	})
	// Wait until it listens.
	deadline := time.Now().Add(replicaWait)
	for {
		c, err := net.DialTimeout("tcp", listen, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logFile + ".out")
			e, _ := os.ReadFile(logFile)
			t.Fatalf("%s exited at start:\n%s%s", name, b, e)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not listen on %s after %v", name, listen, replicaWait)
		}
	}
	return &runningProxy{name: name, url: "http://" + listen, cmd: cmd}
}

// proxyRule is one way of routing sessions to the replicas.
type proxyRule struct {
	label string // as the README's table names it
	name  string // haproxy or nginx
	// config returns the proxy's configuration for rs on listen.
	config func(t *testing.T, rs *replicaSet, listen string) string
	// control marks the rule that misroutes.
	control bool
}

var proxyRules = []proxyRule{
	{
		label: "nginx `hash $http_mcp_session_id consistent` (control)", name: "nginx", control: true,
		config: func(_ *testing.T, rs *replicaSet, listen string) string { return naiveHashConfig(rs, listen) },
	},
	{
		label: "HAProxy stick table learning `Mcp-Session-Id` (deploy/haproxy.cfg)", name: "haproxy",
		config: func(t *testing.T, rs *replicaSet, listen string) string {
			return deployConfig(t, "haproxy.cfg", rs, listen)
		},
	},
	{
		label: "nginx `map` on the replica prefix (deploy/nginx.conf)", name: "nginx",
		config: func(t *testing.T, rs *replicaSet, listen string) string {
			return deployConfig(t, "nginx.conf", rs, listen)
		},
	},
}

// startRule starts the rule's proxy in front of rs.
func (r proxyRule) start(t *testing.T, rs *replicaSet) *runningProxy {
	t.Helper()
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePortOn(t, []string{"127.0.0.1"})))
	return startProxy(t, r.name, r.config(t, rs, listen), listen)
}

// Measurement settings: sessions, follow-ups on each, and clients at once.
const (
	measureSessions = 200
	measureCalls    = 5
	measureClients  = 16
)

// followUpCount is what a measurement saw of the follow-ups.
type followUpCount struct {
	routed, notFound, other atomic.Int64
}

// measureFollowUps opens measureSessions sessions through url by hand
// (initialize, notifications/initialized), sends measureCalls pings on
// each, and DELETEs it; a ping answered 200 was routed to the session's
// replica, one answered 404 to another.
func measureFollowUps(t *testing.T, ctx context.Context, url string) *followUpCount {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: measureClients}, Timeout: replicaWait}
	defer hc.CloseIdleConnections()
	post := func(sid, body string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/mcp", strings.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), nil
	}
	n := &followUpCount{}
	eachSession(t, "session", func(i int) (problem string) {
		status, sid, err := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"replicas","version":"1"}}}`)
		if err != nil || status != http.StatusOK || sid == "" {
			return fmt.Sprintf("initialize: %d %v", status, err)
		}
		_, _, _ = post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		for j := range measureCalls {
			status, _, err := post(sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, j+2))
			switch {
			case err == nil && status == http.StatusOK:
				n.routed.Add(1)
			case err == nil && status == http.StatusNotFound:
				n.notFound.Add(1)
			default:
				n.other.Add(1)
				problem = fmt.Sprintf("ping: %d %v", status, err)
			}
		}
		if req, err := http.NewRequestWithContext(ctx, http.MethodDelete, url+"/mcp", nil); err == nil {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
			if resp, err := hc.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		return problem
	})
	return n
}

// eachSession runs session for each of measureSessions sessions, on
// measureClients workers at once, and fails the test with what each
// reports ("" for nothing), prefixed with what and the session's number.
func eachSession(t *testing.T, what string, session func(i int) (problem string)) {
	t.Helper()
	var problems sync.Map
	work := make(chan int)
	var wg sync.WaitGroup
	for range measureClients {
		wg.Go(func() {
			for i := range work {
				if p := session(i); p != "" {
					problems.Store(i, p)
				}
			}
		})
	}
	for i := range measureSessions {
		work <- i
	}
	close(work)
	wg.Wait()
	problems.Range(func(k, v any) bool {
		t.Errorf("%s %v: %v", what, k, v)
		return true
	})
}

// goSDKCalls opens measureSessions sessions through url with the go-sdk
// client at 2025-11-25 and calls echo measureCalls times on each; it
// returns how many calls were answered with their text.
func goSDKCalls(t *testing.T, ctx context.Context, url string) int64 {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * measureClients}}
	defer hc.CloseIdleConnections()
	client := mcp.NewClient(&mcp.Implementation{Name: "replicas-go-sdk", Version: "1"}, nil)
	var answered atomic.Int64
	eachSession(t, "go-sdk session", func(i int) (problem string) {
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			return "connect: " + err.Error()
		}
		defer cs.Close()
		for j := range measureCalls {
			text := fmt.Sprintf("session %d call %d", i, j)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
			switch {
			case err != nil:
				problem = "call: " + err.Error()
			case resultText(res) != text:
				problem = "call answered " + resultText(res)
			default:
				answered.Add(1)
			}
		}
		return problem
	})
	return answered.Load()
}

// TestReplicasBehindProxies runs three replicas of serve (the bundled
// example server as their child) behind each proxy rule in turn and
// measures, by hand, how many of 200 sessions × 5 follow-ups reach their
// session's replica: all of them through the shipped HAProxy and nginx
// configurations, about a third through the naive hash (the control).
// Through the shipped ones, the go-sdk v1.8.0 client then opens 200
// sessions and makes 5 calls on each: 1000/1000 answered. It logs the
// README's table (go test -v -run TestReplicasBehindProxies).
func TestReplicasBehindProxies(t *testing.T) {
	rs := startReplicas(t, nil, "--max-sessions", "300")
	if !rs.adminFlag {
		t.Log("serve has no --admin-addr yet: the replicas answer /readyz on their MCP port (--health-path)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	total := int64(measureSessions * measureCalls)
	table := []string{"| proxy rule | follow-ups routed |", "|---|---|"}
	for _, rule := range proxyRules {
		t.Run(rule.name+map[bool]string{true: "-naive-hash", false: ""}[rule.control], func(t *testing.T) {
			p := rule.start(t, rs)
			before := rs.sessionsNotFound(t)
			n := measureFollowUps(t, ctx, p.url)
			routed, notFound := n.routed.Load(), n.notFound.Load()
			// The replicas' own count of ids they did not know (the metric
			// an operator watches for misrouting) rises with the misrouted
			// pings (and the misrouted initialized notifications and
			// DELETEs, which the client does not count), and only then.
			if counted := rs.sessionsNotFound(t) - before; rs.adminFlag && (counted < notFound || notFound == 0 && counted != 0) {
				t.Errorf("the replicas counted %d unknown session ids (mcp_stdio_session_not_found_total), the client saw %d 404s", counted, notFound)
			} else if rs.adminFlag {
				t.Logf("%s: the replicas counted %d unknown session ids", rule.label, counted)
			}
			table = append(table, fmt.Sprintf("| %s | %d / %d |", rule.label, routed, total))
			t.Logf("%s: %d/%d follow-ups routed, %d answered 404, %d otherwise", rule.label, routed, total, notFound, n.other.Load())
			if n.other.Load() != 0 {
				t.Errorf("%d follow-ups neither routed nor 404", n.other.Load())
			}
			if rule.control {
				// Every initialize hashes the empty string to one replica;
				// a follow-up lands there about one time in three.
				if routed == total || notFound == 0 || routed+notFound != total {
					t.Errorf("the naive hash routed %d and misrouted %d of %d: the control should misroute", routed, notFound, total)
				}
				return
			}
			if routed != total {
				t.Errorf("%d/%d follow-ups routed, want all", routed, total)
			}
			before = rs.sessionsNotFound(t)
			if got := goSDKCalls(t, ctx, p.url); got != total {
				t.Errorf("go-sdk client: %d/%d calls answered, want all", got, total)
			} else {
				t.Logf("go-sdk v1.8.0 client through %s: %d/%d calls answered", rule.name, got, total)
			}
			if counted := rs.sessionsNotFound(t) - before; counted != 0 {
				t.Errorf("the replicas counted %d unknown session ids behind %s, want none", counted, rule.name)
			}
		})
	}
	t.Logf("200 sessions × 5 follow-ups, three serve replicas:\n%s", strings.Join(table, "\n"))
}

// sessionsNotFound sums mcp_stdio_session_not_found_total over the
// replicas' /metrics; 0 when serve has no admin listener.
func (rs *replicaSet) sessionsNotFound(t *testing.T) int64 {
	t.Helper()
	if !rs.adminFlag {
		return 0
	}
	var n float64
	for _, r := range rs.replicas {
		n += metricValue(scrape(t, "http://"+r.admin), "mcp_stdio_session_not_found_total")
	}
	return int64(n)
}
