//go:build linux

package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// The test binary doubles as the stdio server the serve tests publish: run
// as the program "sdk-server" (see transporttest.RunProgram) it serves MCP
// with the official Go SDK on its stdin and stdout instead of running
// tests.
func init() {
	transporttest.RunProgram(map[string]func(args []string) int{
		"sdk-server": func(args []string) int { return runSDKServer(args) },
	})
}

// runSDKServer is the child: a go-sdk server over stdio with the tools
//
//	echo {text}   returns text
//	pid           returns the process id
//	caps          returns the client capabilities from initialize, as JSON
//	ask           elicits {name} from the client, returns "hello <name>"
//	slow          reports progress, then waits to be cancelled
//	cancelled     returns "yes" once a slow call has been cancelled
//
// With the argument "session" it speaks only the session era (2025-11-25
// and older): its server/discover lists no 2026-07-28.
func runSDKServer(args []string) int {
	var opts *mcp.ServerOptions
	if len(args) > 0 && args[0] == "session" {
		opts = &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}}
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "sdk-child", Version: "1"}, opts)
	type text struct {
		Text string `json:"text"`
	}
	reply := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in text) (*mcp.CallToolResult, any, error) {
		return reply(in.Text), nil, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "pid"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return reply(fmt.Sprint(os.Getpid())), nil, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "caps"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		b, _ := json.Marshal(req.Session.InitializeParams().Capabilities)
		return reply(string(b)), nil, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
			Message:         "your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
		})
		if err != nil {
			return nil, nil, err
		}
		return reply(fmt.Sprint("hello ", res.Content["name"])), nil, nil
	})
	cancelled := make(chan struct{}, 1)
	mcp.AddTool(server, &mcp.Tool{Name: "slow"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Message: "started"})
		}
		<-ctx.Done()
		cancelled <- struct{}{}
		return nil, nil, ctx.Err()
	})
	mcp.AddTool(server, &mcp.Tool{Name: "cancelled"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		select {
		case <-cancelled:
			return reply("yes"), nil, nil
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	})
	if err := server.Run(context.Background(), &mcp.StdioTransport{MaxLineLength: 80 << 20}); err != nil {
		return 1
	}
	return 0
}

// checkServeLeaks fails t if goroutines it starts outlive it (and its
// cleanups, which run first).
func checkServeLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// serveTestWait bounds every wait; reaching it is a failure.
const serveTestWait = 30 * time.Second

// largePayloadWait bounds a 16 MiB round trip: under the race detector,
// with the other packages' tests running alongside, the go-sdk codecs of
// client and child take far longer than anything else here.
const largePayloadWait = 3 * time.Minute

// serveHarness is a serve pipeline on a loopback server.
type serveHarness struct {
	srv    *Server
	ts     *httptest.Server
	url    string
	client *http.Client
	stderr *transporttest.SyncBuffer
	served chan string // the method of every request serve is done with
}

func newServeHarness(t *testing.T, configure func(*ServeConfig)) *serveHarness {
	t.Helper()
	child := transporttest.Command("sdk-server")
	h := &serveHarness{stderr: &transporttest.SyncBuffer{}, served: make(chan string, 256)}
	cfg := ServeConfig{
		Command:     child.Args,
		Env:         child.Env,
		CheckHost:   true,
		ChildStderr: h.stderr,
		Logger:      slog.New(slog.NewTextHandler(h.stderr, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if configure != nil {
		configure(&cfg)
	}
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = srv
	h.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.Handler().ServeHTTP(w, r)
		select {
		case h.served <- r.Method:
		default:
		}
	}))
	h.url = h.ts.URL + cfg.Path
	if cfg.Path == "" {
		h.url = h.ts.URL + DefaultServePath
	}
	h.client = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), serveTestWait)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		h.ts.Close()
		h.client.CloseIdleConnections()
	})
	return h
}

// connect opens a go-sdk client session through the gateway.
func (h *serveHarness) connect(t *testing.T, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), serveTestWait)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "sdk-client", Version: "1"}, opts)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:     h.url,
		HTTPClient:   h.client,
		MaxEventSize: 80 << 20,
	}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return cs
}

