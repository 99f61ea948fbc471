package pipeline_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/pipeline"
)

// sessionEraPost reads the message a POST carries for a server of the
// session era: it answers a body that is no message with 400, and
// server/discover with -32601, and then returns false.
func sessionEraPost(w http.ResponseWriter, r *http.Request) (frame.Message, bool) {
	body, _ := io.ReadAll(r.Body)
	m, err := frame.Parse(body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return m, false
	}
	if m.Method() == "server/discover" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(frame.ErrorResponse(m.ID(), frame.CodeMethodNotFound, "method not found").Bytes())
		return m, false
	}
	return m, true
}

// TestCheckMakesTheGatewaysHandshake: the check's initialize is the
// gateway's own handshake, declaring no capabilities (it can honour none
// of the server's requests), followed by notifications/initialized; the
// session it opened is ended.
func TestCheckMakesTheGatewaysHandshake(t *testing.T) {
	is := is.New(t)
	var mu sync.Mutex
	var seen []string // method and params (or the HTTP method) in order
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			mu.Lock()
			seen = append(seen, r.Method+" "+r.Header.Get("Mcp-Session-Id"))
			mu.Unlock()
			if r.Method == http.MethodDelete {
				return
			}
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		m, ok := sessionEraPost(w, r)
		if !ok {
			return
		}
		mu.Lock()
		seen = append(seen, m.Method()+" "+m.Get("params.capabilities").Raw+" "+m.Get("params.clientInfo").Raw)
		mu.Unlock()
		switch m.Kind() {
		case frame.Request:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "s-1")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID().Raw()) + `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}}`))
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	var out strings.Builder
	res, err := pipeline.Check(context.Background(), pipeline.RelayConfig{URL: srv.URL}, &out)
	is.NoErr(err)
	is.Equal(res.ServerName, "fake")
	is.True(res.Tools)
	is.Equal(res.SessionID, "s-1")
	is.True(strings.HasPrefix(out.String(), "✓ Connected\n  server:    fake 1\n"))
	mu.Lock()
	defer mu.Unlock()
	var posts []string
	deleted := false
	for _, s := range seen {
		switch {
		case s == "DELETE s-1":
			deleted = true
		case !strings.HasPrefix(s, "GET"):
			posts = append(posts, s)
		}
	}
	is.Equal(posts, []string{
		`initialize {} {"name":"mcp-stdio","version":"check"}`,
		`notifications/initialized  `,
	})
	is.True(deleted) // the session ended
}

// A server that answers initialize but refuses notifications/initialized
// gets the diagnosis a refused initialize gets: the status, the URL, and
// the server's own words, on one line.
func TestCheckDiagnosesARefusedInitializedNotification(t *testing.T) {
	is := is.New(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		m, ok := sessionEraPost(w, r)
		if !ok {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch m.Method() {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "s-1")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID().Raw()) + `,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"fake","version":"1"}}}`))
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"overloaded","error_description":"the tool backend is restarting"}`))
		}
	}))
	defer srv.Close()
	var out strings.Builder
	_, err := pipeline.Check(context.Background(), pipeline.RelayConfig{URL: srv.URL}, &out)
	is.True(err != nil)
	line := out.String()
	is.True(strings.HasPrefix(line, "✗ the gateway's notifications/initialized: HTTP 503 from "+srv.URL))
	is.True(strings.Contains(line, `the server said: "the tool backend is restarting"`))
	is.Equal(strings.Count(line, "\n"), 1) // one line
	var u *pipeline.Unreachable
	is.True(errors.As(err, &u))
}
