package pipeline_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/pipeline"
)

// Check explains a refusal on one line: the status and the URL, the
// likely cause, the challenge, the server's own words and the advice the
// configuration gives; and it returns the explanation.
func TestCheckExplainsRefusals(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
		header map[string]string
		body   string
		want   []string
	}{
		{
			name: "401 challenge", status: http.StatusUnauthorized,
			header: map[string]string{"WWW-Authenticate": `Bearer resource_metadata="https://as.test/prm"`},
			body:   `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"sign in first"}}`,
			want: []string{
				": the server wants credentials (WWW-Authenticate: Bearer resource_metadata=\"https://as.test/prm\")",
				`the server said: "sign in first"`,
				"; advice for 401",
			},
		},
		{
			name: "403 OAuth-style body", status: http.StatusForbidden,
			body: `{"error":"forbidden","error_description":"no access to tenant acme"}`,
			want: []string{": the server refused access", `the server said: "no access to tenant acme"`},
		},
		{
			name: "500 HTML", status: http.StatusInternalServerError,
			body: "<!DOCTYPE html>\n<html><head><title>Internal Server Error</title></head><body>stack…</body></html>",
			want: []string{": the server (or a proxy in front of it) failed", `the server said: "Internal Server Error"`},
		},
		{
			name: "502 text", status: http.StatusBadGateway,
			body: "\nupstream connect error\nreset reason: overflow\n",
			want: []string{`the server said: "upstream connect error"`},
		},
		{
			name: "404", status: http.StatusNotFound, body: "nope",
			want: []string{": no MCP endpoint at this path", `the server said: "nope"`},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			var out strings.Builder
			cfg := pipeline.RelayConfig{
				URL: srv.URL + "/mcp?key=secret", Transport: pipeline.TransportStreamable,
				Advice: func(u *pipeline.Unreachable) string {
					if u.Status == http.StatusUnauthorized {
						return "advice for 401"
					}
					return ""
				},
			}
			_, err := pipeline.Check(context.Background(), cfg, &out)
			var u *pipeline.Unreachable
			is.True(errors.As(err, &u))
			is.Equal(u.Status, tt.status)
			line := out.String()
			is.Equal(strings.Count(line, "\n"), 1) // one line
			is.True(strings.HasPrefix(line, "✗ HTTP "))
			is.True(strings.Contains(line, " from "+srv.URL+"/mcp?…")) // the URL, its query left out
			for _, w := range tt.want {
				if !strings.Contains(line, w) {
					t.Errorf("%q lacks %q", line, w)
				}
			}
		})
	}
}

// A refused connection is reported at once, not after the relay's retries.
func TestCheckRefusedConnectionIsQuick(t *testing.T) {
	is := is.New(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/mcp"
	srv.Close() // nothing listens there any more
	var out strings.Builder
	start := time.Now()
	_, err := pipeline.Check(context.Background(), pipeline.RelayConfig{URL: url}, &out)
	is.True(err != nil)
	is.True(time.Since(start) < 900*time.Millisecond) // less than one retry's backoff
	is.True(strings.HasPrefix(out.String(), "✗ cannot reach "+url+": connection refused: nothing listens there"))
}