// callText calls a tool and returns its text.
func callText(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args any) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("%s: %+v", name, res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

func TestServeEndToEndWithTheGoSDK(t *testing.T) {
	checkServeLeaks(t)
	is := is.New(t)
	h := newServeHarness(t, nil)
	progress := make(chan string, 4)
	cs := h.connect(t, "2025-11-25", &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "gopher"}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- req.Params.Message
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), serveTestWait)
	defer cancel()
	is.Equal(cs.InitializeResult().ProtocolVersion, "2025-11-25")
	is.Equal(h.srv.Sessions(), 1)

	tools, err := cs.ListTools(ctx, nil)
	is.NoErr(err)
	is.Equal(len(tools.Tools), 6)
	is.Equal(callText(t, ctx, cs, "echo", map[string]any{"text": "héllo"}), "héllo")
	pid := 0
	fmt.Sscan(callText(t, ctx, cs, "pid", nil), &pid)
	is.True(pid > 0)

	// The child asks the client; the answer goes back to the child.
	is.Equal(callText(t, ctx, cs, "ask", nil), "hello gopher")

	// Cancellation: progress shows the call started, then the client
	// cancels; the child sees notifications/cancelled.
	slowCtx, cancelSlow := context.WithCancel(ctx)
	slowDone := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "slow"}
		params.SetProgressToken("slow-1")
		_, err := cs.CallTool(slowCtx, params)
		slowDone <- err
	}()
	select {
	case msg := <-progress:
		is.Equal(msg, "started")
	case <-ctx.Done():
		t.Fatal("no progress from the slow tool")
	}
	cancelSlow()
	is.True(errors.Is(<-slowDone, context.Canceled))
	is.Equal(callText(t, ctx, cs, "cancelled", nil), "yes")

	// A large argument and result.
	big := strings.Repeat("0123456789abcdef", 16<<20/16) // 16 MiB
	bigCtx, cancelBig := context.WithTimeout(context.Background(), largePayloadWait)
	defer cancelBig()
	got := callText(t, bigCtx, cs, "echo", map[string]any{"text": big})
	is.Equal(len(got), len(big))
	is.True(got == big)

	// Closing the client session deletes the session and ends the child.
	is.NoErr(cs.Close())
	is.Equal(h.srv.Sessions(), 0)
	is.True(transporttest.ProcessGone(t, pid, serveTestWait))
}

func TestServeDualEraClientSpeaks20260728(t *testing.T) {
	checkServeLeaks(t)
	is := is.New(t)
	h := newServeHarness(t, nil)
	cs := h.connect(t, "", nil) // server/discover first: answered, through the pooled child
	defer cs.Close()
	is.Equal(cs.InitializeResult().ProtocolVersion, "2026-07-28")
	is.Equal(h.srv.Sessions(), 0) // no session: the pool serves it
	ctx, cancel := context.WithTimeout(context.Background(), serveTestWait)
	defer cancel()
	is.Equal(callText(t, ctx, cs, "echo", map[string]any{"text": "x"}), "x")
}

