//go:build linux

package pipeline

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// ModernOnly refuses the session era after authentication (row 156), and
// turns HTTP+SSE off; no child ever starts.
func TestServeModernOnly(t *testing.T) {
	checkServeLeaks(t)
	h := newServeHarness(t, func(c *ServeConfig) {
		c.ModernOnly = true
		c.AuthToken = "tok"
	})
	const supported = `"data":{"supported":["2026-07-28"],`
	for _, tt := range []struct {
		name   string
		method string
		path   string
		body   string
		token  bool
		status int
		allow  string
		want   string
	}{
		{"unauthenticated first", http.MethodGet, DefaultServePath, "", false, 401, "", ""},
		{"GET", http.MethodGet, DefaultServePath, "", true, 405, "POST", ""},
		{"DELETE", http.MethodDelete, DefaultServePath, "", true, 405, "POST", ""},
		{"initialize", http.MethodPost, DefaultServePath, serveInitBody, true, 400, "",
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version: this server speaks MCP 2026-07-28 only",` + supported + `"requested":"2025-11-25"}}}`},
		{"a session's request", http.MethodPost, DefaultServePath, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, true, 400, "",
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32022,"message":"Unsupported protocol version: this server speaks MCP 2026-07-28 only",` + supported + `"requested":"2025-03-26"}}}`},
		{"HTTP+SSE is off", http.MethodGet, DefaultSSEPath, "", true, 404, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			req, err := http.NewRequest(tt.method, h.ts.URL+tt.path, strings.NewReader(tt.body))
			is.NoErr(err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tt.token {
				req.Header.Set("Authorization", "Bearer tok")
			}
			resp, err := h.client.Do(req)
			is.NoErr(err)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			is.NoErr(err)
			is.Equal(resp.StatusCode, tt.status)
			is.Equal(resp.Header.Get("Allow"), tt.allow)
			if tt.want != "" {
				is.Equal(string(body), tt.want)
			}
			is.Equal(h.srv.Sessions(), 0) // no child
		})
	}
}
