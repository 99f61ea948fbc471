package cli_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/cli"
)

// proxiedServer is checkServer behind a forward proxy: the relay reaches
// http://mcp.example.test/mcp through HTTP_PROXY, so a test can use a
// host that is not loopback without leaving the machine.
func proxiedServer(t *testing.T) (env map[string]string, seen func() []http.Header) {
	srv, seen := checkServer(t)
	target, _ := url.Parse(srv.URL)
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }})
	t.Cleanup(proxy.Close)
	return map[string]string{"HTTP_PROXY": proxy.URL}, seen
}

// Plain http to a host beyond loopback with a token is a warning naming
// the risk; --allow-http silences it; loopback, https and no token never
// warn.
func TestRelayWarnsOfTokensOverPlainHTTP(t *testing.T) {
	const warning = "sending credentials over plain http to mcp.example.test"
	for _, tt := range []struct {
		name string
		env  map[string]string
		args []string
		warn bool
	}{
		{"bearer env", map[string]string{"MCP_BEARER_TOKEN": "tok-1"}, nil, true},
		{"bearer flag", nil, []string{"--bearer-token", "tok-1"}, true},
		{"authorization header", nil, []string{"-H", "Authorization: Bearer tok-1"}, true},
		{"allow-http", map[string]string{"MCP_BEARER_TOKEN": "tok-1"}, []string{"--allow-http"}, false},
		{"no token", nil, []string{"-H", "X-Tenant: acme"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			env, _ := proxiedServer(t)
			for k, v := range tt.env {
				env[k] = v
			}
			code, _, errOut := runRelay(t, env, append(tt.args, "--check", "http://mcp.example.test/mcp")...)
			is.Equal(code, 0)
			is.Equal(strings.Contains(errOut, warning), tt.warn)
			if tt.warn {
				is.True(strings.Contains(errOut, "anyone on the network path can read the token and use it; use https, or pass --allow-http"))
			}
		})
	}
	is := is.New(t)
	srv, _ := checkServer(t) // loopback
	_, _, errOut := runRelay(t, map[string]string{"MCP_BEARER_TOKEN": "tok-1"}, "--check", srv.URL)
	is.True(!strings.Contains(errOut, "plain http"))
}

// The other gateways' names are accepted where they mean what ours mean.
func TestRelayAcceptsOtherGatewaysFlags(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		ok   func(is *is.I, errOut string, h http.Header)
	}{
		{"mcp-remote http-only", []string{"--transport", "http-only"}, nil, nil},
		{"mcp-remote http-first", []string{"--transport", "http-first"}, nil, nil},
		{"mcp-remote sse-first", []string{"--transport", "sse-first"}, nil, nil},
		{"mcp-proxy streamablehttp", []string{"--transport", "streamablehttp"}, nil, nil},
		{"--debug", []string{"--debug"}, nil, nil}, // what it logs: TestRelayAliasesThroughTheBinary
		{"--silent", []string{"--silent", "--debug=false"}, nil, nil},
		{"--enable-proxy", []string{"--enable-proxy"}, nil, nil},
		{"--auth-timeout", []string{"--auth-timeout", "60"}, nil, nil},
		{"mcp-remote --ignore-tool", []string{"--ignore-tool", "delete_*", "--ignore-tool", "rm"}, nil, nil}, // what it does: golden relay/tool_filter_modern
		{"header without a space", []string{"--header", "Authorization:Bearer tok-2"}, nil, func(is *is.I, _ string, h http.Header) {
			is.Equal(h.Get("Authorization"), "Bearer tok-2")
		}},
		{"header from the environment", []string{"--header", "Authorization:${AUTH_HEADER}"}, map[string]string{"AUTH_HEADER": "Bearer tok-3"}, func(is *is.I, _ string, h http.Header) {
			is.Equal(h.Get("Authorization"), "Bearer tok-3")
		}},
		{"supergateway --oauth2Bearer", []string{"--oauth2Bearer", "tok-4"}, nil, func(is *is.I, _ string, h http.Header) {
			is.Equal(h.Get("Authorization"), "Bearer tok-4")
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			srv, seen := checkServer(t)
			code, _, errOut := runRelay(t, tt.env, append(tt.args, "--check", srv.URL)...)
			is.Equal(code, 0)
			is.True(strings.Contains(errOut, "✓ Connected"))
			if tt.ok != nil {
				tt.ok(is, errOut, seen()[0])
			}
		})
	}
}

// mcp-remote's sse-only is HTTP+SSE: against a Streamable HTTP server the
// GET is refused, which --check reports.
func TestRelaySSEOnlyIsSSE(t *testing.T) {
	is := is.New(t)
	srv, _ := checkServer(t)
	code, _, errOut := runRelay(t, nil, "--transport", "sse-only", "--check", srv.URL)
	is.Equal(code, cli.ExitFailure)
	is.True(strings.Contains(errOut, "to the HTTP+SSE GET"))
}

// The OAuth callback port, as a flag or after the URL as mcp-remote takes
// it, means OAuth; it is checked like any flag.
func TestRelayCallbackPort(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"after the URL implies --oauth", []string{"--bearer-token", "x", "http://a/mcp", "9696"}, "--oauth and --bearer-token"},
		{"flag implies --oauth", []string{"--bearer-token", "x", "--oauth-callback-port", "9696", "http://a/mcp"}, "--oauth and --bearer-token"},
		{"not a port", []string{"http://a/mcp", "soon"}, `got "soon" after it`},
		{"out of range", []string{"http://a/mcp", "70000"}, `got "70000" after it`},
		{"two ports", []string{"--oauth-callback-port", "1234", "http://a/mcp", "9696"}, "differs from --oauth-callback-port"},
		{"unset header reference", []string{"-H", "Authorization:${NOT_SET_ANYWHERE}", "http://a/mcp"}, "${NOT_SET_ANYWHERE} is not set in the environment"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			code, out, errOut := runRelay(t, nil, tt.args...)
			is.Equal(code, cli.ExitUsage)
			is.Equal(out, "")
			is.True(strings.Contains(errOut, tt.want))
		})
	}
}