// TestServeSessionEraChildSpeaks20260728: a child that speaks only the
// session era, behind a 2026-07-28 client: the gateway initialized it,
// answers server/discover itself from that (so the client stays at
// 2026-07-28), strips the 2026-07-28 _meta keys the child would refuse,
// and stamps the results.
func TestServeSessionEraChildSpeaks20260728(t *testing.T) {
	checkServeLeaks(t)
	is := is.New(t)
	h := newServeHarness(t, func(cfg *ServeConfig) {
		child := transporttest.Command("sdk-server", "session")
		cfg.Command, cfg.Env = child.Args, child.Env
	})
	cs := h.connect(t, "", nil)
	defer cs.Close()
	init := cs.InitializeResult()
	is.Equal(init.ProtocolVersion, "2026-07-28") // the gateway's discover
	is.Equal(init.ServerInfo.Name, "sdk-child")  // the child's, from its initialize
	is.Equal(h.srv.Sessions(), 0)
	ctx, cancel := context.WithTimeout(context.Background(), serveTestWait)
	defer cancel()
	is.Equal(callText(t, ctx, cs, "echo", map[string]any{"text": "through"}), "through")
	res, err := cs.ListTools(ctx, nil)
	is.NoErr(err)
	is.True(len(res.Tools) > 0)

	// The raw answer to a list, stamped.
	req, err := http.NewRequest(http.MethodPost, h.url, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	is.NoErr(err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/list")
	resp, err := h.client.Do(req)
	is.NoErr(err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	is.NoErr(err)
	// go-sdk gives its results ttlMs and cacheScope of its own, even in the
	// session era: they are kept; resultType and serverInfo are added.
	is.True(strings.Contains(string(body), `{"jsonrpc":"2.0","id":9,"result":{"ttlMs":0,"cacheScope":"public","tools":[`))
	is.True(strings.Contains(string(body), `],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"sdk-child","version":"1"}}}}`))
}

func TestServeConcurrentClientsAreIsolated(t *testing.T) {
	checkServeLeaks(t)
	is := is.New(t)
	h := newServeHarness(t, nil)
	var sessions [3]*mcp.ClientSession
	for i := range sessions {
		name := fmt.Sprintf("client-%d", i)
		sessions[i] = h.connect(t, "2025-11-25", &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
			},
		})
	}
	is.Equal(h.srv.Sessions(), len(sessions))
	ctx, cancel := context.WithTimeout(context.Background(), serveTestWait)
	defer cancel()
	var wg sync.WaitGroup
	answers := make([]string, len(sessions))
	for i, cs := range sessions {
		wg.Go(func() {
			for range 5 {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask"})
				if err != nil || len(res.Content) != 1 {
					answers[i] = fmt.Sprint("error: ", err)
					return
				}
				answers[i] = res.Content[0].(*mcp.TextContent).Text
			}
		})
	}
	wg.Wait()
	for i, cs := range sessions {
		is.Equal(answers[i], fmt.Sprintf("hello client-%d", i)) // each child asked its own client
		is.NoErr(cs.Close())
	}
}

func TestServeDropsClientCapabilities(t *testing.T) {
	checkServeLeaks(t)
	for _, tt := range []struct {
		drop      []string
		wantRoots bool
	}{
		{nil, true},
		{[]string{"roots"}, false},
	} {
		t.Run(fmt.Sprint(tt.drop), func(t *testing.T) {
			is := is.New(t)
			h := newServeHarness(t, func(c *ServeConfig) { c.DropClientCapabilities = tt.drop })
			cs := h.connect(t, "2025-11-25", &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true}},
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "decline"}, nil
				},
			})
			defer cs.Close()
			ctx, cancel := context.WithTimeout(context.Background(), serveTestWait)
			defer cancel()
			// The SDK server renders an absent roots capability as
			// "roots":{}; the client's listChanged tells whether it arrived.
			caps := callText(t, ctx, cs, "caps", nil)
			is.Equal(strings.Contains(caps, `"roots":{"listChanged":true}`), tt.wantRoots)
			is.True(strings.Contains(caps, `"elicitation"`)) // the others stay
		})
	}
}

// post sends a raw POST through the harness.
func (h *serveHarness) post(t *testing.T, body string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

const serveInitBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func TestServeGuards(t *testing.T) {
	checkServeLeaks(t)
	h := newServeHarness(t, func(c *ServeConfig) {
		c.AuthToken = "tok"
		c.MaxBodySize = 1 << 10
		c.AllowOrigins = []string{"https://app.example.com"}
		c.AllowHosts = []string{"gateway.lan"}
	})
	host := strings.TrimPrefix(h.ts.URL, "http://")
	for _, tt := range []struct {
		name   string
		body   string
		hdr    []string
		status int
	}{
		{"no token", serveInitBody, nil, 401},
		{"wrong token", serveInitBody, []string{"Authorization", "Bearer nope"}, 401},
		{"foreign origin", serveInitBody, []string{"Authorization", "Bearer tok", "Origin", "http://evil.example.com"}, 403},
		{"null origin", serveInitBody, []string{"Authorization", "Bearer tok", "Origin", "null"}, 403},
		{"rebinding host", serveInitBody, []string{"Authorization", "Bearer tok", "Host", "evil.example.com"}, 403},
		{"rebinding host and origin", serveInitBody, []string{"Host", "evil.example.com:8080", "Origin", "http://evil.example.com:8080"}, 403},
		{"too large", `{"jsonrpc":"2.0","id":1,"method":"x","params":"` + strings.Repeat("a", 2<<10) + `"}`, []string{"Authorization", "Bearer tok"}, 413},
		{"loopback origin and host", serveInitBody, []string{"Authorization", "Bearer tok", "Origin", "http://" + host}, 200},
		{"allowed origin", serveInitBody, []string{"Authorization", "Bearer tok", "Origin", "https://app.example.com"}, 200},
		{"allowed host", serveInitBody, []string{"Authorization", "Bearer tok", "Host", "gateway.lan:443"}, 200},
		{"localhost host", serveInitBody, []string{"Authorization", "Bearer tok", "Host", "localhost"}, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			before := h.srv.Sessions()
			resp := h.post(t, tt.body, tt.hdr...)
			is.Equal(resp.StatusCode, tt.status)
			if tt.status != 200 {
				is.Equal(h.srv.Sessions(), before) // no child for a refused request
			}
			if tt.status == 401 {
				is.True(strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), `Bearer realm="mcp-stdio"`))
			}
		})
	}
	is := is.New(t)
	req, _ := http.NewRequest(http.MethodPost, h.ts.URL+"/other", strings.NewReader(serveInitBody))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := h.client.Do(req)
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusNotFound)
}

