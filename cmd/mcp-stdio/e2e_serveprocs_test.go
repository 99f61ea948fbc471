//go:build linux

package main_test

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// The processes of `mcp-stdio serve`, the built binary, and of the servers
// it runs: what is left when the gateway ends, and a server that stops
// answering without exiting.

// serveProcWait bounds every wait of these tests; reaching it is a failure.
const serveProcWait = 30 * time.Second

var (
	serveURLLine     = regexp.MustCompile(`serving .* at (http://\S+)`)
	serverLine       = regexp.MustCompile(`server process started.* pid=(\d+)(?: .*supervisor=(\d+))?`)
	grandchildLine   = regexp.MustCompile(`\] grandchild=(\d+)$`)
	stdoutClosedLine = regexp.MustCompile(`server process closed its stdout but is still running`)
)

// servedGateway is the built binary running `mcp-stdio serve`.
type servedGateway struct {
	cmd    *exec.Cmd
	stderr *transporttest.SyncBuffer
	url    string
	client *http.Client
}

// startServe runs the built binary as `mcp-stdio serve ARGS` on a free
// loopback port, with debug logs, and waits until it serves.
func startServe(t *testing.T, args ...string) *servedGateway {
	t.Helper()
	bin := relayBinary(t)
	g := &servedGateway{stderr: &transporttest.SyncBuffer{}, client: &http.Client{Transport: &http.Transport{}, Timeout: serveProcWait}}
	g.cmd = exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug"}, args...)...)
	// A -race build would sleep a second at every exit, supervisors'
	// included; a race it reports still fails it through its status.
	g.cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	g.cmd.Stderr = g.stderr
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.cmd.Process.Kill()
		g.cmd.Wait()
		g.client.CloseIdleConnections()
		if t.Failed() {
			t.Logf("serve's stderr:\n%s", g.stderr)
		}
	})
	g.url = g.stderr.Watch(serveURLLine).Next(t, serveProcWait)[1]
	return g
}

// post sends one JSON-RPC message, on the session sid unless it is empty,
// and returns the status and body of the answer (JSON, not an event
// stream) and the answer's session id. The client's timeout bounds the
// wait.
func (g *servedGateway) post(t *testing.T, sid, body string) (status int, answer, answerSID string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", body, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: reading the answer: %v", body, err)
	}
	return resp.StatusCode, string(b), resp.Header.Get("Mcp-Session-Id")
}

// initialize opens a session and returns its id.
func (g *servedGateway) initialize(t *testing.T) string {
	t.Helper()
	status, answer, sid := g.post(t, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", status, answer)
	}
	return sid
}

// serverProcs returns the pids of the next server started and of its
// supervisor (when it has one), from serve's debug log, by name.
func serverProcs(t *testing.T, w *transporttest.LineWatch) map[string]int {
	t.Helper()
	m := w.Next(t, serveProcWait)
	procs := map[string]int{}
	procs["server"], _ = strconv.Atoi(m[1])
	if m[2] != "" {
		procs["supervisor"], _ = strconv.Atoi(m[2])
	}
	return procs
}

// checkRunning fails t unless every process named is running.
func checkRunning(t *testing.T, procs map[string]int) {
	t.Helper()
	for name, pid := range procs {
		if pid <= 0 || transporttest.ProcessGone(t, pid, 0) {
			t.Fatalf("the %s (pid %d) is not running", name, pid)
		}
	}
}

// checkGone fails t unless every process named ends in time.
func checkGone(t *testing.T, procs map[string]int, after string) {
	t.Helper()
	for name, pid := range procs {
		if !transporttest.ProcessGone(t, pid, serveProcWait) {
			t.Errorf("the %s (pid %d) is still running %s", name, pid, after)
		}
	}
}

// However the gateway ends with a session open, the session's whole
// process tree ends too: the supervisor, the server (a shell that execs
// the bundled example server), and the `sleep` the shell started in the
// background. SIGKILL and SIGQUIT end serve without any cleanup of its
// own; SIGTERM and SIGHUP let it shut down (its sessions are closed, each
// server's group killed once the server exits), which already took the
// `sleep` down before the supervisor existed.
func TestServeEndLeavesNoProcessOfTheServer(t *testing.T) {
	if signal.Ignored(syscall.SIGHUP) {
		// Started under nohup, this process would pass SIGHUP on to serve
		// ignored, and serve would never end by it. A signal this process
		// catches is at its default in the programs it starts.
		signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
		defer signal.Reset(syscall.SIGHUP)
	}
	for _, sig := range []syscall.Signal{unix.SIGKILL, unix.SIGQUIT, unix.SIGHUP, unix.SIGTERM} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			bin := relayBinary(t)
			g := startServe(t, "--", "sh", "-c", `sleep 300 & echo "grandchild=$!" >&2; exec "$0" example-server`, bin)
			started := g.stderr.Watch(serverLine)
			grandchildren := g.stderr.Watch(grandchildLine)
			g.initialize(t)
			procs := serverProcs(t, started)
			procs["grandchild"], _ = strconv.Atoi(grandchildren.Next(t, serveProcWait)[1])
			checkRunning(t, procs)

			if err := g.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			g.cmd.Wait()
			checkGone(t, procs, "after serve ended by "+unix.SignalName(sig))
		})
	}
}

// A server that closes its stdout but runs on ends its session: the
// request it had been sent is answered with an error at once (not after a
// timeout: keep-alive comments would hold an event stream open forever),
// and the server is stopped — here it ignores the end of its stdin, so by
// SIGTERM after the stdin grace.
func TestServeServerThatClosesItsStdoutEndsItsSession(t *testing.T) {
	// Answers the initialize, reads the next request, closes its stdout
	// and runs on as sleep.
	script := `read -r line
printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"sh","version":"1"}}}'
read -r line
exec >&-
exec sleep 300`
	g := startServe(t, "--stdin-grace", "200ms", "--", "sh", "-c", script)
	started := g.stderr.Watch(serverLine)
	closed := g.stderr.Watch(stdoutClosedLine)
	sid := g.initialize(t)
	procs := serverProcs(t, started)
	checkRunning(t, procs)

	// Without an answer the client gives up after serveProcWait.
	_, answer, _ := g.post(t, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"anything"}}`)
	if !strings.HasPrefix(answer, `{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"session ended: `) {
		t.Errorf("answer %s, want -32000 session ended", answer)
	}
	closed.Next(t, serveProcWait)
	checkGone(t, procs, "after its session ended")
	// The session is gone, and serve still serves.
	if status, _, _ := g.post(t, sid, `{"jsonrpc":"2.0","id":3,"method":"ping"}`); status != http.StatusNotFound {
		t.Errorf("a request on the ended session got %d, want 404", status)
	}
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Wait(); err != nil {
		t.Errorf("serve on SIGTERM: %v", err)
	}
}
