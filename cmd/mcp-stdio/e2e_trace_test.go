package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
	"github.com/mcp-stdio/mcp-stdio/transport"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// traceEchoServer is the program of this test binary that runs
// runTraceEchoServer.
const traceEchoServer = "trace-echo-server"

func init() {
	transporttest.RunProgram(map[string]func(args []string) int{traceEchoServer: runTraceEchoServer})
}

// runTraceEchoServer is a stdio MCP server of the session era that
// writes every line it reads to stderr, after "saw ", and answers every
// request: initialize with its protocol version, anything else with an
// empty result.
func runTraceEchoServer([]string) int {
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			fmt.Fprintf(os.Stderr, "saw %s", line)
			id := gjson.GetBytes(line, "id")
			if id.Exists() && gjson.GetBytes(line, "method").Exists() {
				result := `{}`
				if gjson.GetBytes(line, "method").Str == "initialize" {
					result = `{"protocolVersion":` + gjson.GetBytes(line, "params.protocolVersion").Raw + `,"capabilities":{"tools":{}},"serverInfo":{"name":"trace-echo","version":"1"}}`
				}
				fmt.Fprintf(os.Stdout, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id.Raw, result)
			}
		}
		if err != nil {
			return 0
		}
	}
}

// TestServeTraceContextAndJSONLogs runs serve with
// OTEL_EXPORTER_OTLP_ENDPOINT pointing at a loopback collector and
// --log-format json. A client request with a traceparent reaches the
// child with _meta.traceparent in the same trace, naming serve's span;
// the collector gets that span, the client's span as its parent; every
// stderr line is a JSON object, none carries the session id.
func TestServeTraceContextAndJSONLogs(t *testing.T) {
	is := is.New(t)
	bin := relayBinary(t)

	var (
		mu    sync.Mutex
		spans []*tracepb.Span
		attrs = map[string]string{}
	)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var td tracepb.TracesData // the wire form of ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &td) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, rs := range td.ResourceSpans {
			for _, kv := range rs.Resource.Attributes {
				attrs[kv.Key] = kv.Value.GetStringValue()
			}
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
	}))
	defer collector.Close()

	log := &transporttest.SyncBuffer{}
	serve := startTracedServe(t, bin, log, `"url":"(http://[^"]+/mcp)"`,
		[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL, "OTEL_SERVICE_NAME=e2e-serve", "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"},
		"--log-format", "json", "--replica-id", "pod-0")

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	const clientTP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	post := func(body, sid string) (string, *http.Response) {
		t.Helper()
		return serve.post(t, ctx, body, sid, "Traceparent", clientTP, "Tracestate", "rojo=00f067aa0ba902b7")
	}
	saw := log.Watch(regexp.MustCompile(`^.*"msg":"saw .*tools/call.*$`))
	_, resp := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, "")
	sid := resp.Header.Get("Mcp-Session-Id")
	is.True(strings.HasPrefix(sid, "pod-0."))
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid)
	body, resp := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{}}}`, sid)
	is.Equal(resp.StatusCode, http.StatusOK)
	is.True(strings.Contains(body, `"id":2`))

	// What the child saw, as a record of serve's log of its own.
	var rec map[string]any
	is.NoErr(json.Unmarshal([]byte(saw.Next(t, testTimeout)[0]), &rec))
	is.Equal(rec["source"], "child")
	is.Equal(rec["session"], mw.SessionHash(sid))
	seen := strings.TrimPrefix(rec["msg"].(string), "saw ")
	childTP, ok := frame.ParseTraceParent(gjson.Get(seen, "params._meta.traceparent").Str)
	is.True(ok)
	caller, _ := frame.ParseTraceParent(clientTP)
	is.Equal(childTP.TraceID, caller.TraceID) // the client's trace
	is.True(childTP.SpanID != caller.SpanID)  // serve's span
	is.Equal(gjson.Get(seen, "params._meta.tracestate").Str, "rojo=00f067aa0ba902b7")

	// SIGTERM: serve exits, its spans flushed to the collector.
	is.NoErr(serve.terminate(t))
	mu.Lock()
	var call *tracepb.Span
	for _, s := range spans {
		if s.Name == "tools/call" {
			call = s
		}
	}
	is.Equal(attrs["service.name"], "e2e-serve")
	mu.Unlock()
	is.True(call != nil) // the collector got serve's span
	is.Equal(call.TraceId, caller.TraceID[:])
	is.Equal(call.SpanId, childTP.SpanID[:]) // the one the child was told of
	is.Equal(call.ParentSpanId, caller.SpanID[:])
	is.Equal(call.Kind, tracepb.Span_SPAN_KIND_SERVER)

	// Every line is JSON; none names the session id; one access record
	// per request, at info, with the trace id.
	records := 0
	for line := range strings.Lines(log.String()) {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		is.True(!strings.Contains(line, sid)) // the session id is never logged
		is.True(!strings.Contains(line, strings.TrimPrefix(sid, "pod-0.")))
		is.Equal(r["replica"], "pod-0")
		if r["msg"] == "request" && r["method"] == "tools/call" {
			records++
			is.Equal(r["level"], "INFO")
			is.Equal(r["outcome"], "ok")
			is.Equal(r["era"], "session")
			is.Equal(r["session"], mw.SessionHash(sid))
			is.Equal(r["trace_id"], caller.TraceIDString())
			_, ok := r["duration"].(float64)
			is.True(ok)
		}
	}
	is.Equal(records, 1)
}

// TestServeExitsOnTimeWithAHungCollector: a collector that never
// answers does not hold serve's exit on SIGTERM for an exporter's timeout
// (a minute here; 10 s by default), which would take a shutdown of 25 s
// of drain and 2 s of --term-grace past Kubernetes' 30 s grace: the spans
// still queued get the shutdown's slack (2 s), then are dropped and said
// so, and serve exits 0.
func TestServeExitsOnTimeWithAHungCollector(t *testing.T) {
	is := is.New(t)
	bin := relayBinary(t)
	hung := make(chan struct{})
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hung:
		case <-r.Context().Done():
		}
	}))
	defer collector.Close()
	defer close(hung) // before collector.Close: its handlers return

	log := &transporttest.SyncBuffer{}
	dropped := log.Watch(regexp.MustCompile(`spans still queued at exit were dropped`))
	serve := startTracedServe(t, bin, log, `at (http://\S+/mcp)`,
		[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL, "OTEL_EXPORTER_OTLP_TIMEOUT=60000"},
		"--drain-timeout", "1s", "--term-grace", "1s")

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	post := func(body, sid string) *http.Response {
		t.Helper()
		_, resp := serve.post(t, ctx, body, sid)
		return resp
	}
	sid := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, "").Header.Get("Mcp-Session-Id")
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid)
	is.Equal(post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{}}}`, sid).StatusCode, http.StatusOK)

	signalled := time.Now()
	is.NoErr(serve.terminate(t)) // exit 0
	// The budget: the drain (1 s), --term-grace (1 s) and the slack for
	// the spans (2 s); the exporter's default timeout is well past it.
	if took := time.Since(signalled); took >= transport.DefaultOTLPTimeout {
		t.Errorf("serve took %v to exit: its spans held it for an exporter's timeout", took)
	}
	dropped.Next(t, time.Second) // said, before the exit
}

// tracedServe is serve as the tests of this file run it: the binary bin,
// traceEchoServer its child, its stderr in a SyncBuffer.
type tracedServe struct {
	cmd    *exec.Cmd
	exited chan error
	url    string // the endpoint's, from the startup line
}

// startTracedServe starts serve with the environment env added and flags
// before the child's command; urlPattern finds the endpoint's URL (its
// first group) in log. serve is killed when the test ends, and its stderr
// shown if the test failed.
func startTracedServe(t *testing.T, bin string, log *transporttest.SyncBuffer, urlPattern string, env []string, flags ...string) *tracedServe {
	t.Helper()
	urls := log.Watch(regexp.MustCompile(urlPattern))
	child := transporttest.ArgCommand(traceEchoServer)
	args := append(append([]string{"serve", "--listen", "127.0.0.1:0"}, flags...), "--")
	cmd := exec.Command(bin, append(args, child.Args...)...)
	cmd.Env = append(append(os.Environ(), "GORACE=atexit_sleep_ms=0"), env...)
	cmd.Stderr = log
	cmd.WaitDelay = gatewayStopWait
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &tracedServe{cmd: cmd, exited: make(chan error, 1)}
	go func() { s.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		err := <-s.exited
		s.exited <- err
		if t.Failed() {
			t.Logf("serve's stderr:\n%s", log.String())
		}
	})
	s.url = urls.Next(t, gatewayStartWait)[1]
	return s
}

// post POSTs body to serve's endpoint, in session sid unless it is "",
// with the headers hdr (name, value pairs) and returns the answer's body.
func (s *tracedServe) post(t *testing.T, ctx context.Context, body, sid string, hdr ...string) (string, *http.Response) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp
}

// terminate sends serve SIGTERM and returns how it exited.
func (s *tracedServe) terminate(t *testing.T) error {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.exited:
		s.exited <- err
		return err
	case <-time.After(testTimeout):
		t.Fatal("serve did not exit on SIGTERM")
		return nil
	}
}

// TestRelayJSONAccessLog runs the relay binary with --log-format json
// between the Go SDK client and a Go SDK server: every stderr line is a
// JSON object, none carries the session id, and each request of the
// client gets one record at info with its method, era, outcome,
// duration, the session's hash and the trace the client named.
func TestRelayJSONAccessLog(t *testing.T) {
	is := is.New(t)
	e := setup(t, relayCase{name: "streamable-http", kind: streamableServer, args: []string{"--log-format", "json", "--transport", "streamable-http"}})
	const clientTP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	res, err := e.relay.cs.CallTool(e.ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "logged"}, Meta: mcp.Meta{"traceparent": clientTP}})
	is.NoErr(err)
	is.Equal(resultText(res), "logged")
	_, err = e.relay.cs.CallTool(e.ctx, &mcp.CallToolParams{Name: "no-such-tool"})
	is.True(err != nil) // the server's JSON-RPC error
	e.relay.close(t)    // all of stderr has been read once the relay has exited

	e.srv.mu.Lock()
	var sids []string
	for sid := range e.srv.remotes {
		sids = append(sids, sid)
	}
	e.srv.mu.Unlock()
	is.Equal(len(sids), 1)
	caller, _ := frame.ParseTraceParent(clientTP)
	byMethod := map[string][]map[string]any{}
	for line := range strings.Lines(e.relay.stderr.String()) {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		is.True(!strings.Contains(line, sids[0])) // the session id is never logged
		if r["msg"] == "request" {
			is.Equal(r["level"], "INFO")
			is.Equal(r["era"], "session")
			_, timed := r["duration"].(float64)
			is.True(timed)
			m := r["method"].(string)
			byMethod[m] = append(byMethod[m], r)
		}
	}
	is.Equal(len(byMethod["initialize"]), 1)
	is.Equal(byMethod["initialize"][0]["outcome"], "ok")
	calls := byMethod["tools/call"]
	is.Equal(len(calls), 2) // one record per request
	is.Equal(calls[0]["outcome"], "ok")
	is.Equal(calls[0]["session"], mw.SessionHash(sids[0]))
	is.Equal(calls[0]["trace_id"], caller.TraceIDString())
	is.Equal(calls[1]["outcome"], "error")
}
