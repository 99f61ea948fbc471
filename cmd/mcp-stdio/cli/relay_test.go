package cli_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/cli"
)

// runRelay runs the relay command in-process with empty stdin.
func runRelay(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string { return env[k] }
	err := cli.Relay(context.Background(), args, getenv, strings.NewReader(""), &out, &errb, cli.Options{Version: "9.9.9"})
	return cli.ExitCode(err), out.String(), errb.String()
}

func TestRelayVersion(t *testing.T) {
	for _, flag := range []string{"-V", "--version"} {
		is := is.New(t)
		code, out, _ := runRelay(t, nil, flag)
		is.Equal(code, 0)
		is.Equal(out, "mcp-stdio 9.9.9\n")
	}
}

// The help reads like the README: flags with two dashes and a
// placeholder that says what to give, defaults as they are typed, and
// never a secret from the environment.
func TestRelayHelp(t *testing.T) {
	is := is.New(t)
	code, out, _ := runRelay(t, map[string]string{"MCP_BEARER_TOKEN": "secret-from-env"}, "--help")
	is.Equal(code, 0)
	is.True(strings.Contains(out, "usage: mcp-stdio [flags] URL"))
	for _, f := range []string{"--bearer-token TOKEN", "-H, --header 'Name: Value'", "--transport TRANSPORT",
		"--timeout-connect DURATION", "--timeout-read DURATION", "--sse-read-timeout DURATION",
		"--no-tcp-keepalive\n", "--no-cancel-filter\n", "--no-cache\n", "--mcp-param-headers MODE", "--check\n", "--max-message-size BYTES", "--max-buffered BYTES", "--follow-redirects\n",
		"--log-level LEVEL", "--oauth-timeout DURATION", "-V, --version\n", "-h, --help\n"} {
		is.True(strings.Contains(out, "\n  "+f)) // every reference flag is documented
	}
	for _, d := range []string{"(default 10s)", "(default 2m)", "(default 5m)", "(default 64MiB)", "(default info)", "(default auto)", "(default modern)", "(default $MCP_BEARER_TOKEN)", "(default 256MiB, or twice --max-message-size when that is more)"} {
		is.True(strings.Contains(out, d))
	}
	is.True(!strings.Contains(out, "\n  -bearer-token")) // one dash is the flag package's, not ours
	is.True(!strings.Contains(out, "secret-from-env"))
	is.True(!strings.Contains(out, "--test\n        ")) // deprecated: mentioned, not listed
}

// Durations are plain seconds, as the Python tool takes them, or Go
// durations; sizes plain bytes or with a unit.
func TestRelayDurationsAndSizes(t *testing.T) {
	srv, _ := checkServer(t)
	for _, args := range [][]string{
		{"--timeout-connect", "10", "--timeout-read", "1.5", "--sse-read-timeout", "0"},
		{"--timeout-connect", "10s", "--timeout-read", "2m", "--oauth-timeout", "90s"},
		{"--max-message-size", "1048576"},
		{"--max-message-size", "1MiB"},
		{"--max-message-size", "1MiB", "--max-buffered", "2MiB"},
		{"--max-message-size", "512MiB"}, // the budget's default follows: 1GiB
		{"--max-buffered", "1GiB", "--follow-redirects"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			is := is.New(t)
			code, _, errOut := runRelay(t, nil, append(args, "--check", srv.URL)...)
			is.Equal(code, 0)
			is.True(strings.Contains(errOut, "✓ Connected"))
		})
	}
}

// A flag error is one line that names the flag as typed and where to look.
func TestRelayFlagErrorIsOneLine(t *testing.T) {
	is := is.New(t)
	code, out, errOut := runRelay(t, nil, "--timeout-connect", "soon", "http://a/mcp")
	is.Equal(code, cli.ExitUsage)
	is.Equal(out, "")
	is.Equal(errOut, `mcp-stdio: invalid value "soon" for --timeout-connect: want seconds (30) or a duration such as 30s or 5m (run 'mcp-stdio --help' for the flags)`+"\n")
}