// The health path answers GET and HEAD with 200 "ok" before the guards:
// without a token, from any Host or Origin; it starts no session.
func TestServeHealthPath(t *testing.T) {
	checkServeLeaks(t)
	h := newServeHarness(t, func(c *ServeConfig) {
		c.AuthToken = "tok"
		c.HealthPath = "/healthz"
	})
	for _, tt := range []struct {
		method, path string
		hdr          map[string]string
		status       int
		body         string
	}{
		{http.MethodGet, "/healthz", nil, 200, "ok\n"},
		{http.MethodHead, "/healthz", nil, 200, ""},
		{http.MethodGet, "/healthz", map[string]string{"Host": "10.0.0.7:8080", "Origin": "http://evil.example.com"}, 200, "ok\n"},
		{http.MethodPost, "/healthz", nil, 405, "method not allowed\n"},
		{http.MethodGet, "/healthz/x", nil, 404, "404 page not found\n"},
		{http.MethodGet, "/mcp", nil, 401, ""}, // the endpoint still wants its token
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			is := is.New(t)
			req, _ := http.NewRequest(tt.method, h.ts.URL+tt.path, nil)
			for k, v := range tt.hdr {
				if k == "Host" {
					req.Host = v
				} else {
					req.Header.Set(k, v)
				}
			}
			resp, err := h.client.Do(req)
			is.NoErr(err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			is.Equal(resp.StatusCode, tt.status)
			if tt.body != "" {
				is.Equal(string(body), tt.body)
			}
			is.Equal(h.srv.Sessions(), 0)
		})
	}
	_, err := NewServer(ServeConfig{Command: []string{"x"}, HealthPath: "/mcp"})
	is.New(t).True(err != nil) // the endpoint's own path
}

func TestServeCloseEndsEverySession(t *testing.T) {
	checkServeLeaks(t)
	is := is.New(t)
	h := newServeHarness(t, func(c *ServeConfig) { c.DrainTimeout = time.Millisecond })
	var pids []int
	var sessions []*mcp.ClientSession
	ctx, cancel := context.WithTimeout(context.Background(), serveTestWait)
	defer cancel()
	for range 3 {
		cs := h.connect(t, "2025-11-25", nil)
		sessions = append(sessions, cs)
		pid := 0
		fmt.Sscan(callText(t, ctx, cs, "pid", nil), &pid)
		pids = append(pids, pid)
	}
	is.NoErr(h.srv.Close(ctx))
	is.Equal(h.srv.Sessions(), 0)
	for _, pid := range pids {
		is.True(transporttest.ProcessGone(t, pid, 0))
	}
	for _, cs := range sessions {
		cs.Close()
	}
}

// ExampleNewServer publishes a stdio MCP server (here the test binary
// acting as one) over Streamable HTTP, and opens a session with a plain
// HTTP POST.
func ExampleNewServer() {
	child := transporttest.Command("sdk-server")
	srv, err := NewServer(ServeConfig{
		Command:   child.Args,
		Env:       child.Env,
		CheckHost: true, // the listener is loopback: refuse DNS-rebinding Host names
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	defer srv.Close(context.Background()) // ends the sessions and their children first

	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"example","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var answer struct {
		Result struct {
			ServerInfo struct{ Name string } `json:"serverInfo"`
		} `json:"result"`
	}
	json.NewDecoder(resp.Body).Decode(&answer)
	fmt.Println(resp.StatusCode, resp.Header.Get("Mcp-Session-Id") != "", srv.Sessions())
	fmt.Println(answer.Result.ServerInfo.Name)
	// Output:
	// 200 true 1
	// sdk-child
}
