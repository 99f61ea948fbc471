package main_test

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// corpEnv is the environment of the relay in the corporate-network
// tests: the test's own, without proxy settings the machine may have,
// plus extra.
func corpEnv(extra ...string) []string {
	var env []string
	for _, kv := range testEnv() {
		name, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(name) {
		case "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// startTLSServer serves the fixture over Streamable HTTP with TLS, its
// certificate signed by ca for hosts.
func startTLSServer(t *testing.T, ca *transporttest.CA, hosts ...string) *httptest.Server {
	t.Helper()
	s := newFixture().server
	// The server answers as mcp.test too: go-sdk's DNS-rebinding guard
	// would refuse that Host on a loopback listener.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{DisableLocalhostProtection: true})
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = ca.ServerConfig(t, hosts...)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused on purpose
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// A server whose certificate a private CA signed: the relay refuses it,
// in one stderr line that names --ca-file, and with --ca-file it
// connects. A file without a certificate is a usage error at start.
func TestRelayCAFile(t *testing.T) {
	is := is.New(t)
	ca := transporttest.NewCA(t)
	srv := startTLSServer(t, ca, "127.0.0.1")
	url := srv.URL + "/mcp"

	code, _, stderr, _ := runBinary(t, corpEnv(), "--check", url)
	is.Equal(code, 1)
	var line string
	for l := range strings.Lines(stderr) {
		if strings.Contains(l, "unknown authority") {
			line = l
		}
	}
	is.True(strings.Contains(line, "--ca-file PEM")) // the error and the remedy in one line

	code, _, stderr, _ = runBinary(t, corpEnv(), "--check", "--ca-file", ca.WriteFile(t), url)
	is.Equal(code, 0)
	is.True(strings.Contains(stderr, "✓ Connected"))

	empty := filepath.Join(t.TempDir(), "empty.pem")
	is.NoErr(os.WriteFile(empty, nil, 0o600))
	code, _, stderr, _ = runBinary(t, corpEnv(), "--check", "--ca-file", ca.WriteFile(t), "--ca-file", empty, url)
	is.Equal(code, 2)
	is.True(strings.Contains(stderr, "--ca-file "+empty+": no PEM certificate"))
}

// HTTPS_PROXY is honoured: the relay reaches the server only through a
// real CONNECT proxy, and trusts the server's CA from --ca-file over the
// tunnel. The server is named mcp.test, which no resolver knows (the
// relay never resolves it, the proxy does): proxy rules, net/http's and
// ours alike, never send localhost or loopback addresses through a
// proxy, so the proxy maps the name to the server's loopback address.
// (NO_PROXY: transport.TestProxyBypassedByNoProxy.)
func TestRelayThroughHTTPSProxy(t *testing.T) {
	is := is.New(t)
	ca := transporttest.NewCA(t)
	srv := startTLSServer(t, ca, "mcp.test")
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	proxy := transporttest.NewConnectProxy(t, srv.Listener.Addr().String())
	url := "https://mcp.test:" + port + "/mcp"
	caFile := ca.WriteFile(t)

	code, _, stderr, _ := runBinary(t, corpEnv("HTTPS_PROXY="+proxy.URL), "--check", "--ca-file", caFile, url)
	is.Equal(code, 0)
	is.True(strings.Contains(stderr, "✓ Connected"))
	targets := proxy.Targets()
	is.True(len(targets) > 0)
	for _, target := range targets {
		is.Equal(target, "mcp.test:"+port) // every connection tunnelled
	}
}
