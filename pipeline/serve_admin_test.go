//go:build linux

package pipeline

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// awaitProbe waits for the probe of the server command under way, if any.
func awaitProbe(t *testing.T, s *Server) {
	t.Helper()
	s.ready.mu.Lock()
	probing := s.ready.probing
	s.ready.mu.Unlock()
	if probing == nil {
		return
	}
	select {
	case <-probing:
	case <-time.After(serveTestWait):
		t.Fatal("the readiness probe did not end")
	}
}

// probeNow has Ready start a probe and waits for its outcome.
func probeNow(t *testing.T, s *Server) error {
	t.Helper()
	if err := s.Ready(); err == nil {
		return nil
	}
	awaitProbe(t, s)
	return s.Ready()
}

// adminDo sends method path to the admin handler of s.
func adminDo(t *testing.T, s *Server, method, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.AdminHandler().ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	resp := rec.Result()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestAdminHandler(t *testing.T) {
	checkServeLeaks(t)
	h := newServeHarness(t, func(cfg *ServeConfig) { cfg.Metrics = true })
	tests := []struct {
		method, path string
		status       int
		body, allow  string
	}{
		{http.MethodGet, "/healthz", 200, "ok\n", ""},
		{http.MethodHead, "/healthz", 200, "", ""},
		{http.MethodPost, "/healthz", 405, "method not allowed\n", "GET, HEAD"},
		{http.MethodDelete, "/readyz", 405, "method not allowed\n", "GET, HEAD"},
		{http.MethodPut, "/metrics", 405, "method not allowed\n", "GET, HEAD"},
		{http.MethodGet, "/mcp", 404, "404 page not found\n", ""},
		{http.MethodGet, "/", 404, "404 page not found\n", ""},
		{http.MethodGet, "/healthz/", 404, "404 page not found\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.path, func(t *testing.T) {
			is := is.New(t)
			resp, body := adminDo(t, h.srv, tt.method, tt.path)
			is.Equal([]any{resp.StatusCode, body, resp.Header.Get("Allow")}, []any{tt.status, tt.body, tt.allow})
		})
	}
	t.Run("metrics", func(t *testing.T) {
		is := is.New(t)
		resp, body := adminDo(t, h.srv, http.MethodGet, "/metrics")
		is.Equal(resp.StatusCode, 200)
		is.Equal(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4; charset=utf-8")
		is.Equal(resp.Header.Get("Cache-Control"), "no-store")
		p := expfmt.NewTextParser(model.UTF8Validation)
		families, err := p.TextToMetricFamilies(strings.NewReader(body))
		is.NoErr(err) // the Prometheus text format
		var names []string
		for name := range families {
			names = append(names, name)
		}
		slices.Sort(names)
		is.Equal(names, []string{ // every family with a series: requests_total has none before a request
			"mcp_stdio_bytes_total", "mcp_stdio_child_exits_total", "mcp_stdio_children",
			"mcp_stdio_draining", "mcp_stdio_http_refusals_total", "mcp_stdio_parked_calls",
			"mcp_stdio_request_duration_seconds", "mcp_stdio_session_not_found_total", "mcp_stdio_sessions_active",
		})
		is.True(strings.Contains(body, "# TYPE mcp_stdio_requests_total counter\n")) // but its type is said
	})
}

// The requests serve's guards refuse are counted by status; a request
// that reaches the pipeline is not, even when it is answered in error
// there.
func TestServeCountsTheGuardsRefusals(t *testing.T) {
	checkServeLeaks(t)
	is := is.New(t)
	h := newServeHarness(t, func(cfg *ServeConfig) { cfg.Metrics = true; cfg.AuthToken = "s3cret" })
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	auth := "Bearer s3cret"
	status := func(path string, hdr ...string) int {
		code, _, _ := h.rawDo(t, http.MethodPost, path, ping, hdr...)
		return code
	}
	is.Equal(status("/mcp", "Origin", "https://evil.example", "Authorization", auth), 403) // a foreign Origin
	is.Equal(status("/mcp", "Host", "evil.example", "Authorization", auth), 403)           // a foreign Host
	is.Equal(status("/mcp"), 401)                                                          // no token
	is.Equal(status("/elsewhere", "Authorization", auth), 404)                             // no such path
	is.Equal(status("/mcp", "Authorization", auth, "Mcp-Session-Id", "gone"), 404)         // the pipeline's: no such session
	_, body := adminDo(t, h.srv, http.MethodGet, "/metrics")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	is.NoErr(err)
	got := map[string]float64{}
	for _, m := range families["mcp_stdio_http_refusals_total"].GetMetric() {
		got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
	}
	is.Equal(got["403"], 2.0)
	is.Equal(got["401"], 1.0)
	is.Equal(got["404"], 1.0) // not the pipeline's 404
	is.Equal(got["other"], 0.0)
	is.True(strings.Contains(body, "mcp_stdio_session_not_found_total 1\n")) // that one is counted there
}

// recordingClock is a clock tests move by hand.
type recordingClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *recordingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *recordingClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestServeReadyWhenTheServerStarts(t *testing.T) {
	checkServeLeaks(t)
	is := is.New(t)
	h := newServeHarness(t, nil)
	is.Equal(h.srv.Ready().Error(), "the server command has not been started yet") // and a probe starts
	awaitProbe(t, h.srv)
	is.NoErr(h.srv.Ready())
	resp, body := adminDo(t, h.srv, http.MethodGet, "/readyz")
	is.Equal([]any{resp.StatusCode, body}, []any{200, "ready\n"})
}

// A server command that exits at once leaves serve unready, with the
// reason, until the command works again: a probe, at most one every
// ReadyProbeInterval, finds out without any client.
func TestServeNotReadyWhileTheServerCannotStart(t *testing.T) {
	checkServeLeaks(t)
	is := is.New(t)
	child := transporttest.Command("sdk-server")
	fixed := filepath.Join(t.TempDir(), "fixed")
	clock := &recordingClock{now: time.Unix(1000, 0)}
	h := newServeHarness(t, func(cfg *ServeConfig) {
		// Exits with status 3 until the file fixed exists.
		cfg.Command = slices.Concat([]string{"/bin/sh", "-c", `test -e "$0" || exit 3; exec "$@"`, fixed}, child.Args)
	})
	h.srv.ready.now = clock.Now
	err := probeNow(t, h.srv)
	is.True(err != nil)
	is.Equal(err.Error(), "the last start of the server command failed: the server process exited during its handshake (exit status 3)")
	resp, body := adminDo(t, h.srv, http.MethodGet, "/readyz")
	is.Equal([]any{resp.StatusCode, body}, []any{503, err.Error() + "\n"})

	is.NoErr(os.WriteFile(fixed, nil, 0o600))
	is.True(h.srv.Ready() != nil) // within the interval: no new probe
	h.srv.ready.mu.Lock()
	is.Equal(h.srv.ready.probing, nil)
	h.srv.ready.mu.Unlock()
	clock.Add(ReadyProbeInterval)
	is.NoErr(probeNow(t, h.srv)) // green again, without a client
}

// A client's start that fails counts as a probe's does.
func TestServeNotReadyAfterAClientsStartFailed(t *testing.T) {
	checkServeLeaks(t)
	is := is.New(t)
	h := newServeHarness(t, func(cfg *ServeConfig) { cfg.Command = []string{"/bin/sh", "-c", "exit 4"} })
	h.srv.ready.now = func() time.Time { return time.Unix(1000, 0) }
	h.srv.ready.lastProbe = time.Unix(1000, 0) // no probe now
	h.raw(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	// The initialize was answered once the child was done, after its
	// exit was told.
	is.Equal(h.srv.Ready().Error(), "the last start of the server command failed: the server process exited before it answered (exit status 4)")
}

func TestServeNotReadyWhileDraining(t *testing.T) {
	checkServeLeaks(t)
	is := is.New(t)
	h := newServeHarness(t, nil)
	is.NoErr(probeNow(t, h.srv))
	is.NoErr(h.srv.Drain(context.Background()))
	is.True(h.srv.Draining())
	is.Equal(h.srv.Ready().Error(), "draining: the server is shutting down")
	_, body := adminDo(t, h.srv, http.MethodGet, "/metrics")
	is.True(strings.Contains(body, "\nmcp_stdio_draining 1\n"))
}

func TestServeNotReadyWhileEverySessionIsTaken(t *testing.T) {
	checkServeLeaks(t)
	is := is.New(t)
	h := newServeHarness(t, func(cfg *ServeConfig) { cfg.MaxSessions = 1 })
	is.NoErr(probeNow(t, h.srv))
	cs := h.connect(t, "2025-11-25", nil)
	is.Equal(h.srv.Ready().Error(), "every session is busy (1, the most allowed): none is idle to give way to a new one") // its GET stream is open
	is.NoErr(cs.Close())
	is.NoErr(h.srv.Ready()) // the DELETE ended the session
}
