package main_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/cmd/internal/procfs"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// The end-to-end tests run the built mcp-stdio binary as a relay between
// the official Go SDK client (v1.8.0, over stdio) and a Go SDK server on
// loopback, over stateful Streamable HTTP and over HTTP+SSE (2024-11-05).

// relayCase is one way of reaching a server through the relay.
type relayCase struct {
	name string
	kind serverKind
	args []string // relay flags
}

// relayCases are the transports every scenario runs over. Streamable HTTP
// runs with the default flags (auto detection settles on it); HTTP+SSE is
// forced with --transport sse. TestRelayAutoFallbackToSSE covers auto
// detection falling back to HTTP+SSE.
var relayCases = []relayCase{
	{name: "streamable-http", kind: streamableServer},
	{name: "sse", kind: sseServer, args: []string{"--transport", "sse"}},
}

// e2e is one scenario's server and relay.
type e2e struct {
	ctx   context.Context
	srv   *testServer
	relay *relayClient
}

func (e *e2e) call(name string, args map[string]any) (*mcp.CallToolResult, error) {
	return e.relay.cs.CallTool(e.ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

func setup(t *testing.T, c relayCase) *e2e {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	srv := startServer(t, c.kind, "")
	url := srv.url
	if c.kind == sseServer {
		url = srv.srv.URL + "/sse"
	}
	return &e2e{ctx: ctx, srv: srv, relay: startRelay(t, ctx, url, c.args...)}
}

func TestRelayE2E(t *testing.T) {
	relayBinary(t)
	scenarios := []struct {
		name string
		run  func(t *testing.T, c relayCase, e *e2e)
	}{
		{"initialize", testInitialize},
		{"paginated tools/list", testPaginatedList},
		{"tools/call", testToolsCall},
		{"cancelled slow call", testCancel},
		{"server request answered by the client", testElicitation},
		{"progress notifications", testProgress},
		{"server notification on the GET stream", testServerNotification},
		{"session ended at exit", testSessionEndedAtExit},
		{"session expiry", testSessionExpiry},
		{"server restart", testServerRestart},
		{"16 MiB each way", testBigMessages},
	}
	for _, c := range relayCases {
		t.Run(c.name, func(t *testing.T) {
			for _, s := range scenarios {
				t.Run(s.name, func(t *testing.T) {
					s.run(t, c, setup(t, c))
				})
			}
		})
	}
}

// TestRelayAutoFallbackToSSE runs the relay with its default transport
// against an HTTP+SSE server: the relay's Streamable HTTP initialize is
// refused with a non-JSON-RPC 400, and the relay switches to HTTP+SSE
// without the client noticing.
func TestRelayAutoFallbackToSSE(t *testing.T) {
	e := setup(t, relayCase{name: "auto", kind: sseServer})
	testInitialize(t, relayCase{kind: sseServer}, e)
	testToolsCall(t, relayCase{kind: sseServer}, e)
	testPaginatedList(t, relayCase{kind: sseServer}, e)
}

// TestRelayReusesConnections makes 100 sequential calls through the relay
// and counts the TCP connections the server saw them on: a relay that
// reuses its keep-alive connections needs one for the POSTs and one for
// the GET stream.
func TestRelayReusesConnections(t *testing.T) {
	is := is.New(t)
	e := setup(t, relayCases[0])
	const calls = 100
	for range calls {
		res, err := e.call("echo", map[string]any{"text": "again"})
		is.NoErr(err)
		is.Equal(resultText(res), "again")
	}
	var sid string
	for ss := range e.srv.fx.server.Sessions() {
		sid = ss.ID()
	}
	n := e.srv.connections(sid)
	t.Logf("%d calls on %d connections", calls, n)
	is.True(n <= 5) // connections are reused (one for POSTs, one for the GET stream, some slack)
}

// TestRelayTunesItsProcess checks that the relay binary, started by a
// client on pipes, reads stdin through the poller and runs with one P,
// and that GOMAXPROCS in the environment (or a stdin that is no pipe)
// leaves those alone.
func TestRelayTunesItsProcess(t *testing.T) {
	is := is.New(t)
	e := setup(t, relayCases[0])
	res, err := e.call("echo", map[string]any{"text": "tuned"})
	is.NoErr(err)
	is.Equal(resultText(res), "tuned")
	e.relay.close(t) // all of stderr has been read once the relay has exited
	is.True(strings.Contains(e.relay.stderr.String(), `msg="process tuned" app=mcp-stdio gomaxprocs=1 stdin_polled=true`))

	devNull, err := os.Open(os.DevNull)
	is.NoErr(err)
	defer devNull.Close()
	cmd := exec.Command(relayBinary(t), "--log-level", "debug", e.srv.url)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=3")
	cmd.Stdin = devNull // ends at once
	out, err := cmd.CombinedOutput()
	is.NoErr(err)
	is.True(strings.Contains(string(out), `msg="process tuned" app=mcp-stdio gomaxprocs=3 stdin_polled=false`))
}

// TestRelayStopsWhenTheHostStopsReading: the relay writes its stdout
// pipe through a duplicate of its own, on which a write to a pipe whose
// reader has gone fails (EPIPE) instead of killing the process (SIGPIPE,
// as on descriptor 1). It must stop all the same, by itself, saying why,
// even though its stdin stays open, and end its session on the server
// (which a relay killed by SIGPIPE left behind).
func TestRelayStopsWhenTheHostStopsReading(t *testing.T) {
	is := is.New(t)
	const session = "the-session"
	deleted := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodDelete:
			deleted <- r.Header.Get("Mcp-Session-Id")
			return
		case http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if msg := gjson.ParseBytes(body); msg.Get("method").String() == "initialize" {
			w.Header().Set("Mcp-Session-Id", session)
			writeJSON(w, `{"jsonrpc":"2.0","id":`+msg.Get("id").Raw+`,"result":{"protocolVersion":"`+clientVersion+`","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	relay := exec.Command(relayBinary(t), "--log-level", "warn", srv.URL)
	stderr := &transporttest.SyncBuffer{}
	relay.Stderr = stderr
	stdin, err := relay.StdinPipe()
	is.NoErr(err)
	defer stdin.Close()
	hostEnd, relayEnd, err := os.Pipe()
	is.NoErr(err)
	relay.Stdout = relayEnd
	is.NoErr(relay.Start())
	is.NoErr(relayEnd.Close())
	is.NoErr(hostEnd.Close()) // the host stops reading before the first answer
	exited := make(chan error, 1)
	go func() { exited <- relay.Wait() }()
	_, err = io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+clientVersion+`","capabilities":{},"clientInfo":{"name":"gone","version":"1"}}}`+"\n")
	is.NoErr(err)
	select {
	case err = <-exited:
	case <-time.After(testTimeout):
		_ = relay.Process.Kill()
		t.Fatalf("the relay did not stop; stderr:\n%s", stderr)
	}
	var exit *exec.ExitError
	is.True(errors.As(err, &exit))
	is.Equal(exit.ExitCode(), 1) // an exit of its own, not SIGPIPE
	is.True(strings.Contains(stderr.String(), "mcp-stdio: the host closed the relay's stdout (broken pipe)"))
	select {
	case id := <-deleted:
		is.Equal(id, session) // the session ended before the relay exited
	default:
		t.Fatalf("the relay exited without ending its session; stderr:\n%s", stderr)
	}
}

// TestRelayReleasesItsStartupPagesWhenQuiet checks that the relay, once
// its first answers are written and its stdout has been quiet for 3 s,
// gives back the pages of its program that starting mapped (what stays
// mapped is less than what was released), and goes on relaying.
func TestRelayReleasesItsStartupPagesWhenQuiet(t *testing.T) {
	is := is.New(t)
	e := setup(t, relayCases[0])
	res, err := e.call("echo", map[string]any{"text": "before"})
	is.NoErr(err)
	is.Equal(resultText(res), "before")
	m := e.relay.stderr.Watch(regexp.MustCompile(`msg="released the program pages start-up mapped" .*kB=(\d+)`)).Next(t, 30*time.Second)
	released, _ := strconv.Atoi(m[1])
	resident, err := procfs.StatusKB(e.relay.cmd.Process.Pid, "RssFile")
	is.NoErr(err)
	t.Logf("released %d kB; RssFile now %d kB", released, resident)
	is.True(released > 0 && resident < released)
	res, err = e.call("echo", map[string]any{"text": "after"})
	is.NoErr(err)
	is.Equal(resultText(res), "after")
}

// TestRelayClientThatDoesNotWaitForInitialize writes the handshake and a
// call in one go, as a hasty client might, through the relay binary to
// mcp-stdio serve (whose initialize takes a while: it starts the example
// server). The relay holds the later messages until the session exists, so
// the call is answered instead of refused for want of a session id.
func TestRelayClientThatDoesNotWaitForInitialize(t *testing.T) {
	is := is.New(t)
	serve := startBenchGateway(t, gwServe, relayBinary(t), "", "")
	relay := exec.Command(relayBinary(t), "--log-level", "warn", serve.url)
	stderr := &transporttest.SyncBuffer{}
	relay.Stderr = stderr
	stdin, err := relay.StdinPipe()
	is.NoErr(err)
	stdout, err := relay.StdoutPipe()
	is.NoErr(err)
	is.NoErr(relay.Start())
	defer func() {
		_ = stdin.Close()
		is.NoErr(relay.Wait())
		if t.Failed() {
			t.Logf("relay stderr:\n%s", stderr)
		}
	}()
	out := bufio.NewReader(stdout)
	_, err = io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+clientVersion+`","capabilities":{},"clientInfo":{"name":"hasty","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"right away"}}}`+"\n")
	is.NoErr(err)
	answers := map[string]string{}
	for range 2 {
		line, err := out.ReadBytes('\n')
		is.NoErr(err)
		answers[gjson.GetBytes(line, "id").Raw] = string(line)
	}
	is.Equal(gjson.Get(answers["1"], "result.serverInfo.name").String(), "mcp-stdio-example")
	is.Equal(gjson.Get(answers["2"], "result.content.0.text").String(), "right away") // not an error
}

func testInitialize(t *testing.T, _ relayCase, e *e2e) {
	is := is.New(t)
	init := e.relay.cs.InitializeResult()
	is.Equal(init.ServerInfo.Name, "e2e-server")
	is.Equal(init.ProtocolVersion, clientVersion)
	is.True(init.Capabilities.Tools != nil) // the server's capabilities pass through
	is.Equal(e.srv.fx.initializes.Load(), int32(1))
	is.NoErr(e.relay.cs.Ping(e.ctx, nil))
}

func testPaginatedList(t *testing.T, _ relayCase, e *e2e) {
	is := is.New(t)
	res, err := e.relay.cs.ListTools(e.ctx, nil)
	is.NoErr(err)
	is.Equal(res.NextCursor, "")           // the relay merged every page
	is.Equal(len(res.Tools), fixtureTools) // all tools in the first answer
	seen := make(map[string]bool)
	for _, tool := range res.Tools {
		is.True(!seen[tool.Name]) // each tool once
		seen[tool.Name] = true
	}
	for _, name := range []string{"echo", "slow", "ask", "progress", "digest", "filler-00", fmt.Sprintf("filler-%02d", fillerTools-1)} {
		is.True(seen[name]) // a tool is missing
	}
	is.Equal(e.srv.fx.listCalls.Load(), int32(fixturePages)) // one request per page
}

func testToolsCall(t *testing.T, _ relayCase, e *e2e) {
	is := is.New(t)
	for _, text := range []string{"hello", `quotes " and \ backslashes`, "ünïcödé ✓"} {
		res, err := e.call("echo", map[string]any{"text": text})
		is.NoErr(err)
		is.True(!res.IsError)
		is.Equal(resultText(res), text)
	}
}

func testCancel(t *testing.T, _ relayCase, e *e2e) {
	is := is.New(t)
	callCtx, cancelCall := context.WithCancel(e.ctx)
	defer cancelCall()
	done := make(chan error, 1)
	go func() {
		_, err := e.relay.cs.CallTool(callCtx, &mcp.CallToolParams{Name: "slow"})
		done <- err
	}()
	select {
	case <-e.srv.fx.started:
	case <-e.ctx.Done():
		t.Fatal("the slow tool never started")
	}
	cancelCall()
	is.True(errors.Is(<-done, context.Canceled)) // the client's call ends at once
	select {
	case cause := <-e.srv.fx.cancelled:
		is.True(cause != nil) // the server's handler saw the cancellation
	case <-e.ctx.Done():
		t.Fatal("the server never saw the cancellation")
	}
	// The relay keeps working.
	res, err := e.call("echo", map[string]any{"text": "after cancel"})
	is.NoErr(err)
	is.Equal(resultText(res), "after cancel")
}

func testElicitation(t *testing.T, _ relayCase, e *e2e) {
	is := is.New(t)
	res, err := e.call("ask", nil)
	is.NoErr(err)
	is.True(!res.IsError)
	is.Equal(resultText(res), "accept:Ada, asked your name?")
}

func testProgress(t *testing.T, _ relayCase, e *e2e) {
	is := is.New(t)
	params := &mcp.CallToolParams{Name: "progress"}
	params.SetProgressToken("tok-1")
	res, err := e.relay.cs.CallTool(e.ctx, params)
	is.NoErr(err)
	is.Equal(resultText(res), "done")
	for want := 1.0; want <= 3; want++ {
		select {
		case got := <-e.relay.progress:
			is.Equal(got, want) // progress arrives in order
		case <-e.ctx.Done():
			t.Fatalf("progress %v never arrived", want)
		}
	}
}

// testServerNotification has the server send a notification outside any
// request; it travels the GET stream the relay opened after initialized.
func testServerNotification(t *testing.T, _ relayCase, e *e2e) {
	is := is.New(t)
	select {
	case <-e.srv.streamUp:
	case <-e.ctx.Done():
		t.Fatal("the relay never opened the GET stream")
	}
	e.srv.fx.server.AddTool(&mcp.Tool{Name: "late", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("late"), nil
		})
	select {
	case <-e.relay.toolsChanged:
	case <-e.ctx.Done():
		t.Fatal("notifications/tools/list_changed never arrived")
	}
	res, err := e.call("late", nil)
	is.NoErr(err)
	is.Equal(resultText(res), "late")
}

// testSessionEndedAtExit checks that the relay ends its Streamable HTTP
// session (DELETE) when the client closes its stdin.
func testSessionEndedAtExit(t *testing.T, c relayCase, e *e2e) {
	if c.kind == sseServer {
		t.Skip("HTTP+SSE has no DELETE: the session ends with the GET stream")
	}
	is := is.New(t)
	is.Equal(e.srv.fx.sessions(), 1)
	e.relay.close(t)
	is.Equal(e.srv.fx.sessions(), 0) // the relay sent DELETE before exiting
}

// testSessionExpiry has the server forget the session; the relay must
// re-initialise without the client noticing.
func testSessionExpiry(t *testing.T, c relayCase, e *e2e) {
	is := is.New(t)
	res, err := e.call("echo", map[string]any{"text": "before"})
	is.NoErr(err)
	is.Equal(resultText(res), "before")

	e.srv.fx.closeSessions() // the server now answers 404 to the old session id
	is.Equal(e.srv.fx.sessions(), 0)

	res, err = e.call("echo", map[string]any{"text": "after expiry"})
	is.NoErr(err)
	is.Equal(resultText(res), "after expiry")
	is.Equal(e.srv.fx.initializes.Load(), int32(2)) // the relay replayed initialize
	is.Equal(e.srv.fx.sessions(), 1)
	// A session-scoped feature works on the new session.
	res, err = e.call("ask", nil)
	is.NoErr(err)
	is.Equal(resultText(res), "accept:Ada, asked your name?")
}

// testServerRestart stops the server and starts a fresh one on the same
// address; the next call must succeed.
//
// Over HTTP+SSE the session lives in the stream, so the call waits until the
// relay has reconnected its stream to the new server. A call that races the
// drop itself — posted to the old endpoint in the instant the server dies —
// gets -32000, as every request in flight on a dropped stream does: the
// relay cannot tell whether the dying server ran it, and never replays a
// tools/call that may have run.
func testServerRestart(t *testing.T, c relayCase, e *e2e) {
	is := is.New(t)
	res, err := e.call("echo", map[string]any{"text": "before"})
	is.NoErr(err)
	is.Equal(resultText(res), "before")

	addr := e.srv.srv.Listener.Addr().String()
	e.srv.stop()
	restarted := startServer(t, c.kind, addr)
	if c.kind == sseServer {
		select {
		case <-restarted.streamUp:
		case <-e.ctx.Done():
			t.Fatal("the relay never reconnected its SSE stream")
		}
	}

	res, err = e.call("echo", map[string]any{"text": "after restart"})
	is.NoErr(err)
	is.Equal(resultText(res), "after restart")
	is.Equal(restarted.fx.initializes.Load(), int32(1)) // the relay initialised the new server
	res, err = e.call("ask", nil)
	is.NoErr(err)
	is.Equal(resultText(res), "accept:Ada, asked your name?")
	e.relay.close(t)
	is.Equal(restarted.fx.sessions(), 0) // the DELETE at exit named the new session
}

// testBigMessages sends a 16 MiB argument and gets back a result just under
// go-sdk's 16 MiB stdio line limit, checking content hashes.
func testBigMessages(t *testing.T, _ relayCase, e *e2e) {
	is := is.New(t)
	arg := payload(16 << 20)
	res, err := e.call("digest", map[string]any{"data": arg})
	is.NoErr(err)
	is.Equal(resultText(res), sha256Hex(arg)) // the server got the argument intact

	// The result line is the text plus about 80 bytes of envelope; 64 KiB of
	// headroom keeps it under go-sdk's stdio limit of 16 MiB.
	text := payload(16<<20 - 64<<10)
	res, err = e.call("echo", map[string]any{"text": text})
	is.NoErr(err)
	got := resultText(res)
	is.Equal(len(got), len(text))
	is.Equal(sha256Hex(got), sha256Hex(text)) // the client got the result intact
}

// TestRelayCancelThroughServe cancels a slow call through the relay binary
// to mcp-stdio serve (which ends the call's stream at once when it hears
// the cancel): the cancelled id gets no answer on stdout, five times over,
// while a call after it is answered.
func TestRelayCancelThroughServe(t *testing.T) {
	is := is.New(t)
	serve := startBenchGateway(t, gwServe, relayBinary(t), "", "")
	for run := range 5 {
		relay := exec.Command(relayBinary(t), "--log-level", "warn", serve.url)
		stderr := &transporttest.SyncBuffer{}
		relay.Stderr = stderr
		stdin, err := relay.StdinPipe()
		is.NoErr(err)
		stdout, err := relay.StdoutPipe()
		is.NoErr(err)
		is.NoErr(relay.Start())
		out := bufio.NewReader(stdout)
		send := func(line string) {
			_, err := io.WriteString(stdin, line+"\n")
			is.NoErr(err)
		}
		next := func() string {
			line, err := out.ReadString('\n')
			is.NoErr(err)
			return line
		}
		send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + clientVersion + `","capabilities":{},"clientInfo":{"name":"canceller","version":"1"}}}`)
		is.Equal(gjson.Get(next(), "id").Raw, "1")
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{"seconds":5,"steps":10},"_meta":{"progressToken":"p"}}}`)
		is.Equal(gjson.Get(next(), "method").String(), "notifications/progress") // the call runs
		send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"changed my mind"}}`)
		send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after"}}}`)
		for {
			line := next()
			if gjson.Get(line, "id").Raw == "2" {
				t.Fatalf("run %d: the cancelled call was answered: %s", run, line)
			}
			if gjson.Get(line, "id").Raw == "3" {
				is.Equal(gjson.Get(line, "result.content.0.text").String(), "after")
				break
			}
		}
		is.NoErr(stdin.Close())
		rest, err := io.ReadAll(out)
		is.NoErr(err)
		is.True(!strings.Contains(string(rest), `"id":2,`)) // nothing for 2 before the relay exits either
		is.NoErr(relay.Wait())
		if t.Failed() {
			t.Logf("relay stderr:\n%s", stderr)
			return
		}
	}
}
