//go:build linux

package main_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// serve --config (issue 27): several stdio servers of a Claude Desktop
// configuration on one listener, the built binary with two real servers —
// the bundled example server and server-everything from npm.

var (
	configServerLine = regexp.MustCompile(`server (\S+) \(.*\) at (http://\S+)`)
	configAdminLine  = regexp.MustCompile(`admin endpoints on (http://\S+)`)
)

// writeConfig writes a Claude Desktop configuration into a temporary
// directory and returns its path.
func writeConfig(t *testing.T, config any) string {
	t.Helper()
	b, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startServeConfig runs the built binary as `mcp-stdio serve --config
// path ARGS` on a free loopback port and returns each server's gateway,
// by name, and the admin URL (when --admin-addr is among args).
func startServeConfig(t *testing.T, path string, n int, args ...string) (map[string]*servedGateway, string, *transporttest.SyncBuffer) {
	t.Helper()
	stderr := &transporttest.SyncBuffer{}
	client := &http.Client{Transport: &http.Transport{}, Timeout: serveProcWait}
	cmd := exec.Command(relayBinary(t), append([]string{"serve", "--listen", "127.0.0.1:0", "--config", path}, args...)...)
	cmd.Env = testEnv("GORACE=atexit_sleep_ms=0")
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		client.CloseIdleConnections()
		if t.Failed() {
			t.Logf("serve's stderr:\n%s", stderr)
		}
	})
	admin := ""
	if strings.Contains(strings.Join(args, " "), "--admin-addr") {
		admin = stderr.Watch(configAdminLine).Next(t, serveProcWait)[1]
	}
	lines := stderr.Watch(configServerLine)
	gws := map[string]*servedGateway{}
	for range n {
		m := lines.Next(t, serveProcWait)
		gws[m[1]] = &servedGateway{cmd: cmd, stderr: stderr, url: m[2], client: client}
	}
	return gws, admin, stderr
}

// Two real servers behind one listener: each answers both eras at
// /NAME/mcp and HTTP+SSE at /NAME/sse, with its own processes; an unknown
// name gets 404; the admin listener labels each server's metrics.
func TestServeConfigTwoRealServers(t *testing.T) {
	relayBinary(t) // under -short, skipped before npm installs anything
	e := everythingInstall(t)
	is := is.New(t)
	path := writeConfig(t, map[string]any{"mcpServers": map[string]any{
		"example":    map[string]any{"command": relayBinary(t), "args": []string{"example-server"}},
		"everything": map[string]any{"command": e.command()[0], "args": e.command()[1:], "env": map[string]string{"E2E_CONFIG": "1"}, "cwd": t.TempDir()},
	}})
	gws, admin, stderr := startServeConfig(t, path, 2, "--admin-addr", "127.0.0.1:0", "--log-level", "debug")
	is.True(gws["example"] != nil && gws["everything"] != nil)
	is.True(strings.HasSuffix(gws["example"].url, "/example/mcp"))
	is.True(strings.HasSuffix(gws["everything"].url, "/everything/mcp"))

	// The session era, by plain POSTs.
	for _, g := range gws {
		sid := g.initialize(t)
		status, answer, _ := g.post(t, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		is.Equal(status, http.StatusOK)
		is.True(strings.Contains(answer, `"echo"`))
	}
	// 2026-07-28, the example server natively, server-everything translated.
	status, m := gws["example"].modernCall(t, 1, "echo", `{"text":"hi example"}`, `{}`, "")
	is.Equal(status, http.StatusOK)
	is.Equal(toolText(m), "hi example")
	status, m = gws["everything"].modernCall(t, 1, "echo", `{"message":"hi everything"}`, `{}`, "")
	is.Equal(status, http.StatusOK)
	is.True(strings.Contains(toolText(m), "hi everything"))

	// HTTP+SSE at /NAME/sse.
	ctx, cancel := context.WithTimeout(context.Background(), serveProcWait)
	defer cancel()
	for _, g := range gws {
		client := mcp.NewClient(&mcp.Implementation{Name: "sse", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.SSEClientTransport{Endpoint: g.sseURL(), HTTPClient: g.client}, &mcp.ClientSessionOptions{ProtocolVersion: "2024-11-05"})
		is.NoErr(err)
		tools, err := cs.ListTools(ctx, nil)
		is.NoErr(err)
		is.True(len(tools.Tools) > 0)
		is.NoErr(cs.Close())
	}

	// An unknown name, and a name without its endpoint.
	base := strings.TrimSuffix(gws["example"].url, "/example/mcp")
	for _, p := range []string{"/nope/mcp", "/mcp", "/example/other"} {
		resp, err := gws["example"].client.Post(base+p, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		is.NoErr(err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		is.Equal(resp.StatusCode, http.StatusNotFound) // p
		is.True(!strings.Contains(string(b), "everything"))
	}

	// One admin listener: each server's series under its label.
	resp, err := gws["example"].client.Get(admin + "/metrics")
	is.NoErr(err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`mcp_stdio_sessions_active{server="example"} `, `mcp_stdio_sessions_active{server="everything"} `,
		`mcp_stdio_requests_total{server="everything",era="2026-07-28",method="tools/call",outcome="ok"} 1`} {
		is.True(strings.Contains(string(b), want)) // want
	}
	resp, err = gws["example"].client.Get(admin + "/readyz")
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusOK)
	is.True(strings.Contains(stderr.String(), "server=everything")) // log records name their server
	is.True(strings.Contains(stderr.String(), "[example "))         // and the children's stderr lines theirs
}

// The configuration is checked at start: every error names the entry (or
// the flag) and serve exits without listening.
func TestServeConfigErrorsNameTheEntry(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"url", []string{"--config", write("url.json", `{"mcpServers":{"remote":{"url":"https://example.com/mcp"}}}`)}, 2, `server "remote": has a url`},
		{"alias", []string{"--named-server-config", write("url2.json", `{"remote":{"url":"https://example.com/mcp"}}`)}, 2, `server "remote": has a url`},
		{"no command", []string{"--config", write("nocmd.json", `{"mcpServers":{"bare":{"args":["x"]}}}`)}, 2, `server "bare": has no command`},
		{"bad name", []string{"--config", write("name.json", `{"a b":{"command":"x"}}`)}, 2, `server "a b": server name "a b" may hold only`},
		{"duplicate", []string{"--config", write("dup.json", `{"mcpServers":{"x":{"command":"a"},"x":{"command":"b"}}}`)}, 2, `duplicate member "mcpServers.x"`},
		{"missing program", []string{"--config", write("gone.json", `{"gone":{"command":"/no/such/server"}}`)}, 1, `server "gone": cannot run the server command`},
		{"with CMD", []string{"--config", write("ok.json", `{"ok":{"command":"/bin/cat"}}`), "--", "/bin/cat"}, 2, `--config and a server command (-- /bin/cat) exclude each other`},
		{"no file", []string{"--config", filepath.Join(dir, "absent.json")}, 2, `--config: open`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			code, _, stderr, _ := runBinary(t, testEnv(), append([]string{"serve", "--listen", "127.0.0.1:0"}, tt.args...)...)
			is.Equal(code, tt.code)
			is.True(strings.Contains(stderr, tt.want)) // stderr
			is.Equal(strings.Count(strings.TrimSpace(stderr), "\n"), 0)
		})
	}
}