func TestRelayUsageErrors(t *testing.T) {
	cases := map[string][]string{
		"missing URL":       {},
		"two URLs":          {"http://a/mcp", "http://b/mcp"},
		"bad scheme":        {"ftp://a/mcp"},
		"bad transport":     {"--transport", "websocket", "http://a/mcp"},
		"header no colon":   {"-H", "NoColon", "http://a/mcp"},
		"header bad name":   {"-H", "Bad Name: v", "http://a/mcp"},
		"header CR value":   {"-H", "X-A: a\rb", "http://a/mcp"},
		"negative timeout":  {"--timeout-read", "-1", "http://a/mcp"},
		"not a number":      {"--timeout-connect", "soon", "http://a/mcp"},
		"unknown flag":      {"--frobnicate", "http://a/mcp"},
		"negative max size": {"--max-message-size", "-5", "http://a/mcp"},
		"bad param mode":    {"--mcp-param-headers", "sometimes", "http://a/mcp"},
		"budget too small":  {"--max-buffered", "100MiB", "http://a/mcp"},
		"budget under size": {"--max-message-size", "1GiB", "--max-buffered", "1GiB", "http://a/mcp"},
		"budget zero":       {"--max-buffered", "0", "http://a/mcp"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			code, out, _ := runRelay(t, nil, args...)
			is.Equal(code, cli.ExitUsage)
			is.Equal(out, "") // nothing but protocol on stdout, ever
		})
	}
}

// checkServer is a go-sdk Streamable HTTP server that records the headers
// of the requests it gets.
func checkServer(t *testing.T) (*httptest.Server, func() []http.Header) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "check-peer", Version: "1.2.3"}, nil)
	s.AddTool(&mcp.Tool{Name: "noop", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	var mu sync.Mutex
	var seen []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []http.Header {
		mu.Lock()
		defer mu.Unlock()
		return append([]http.Header(nil), seen...)
	}
}

func TestRelayCheck(t *testing.T) {
	is := is.New(t)
	srv, seen := checkServer(t)
	code, out, errOut := runRelay(t, map[string]string{"MCP_BEARER_TOKEN": "tok-env"}, srv.URL, "--check", "-H", "X-Tenant: acme")
	is.Equal(code, 0)
	is.Equal(out, "")
	is.True(strings.Contains(errOut, "✓ Connected"))
	is.True(strings.Contains(errOut, "server:    check-peer 1.2.3"))
	is.True(strings.Contains(errOut, "protocol:  2025-11-25"))
	is.True(strings.Contains(errOut, "tools:     yes"))
	is.True(strings.Contains(errOut, "resources: no"))
	hs := seen()
	is.True(len(hs) >= 2) // initialize, then DELETE of the session it opened
	is.Equal(hs[0].Get("Authorization"), "Bearer tok-env")
	is.Equal(hs[0].Get("X-Tenant"), "acme")
	is.Equal(hs[0].Get("Accept"), "application/json, text/event-stream")
}

// A failed check prints the server's own words, one line of them, but
// never the credentials we sent, which servers echo in error pages.
func TestRelayCheckFailureNeverPrintsTheToken(t *testing.T) {
	is := is.New(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, "token "+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+" is expired, got "+r.Header.Get("X-Key")+"\nsecond line")
	}))
	defer srv.Close()
	code, _, errOut := runRelay(t, map[string]string{"MCP_BEARER_TOKEN": "secret-token-echo"}, "--transport", "streamable-http", "-H", "X-Key: another-secret", "--check", srv.URL)
	is.Equal(code, cli.ExitFailure)
	is.True(strings.Contains(errOut, "✗ HTTP 401 from "+srv.URL))
	is.True(strings.Contains(errOut, `the server said: "token … is expired, got …"`))
	is.True(!strings.Contains(errOut, "secret-token-echo"))
	is.True(!strings.Contains(errOut, "another-secret"))
	is.True(!strings.Contains(errOut, "second line"))
}

func TestRelayTestAliasWarns(t *testing.T) {
	is := is.New(t)
	srv, _ := checkServer(t)
	code, _, errOut := runRelay(t, nil, "--test", srv.URL)
	is.Equal(code, 0)
	is.True(strings.Contains(errOut, "--test is deprecated"))
}

// Flags may follow the URL, as they could with the Python tool.
func TestRelayInterspersedFlags(t *testing.T) {
	is := is.New(t)
	srv, _ := checkServer(t)
	code, _, errOut := runRelay(t, nil, srv.URL, "--check", "--transport", "streamable-http")
	is.Equal(code, 0)
	is.True(strings.Contains(errOut, "✓ Connected"))
}
