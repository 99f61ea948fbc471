package main_test

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// adminAddrLine is serve's startup line naming the admin endpoints.
var adminAddrLine = regexp.MustCompile(`^mcp-stdio: admin endpoints on (http://\S+) `)

// adminURL returns the base URL of the admin endpoints of g, from its
// startup line.
func adminURL(t testing.TB, g *gatewayProc) string {
	t.Helper()
	return g.log.Watch(adminAddrLine).Next(t, gatewayStartWait)[1]
}

// adminGet GETs path of the admin endpoints at base and returns the
// status and body.
func adminGet(t testing.TB, base, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// readyz asks /readyz at base until the first probe of the server
// command has an outcome (each ask waits up to half a second for it),
// and returns the status and body.
func readyz(t testing.TB, base string) (int, string) {
	t.Helper()
	deadline := time.Now().Add(gatewayStartWait)
	for {
		status, body := adminGet(t, base, "/readyz")
		if body != "the server command has not been started yet\n" || time.Now().After(deadline) {
			return status, body
		}
	}
}

// scrape reads /metrics at base with the Prometheus text parser, which
// fails the test on anything the format does not allow.
func scrape(t testing.TB, base string) map[string]*dto.MetricFamily {
	t.Helper()
	status, body := adminGet(t, base, "/metrics")
	if status != http.StatusOK {
		t.Fatalf("/metrics: %d %s", status, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics is not in the Prometheus text format: %v\n%s", err, body)
	}
	return families
}

// metricValue returns the value of the series of family name whose labels
// include labels (name, value pairs), 0 when there is none.
func metricValue(families map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := families[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return 0
}

// TestServeAdminEndpoints runs the binary as `serve --admin-addr
// 127.0.0.1:0` with the bundled example server: /healthz and /readyz
// answer 200; a session-era client's and a 2026-07-28 client's calls are
// counted by era, method and outcome; an unknown session id raises
// mcp_stdio_session_not_found_total; and /metrics parses as the
// Prometheus text format throughout, with the types the names promise.
func TestServeAdminEndpoints(t *testing.T) {
	is := is.New(t)
	bin := relayBinary(t)
	g := startBenchGateway(t, gwServe, bin, "", "", "--admin-addr", "127.0.0.1:0")
	admin := adminURL(t, g)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	status, body := adminGet(t, admin, "/healthz")
	is.Equal([]any{status, body}, []any{200, "ok\n"})
	status, body = readyz(t, admin)
	is.Equal([]any{status, body}, []any{200, "ready\n"}) // the probe of the example server succeeded
	status, _ = adminGet(t, admin, "/nope")
	is.Equal(status, http.StatusNotFound)
	resp, err := http.Post(admin+"/metrics", "text/plain", nil)
	is.NoErr(err)
	resp.Body.Close()
	is.Equal([]any{resp.StatusCode, resp.Header.Get("Allow")}, []any{405, "GET, HEAD"})

	before := scrape(t, admin)
	is.Equal(before["mcp_stdio_requests_total"].GetType(), dto.MetricType_COUNTER)
	is.Equal(before["mcp_stdio_request_duration_seconds"].GetType(), dto.MetricType_HISTOGRAM)
	is.Equal(before["mcp_stdio_children"].GetType(), dto.MetricType_GAUGE)
	is.Equal(metricValue(before, "mcp_stdio_draining"), 0.0)

	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": serveBenchText}}
	session := connectGatewayAt(t, ctx, g, gwServe, clientVersion)
	modern := connectGatewayAt(t, ctx, g, modernPath(gwServe), "")
	for _, p := range []*benchPath{session, modern} {
		for range 3 {
			p.call(t, ctx, params)
		}
	}
	after := scrape(t, admin)
	calls := func(era string) float64 {
		return metricValue(after, "mcp_stdio_requests_total", "era", era, "method", "tools/call", "outcome", "ok")
	}
	is.Equal(calls("session"), 3.0)
	is.Equal(calls("2026-07-28"), 3.0)
	is.Equal(metricValue(after, "mcp_stdio_requests_total", "era", "session", "method", "initialize", "outcome", "ok"), 1.0)
	is.True(metricValue(after, "mcp_stdio_request_duration_seconds", "era", "2026-07-28") >= 3)
	is.Equal(metricValue(after, "mcp_stdio_sessions_active"), 1.0)
	is.True(metricValue(after, "mcp_stdio_children", "state", "running") >= 2) // the session's, the pooled one (and the probe's, unless it has ended)
	is.True(metricValue(after, "mcp_stdio_bytes_total", "direction", "in") > 0)
	is.True(metricValue(after, "mcp_stdio_bytes_total", "direction", "out") > metricValue(before, "mcp_stdio_bytes_total", "direction", "out"))

	// An id this serve never issued (another replica's, say) is counted.
	c := &sessionClient{url: g.url, sid: "pod-9.ABCDEFGHIJKLMNOPQRSTUVWXYZ"}
	defer c.http.CloseIdleConnections()
	resp = c.do(t, ctx, http.MethodPost, "application/json", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusNotFound)
	notFound := metricValue(scrape(t, admin), "mcp_stdio_session_not_found_total")
	is.Equal(notFound, metricValue(after, "mcp_stdio_session_not_found_total")+1)
	// So is an HTTP+SSE message for a stream this serve does not have.
	resp, err = http.Post(strings.TrimSuffix(g.url, "/mcp")+"/message?session=pod-9.NOPE", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusNotFound)
	is.Equal(metricValue(scrape(t, admin), "mcp_stdio_session_not_found_total"), notFound+1)
}

// TestServeAdminNotReadyWhenTheServerCannotStart runs `serve
// --admin-addr 127.0.0.1:0 -- false`: a command that runs and exits at
// once. /readyz answers 503 with the reason, /healthz still 200, and the
// failed starts are counted as exits.
func TestServeAdminNotReadyWhenTheServerCannotStart(t *testing.T) {
	is := is.New(t)
	g := startServeWith(t, relayBinary(t), []string{"--admin-addr", "127.0.0.1:0"}, "false")
	admin := adminURL(t, g)
	status, body := readyz(t, admin)
	is.Equal(status, http.StatusServiceUnavailable)
	is.True(strings.HasPrefix(body, "the last start of the server command failed: ")) // the reason
	is.Equal(strings.Count(body, "\n"), 1)                                            // one line
	status, _ = adminGet(t, admin, "/healthz")
	is.Equal(status, http.StatusOK)
	is.True(metricValue(scrape(t, admin), "mcp_stdio_child_exits_total", "reason", "failed") >= 1)
}
