// The admin endpoints: liveness, readiness and metrics, for a listener of
// their own.

package pipeline

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
)

// Paths of [Server.AdminHandler].
const (
	AdminHealthPath  = "/healthz"
	AdminReadyPath   = "/readyz"
	AdminMetricsPath = "/metrics"
)

// AdminHandler returns the handler of the admin listener, meant for a
// listener of its own (the `serve` command's --admin-addr) that only
// probes and scrapers reach: it has none of the endpoint's guards (no
// Origin or Host check, no authentication). It answers GET and HEAD
// (anything else 405 with Allow: GET, HEAD) on
//
//   - /healthz: 200 "ok" while the process lives;
//   - /readyz: 200 "ready", or 503 with the one line of [Server.Ready]
//     saying why not (it waits up to half a second for a probe of the
//     server command that Ready started);
//   - /metrics: the metrics in the Prometheus text format (version
//     0.0.4); requests and bytes are counted only with
//     ServeConfig.Metrics;
//
// and 404 on any other path. Every answer is text/plain and not to be
// cached.
func (s *Server) AdminHandler() http.Handler {
	return adminHandler(s.readyWait, s.metrics.WritePrometheus)
}

// adminHandler answers the admin paths (see [Server.AdminHandler]):
// readyWait judges readiness, writeMetrics writes the metrics.
func adminHandler(readyWait func(context.Context) error, writeMetrics func(io.Writer)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case AdminHealthPath, AdminReadyPath, AdminMetricsPath:
		default:
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		var body bytes.Buffer
		status := http.StatusOK
		ctype := "text/plain; charset=utf-8"
		switch r.URL.Path {
		case AdminHealthPath:
			body.WriteString("ok\n")
		case AdminReadyPath:
			if err := readyWait(r.Context()); err != nil {
				status = http.StatusServiceUnavailable
				body.WriteString(err.Error() + "\n")
			} else {
				body.WriteString("ready\n")
			}
		case AdminMetricsPath:
			ctype = "text/plain; version=0.0.4; charset=utf-8"
			writeMetrics(&body)
		}
		h := w.Header()
		h.Set("Content-Type", ctype)
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Length", strconv.Itoa(body.Len()))
		w.WriteHeader(status)
		if r.Method == http.MethodGet {
			_, _ = io.Copy(w, &body)
		}
	})
}
