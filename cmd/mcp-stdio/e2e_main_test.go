package main_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/mcp-stdio/mcp-stdio/auth/authtest"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// The test binary doubles as the programs these tests start or hand to
// others (see transporttest.RunProgram): the fixture server in a process
// of its own (serverProcess, see e2e_serverproc_test.go), a session-era
// stdio server (sessionEraServer, see e2e_modernserve_test.go), the
// conformance suite's client and browser (confClientArg and
// confBrowserArg, see conformance_client_test.go), and the filter that
// makes a dual-era conformance server a session-era one (confFilterArg,
// see conformance_filter_test.go), and a --bearer-token-command
// (tokenCommandArg, see e2e_tokencmd_test.go).
func init() {
	transporttest.RunProgram(map[string]func(args []string) int{
		serverProcess:    runServerProcess,
		sessionEraServer: runSessionEraServer,
		confClientArg:    func(args []string) int { return confClientMain(args, os.Getenv, os.Stderr) },
		confBrowserArg:   authtest.Browser,
		confFilterArg:    func(args []string) int { return confFilterMain(args, os.Stdin, os.Stdout, os.Stderr) },
		tokenCommandArg:  runTokenCommand,
	})
}

// TestMain fails the run when a test leaves goroutines behind: go-sdk
// servers, httptest servers, pipes to relay processes. No ignores are
// needed: every test closes what it started.
func TestMain(m *testing.M) {
	// The binary initialises its packages with one thread of Go code
	// (internal/onethread), and this test process links them: it runs
	// with what the runtime would have chosen.
	if n, err := strconv.Atoi(os.Getenv("GOMAXPROCS")); err == nil && n > 0 {
		runtime.GOMAXPROCS(n)
	} else {
		runtime.SetDefaultGOMAXPROCS()
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(binaryDir())
		os.Exit(code)
	}))
}

// binaryDir is where this test process builds the relay binary.
func binaryDir() string {
	return filepath.Join(os.TempDir(), "mcp-stdio-e2e-"+strconv.Itoa(os.Getpid()))
}

// relayBinaryEnv names a prebuilt relay binary to test or benchmark instead
// of building one (to profile it, or to compare builds).
const relayBinaryEnv = "MCP_STDIO_E2E_BINARY"

// buildRelay builds the mcp-stdio binary from this package, once per test
// process: with -race when the tests run with it, else as released
// (CGO_ENABLED=0, a static binary).
var buildRelay = sync.OnceValues(func() (string, error) {
	if bin := os.Getenv(relayBinaryEnv); bin != "" {
		return bin, nil
	}
	dir := binaryDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "mcp-stdio")
	args := []string{"build", "-o", bin}
	if raceDetector {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, ".")...)
	if !raceDetector {
		// Built as released: static, without cgo (the race detector needs
		// cgo, so race builds keep it).
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// relayBinary returns the built relay, skipping the test under -short.
func relayBinary(tb testing.TB) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("builds and runs the mcp-stdio binary")
	}
	bin, err := buildRelay()
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}

// Test timings.
const (
	// testTimeout bounds each end-to-end test.
	testTimeout = 2 * time.Minute
	// relayExitBound is how long a closed client waits for the relay to
	// exit by itself before go-sdk would signal it. Finishing sooner proves
	// the relay exited on stdin EOF, not on a signal.
	relayExitBound = 30 * time.Second
	// clientVersion is the protocol version the go-sdk client asks for.
	clientVersion = "2025-11-25"
)

// serverKind names the HTTP transport a test server speaks.
type serverKind string

const (
	streamableServer serverKind = "streamable-http" // stateful Streamable HTTP
	sseServer        serverKind = "sse"             // HTTP+SSE, 2024-11-05
	modernServer     serverKind = "stateless"       // MCP 2026-07-28 (go-sdk's stateless mode)
)

// maxTestBody is the request body limit of the test servers, raised from
// go-sdk's 4 MiB so the big-message tests fit.
const maxTestBody = 256 << 20

// handler returns the go-sdk HTTP handler of this kind serving s.
func (k serverKind) handler(s *mcp.Server) http.Handler {
	get := func(*http.Request) *mcp.Server { return s }
	switch k {
	case sseServer:
		return mcp.NewSSEHandler(get, &mcp.SSEOptions{MaxRequestBodyBytes: maxTestBody})
	case modernServer:
		return mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
			Stateless: true, MaxRequestBodyBytes: maxTestBody,
			PropagateRequestCancellation: true, // a closed stream cancels the tool
		})
	}
	return mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{MaxRequestBodyBytes: maxTestBody})
}

// testServer is a go-sdk server on loopback.
type testServer struct {
	fx  *fixture
	srv *httptest.Server
	url string
	// streamUp receives when a GET stream has been set up: the go-sdk
	// handlers flush a GET's headers once the stream is registered, so a
	// server-initiated message sent after this reaches it.
	streamUp chan struct{}

	mu sync.Mutex
	// remotes holds the client addresses (TCP connections) each session id
	// was seen on.
	remotes map[string]map[string]bool
	// seen lists every request as "METHOD Mcp-Method session=<id>".
	seen []string
}