// SIGHUP reads --config again: a server added is published, one unchanged
// keeps its sessions, one removed gets 404; a file that is refused
// changes nothing and says so in one line.
func TestServeConfigReloadsOnSIGHUP(t *testing.T) {
	is := is.New(t)
	example := map[string]any{"command": relayBinary(t), "args": []string{"example-server"}}
	path := writeConfig(t, map[string]any{"mcpServers": map[string]any{"a": example}})
	gws, _, stderr := startServeConfig(t, path, 1)
	a := gws["a"]
	sid := a.initialize(t)
	const ping = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	reloaded := stderr.Watch(regexp.MustCompile(`--config reloaded`))
	refused := stderr.Watch(regexp.MustCompile(`not reloaded, the servers are unchanged: .*server \\"b c\\".*send SIGHUP again`))
	rewrite := func(body string) {
		t.Helper()
		is.NoErr(os.WriteFile(path, []byte(body), 0o600))
		is.NoErr(a.cmd.Process.Signal(syscall.SIGHUP))
	}
	exampleJSON, _ := json.Marshal(example)

	rewrite(`{"a":` + string(exampleJSON) + `,"b":` + string(exampleJSON) + `}`)
	reloaded.Next(t, serveProcWait)
	b := &servedGateway{cmd: a.cmd, stderr: stderr, url: strings.Replace(a.url, "/a/mcp", "/b/mcp", 1), client: a.client}
	b.initialize(t)
	status, _, _ := a.post(t, sid, ping)
	is.Equal(status, http.StatusOK) // a untouched: its session lives on

	rewrite(`{"a":` + string(exampleJSON) + `,"b c":` + string(exampleJSON) + `}`)
	refused.Next(t, serveProcWait)
	b.initialize(t) // unchanged

	rewrite(`{"b":` + string(exampleJSON) + `}`)
	reloaded.Next(t, serveProcWait)
	status, _, _ = a.post(t, sid, ping)
	is.Equal(status, http.StatusNotFound)
	b.initialize(t)
}

// With --enable-oauth the servers are one protected resource: the relay
// signs in to serve's own authorization server through /a/mcp, and its
// token is good for /b/mcp too; an unknown name needs a token before its
// 404.
func TestServeConfigOneSignInForEveryServer(t *testing.T) {
	is := is.New(t)
	example := map[string]any{"command": relayBinary(t), "args": []string{"example-server"}}
	path := writeConfig(t, map[string]any{"a": example, "b": example})
	dir := t.TempDir()
	codeFile := filepath.Join(dir, "code")
	stderr := &transporttest.SyncBuffer{}
	codes := stderr.Watch(signInCodeLine)
	cmd := exec.Command(relayBinary(t), "serve", "--listen", "127.0.0.1:0", "--enable-oauth", "--config", path)
	cmd.Env = testEnv("GORACE=atexit_sleep_ms=0")
	cmd.Stderr = stderr
	is.NoErr(cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("serve's stderr:\n%s", stderr)
		}
	})
	urls := map[string]string{}
	lines := stderr.Watch(configServerLine)
	for range 2 {
		m := lines.Next(t, serveProcWait)
		urls[m[1]] = m[2]
	}
	is.NoErr(os.WriteFile(codeFile, []byte(codes.Next(t, serveProcWait)[1]), 0o600))

	relayDir := filepath.Join(dir, "relay")
	r := startRelayFor(t, urls["a"], relayDir, codeFile)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`
	is.Equal(r.send(t, "1", init).Kind(), frame.Result) // signed in on the first 401
	r.send(t, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	is.True(strings.Contains(r.send(t, "2", echo(2, "through a")).String(), "through a"))

	access, _, _ := relayStore(t, relayDir)
	is.Equal(statusWith(t, urls["b"], access), http.StatusOK) // one token, every server
	nope := strings.Replace(urls["a"], "/a/mcp", "/nope/mcp", 1)
	is.Equal(statusWith(t, nope, access), http.StatusNotFound)
	is.Equal(statusWith(t, nope, "not-a-token"), http.StatusUnauthorized)
	is.Equal(statusWith(t, urls["b"], "not-a-token"), http.StatusUnauthorized)
}