// requests returns what sawRequest noted of every request.
func (ts *testServer) requests() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.seen...)
}

// connections returns how many TCP connections requests naming this
// session id came on.
func (ts *testServer) connections(sessionID string) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.remotes[sessionID])
}

func (ts *testServer) sawRequest(r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.seen = append(ts.seen, r.Method+" "+r.Header.Get("Mcp-Method")+" session="+sid)
	if sid == "" {
		return
	}
	if ts.remotes[sid] == nil {
		ts.remotes[sid] = make(map[string]bool)
	}
	ts.remotes[sid][r.RemoteAddr] = true
}

// startServer serves a fresh fixture of this kind on loopback, on addr when
// it is not empty (a restart on the same port). The server is closed at the
// end of the test, its sessions first.
func startServer(t testing.TB, kind serverKind, addr string) *testServer {
	t.Helper()
	fx := newFixture()
	ts := &testServer{fx: fx, streamUp: make(chan struct{}, 16), remotes: make(map[string]map[string]bool)}
	inner := kind.handler(fx.server)
	ts.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.sawRequest(r)
		if r.Method == http.MethodGet {
			w = &flushSignal{ResponseWriter: w, ch: ts.streamUp}
		}
		inner.ServeHTTP(w, r)
	}))
	if addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listen again on %s: %v", addr, err)
		}
		_ = ts.srv.Listener.Close()
		ts.srv.Listener = l
	}
	ts.srv.Start()
	ts.url = ts.srv.URL + "/mcp"
	t.Cleanup(ts.stop)
	return ts
}

// stop ends the server abruptly, as a crash or a restart would: connections
// are cut, then the server-side sessions are closed so their goroutines end.
// It is safe to call twice.
func (ts *testServer) stop() {
	ts.srv.CloseClientConnections()
	ts.fx.closeSessions()
	ts.srv.Close()
}

// flushSignal signals on ch after the first Flush of a response.
type flushSignal struct {
	http.ResponseWriter
	ch   chan<- struct{}
	once sync.Once
}

func (f *flushSignal) Flush() {
	if fl, ok := f.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
	f.once.Do(func() {
		select {
		case f.ch <- struct{}{}:
		default:
		}
	})
}

// Unwrap lets http.ResponseController reach the real writer.
func (f *flushSignal) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// relayClient is a go-sdk client talking stdio to a relay process.
type relayClient struct {
	cs       *mcp.ClientSession
	cmd      *exec.Cmd
	stderr   *transporttest.SyncBuffer
	progress chan float64
	// toolsChanged receives each notifications/tools/list_changed.
	toolsChanged chan struct{}
}

// startRelay runs the relay binary with args and the server URL, and
// connects a go-sdk client to it over stdio. At the end of the test the
// client closes the relay's stdin and the relay must exit 0 by itself.
func startRelay(t testing.TB, ctx context.Context, url string, args ...string) *relayClient {
	t.Helper()
	return startRelayAt(t, ctx, clientVersion, url, args...)
}

// startRelayAt is startRelay with the client asking for protocol version
// (go-sdk's ClientSessionOptions.ProtocolVersion; "" is the SDK's latest,
// 2026-07-28, with which it sends server/discover first).
func startRelayAt(t testing.TB, ctx context.Context, version, url string, args ...string) *relayClient {
	t.Helper()
	bin := relayBinary(t)
	rc := &relayClient{stderr: &transporttest.SyncBuffer{}, progress: make(chan float64, 16), toolsChanged: make(chan struct{}, 16)}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-client", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada, asked " + req.Params.Message}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			select {
			case rc.progress <- req.Params.Progress:
			default:
			}
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case rc.toolsChanged <- struct{}{}:
			default:
			}
		},
	})
	rc.cmd = exec.Command(bin, append(append([]string{"--log-level", "debug"}, args...), url)...)
	rc.cmd.Stderr = rc.stderr
	// A -race build sleeps 1s at exit by default; a race it reports still
	// fails the test through the exit status (66).
	rc.cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=50")
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: rc.cmd, TerminateDuration: relayExitBound},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		if rc.cmd.Process != nil {
			_ = rc.cmd.Process.Kill()
			_ = rc.cmd.Wait()
		}
		t.Fatalf("connect through the relay: %v\nrelay stderr:\n%s", err, rc.stderr)
	}
	rc.cs = cs
	t.Cleanup(func() {
		rc.close(t)
		if t.Failed() {
			t.Logf("relay stderr:\n%s", rc.stderr)
		}
	})
	return rc
}

// close closes the relay's stdin and checks that it exits 0 on its own.
// Later calls do nothing.
func (rc *relayClient) close(t testing.TB) {
	t.Helper()
	if rc.cs == nil {
		return
	}
	start := time.Now()
	err := rc.cs.Close()
	rc.cs = nil
	if err != nil {
		t.Errorf("relay exit: %v", err)
	}
	if took := time.Since(start); took >= relayExitBound {
		t.Errorf("the relay did not exit within %v of stdin closing (it was signalled)", took)
	}
	if st := rc.cmd.ProcessState; st == nil || st.ExitCode() != 0 {
		t.Errorf("relay exit state %v, want exit status 0", st)
	}
}
