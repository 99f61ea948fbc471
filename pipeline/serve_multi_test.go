//go:build linux

package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

func TestCheckServerName(t *testing.T) {
	for _, ok := range []string{"a", "fs", "my-server_2", "v1.2", strings.Repeat("x", MaxServerNameLen)} {
		if err := CheckServerName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", ".well-known", "a/b", "a b", "é", "a%2f", "a?b", strings.Repeat("x", MaxServerNameLen+1)} {
		if err := CheckServerName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// newMultiHarness publishes two servers, "a" (dual-era) and "b" (session
// era only), of the test binary's sdk-server on a loopback server.
func newMultiHarness(t *testing.T, configure func(*ServeConfig)) (*Multi, *httptest.Server) {
	t.Helper()
	child := transporttest.Command("sdk-server")
	base := ServeConfig{Env: child.Env, CheckHost: true, Metrics: true}
	if configure != nil {
		configure(&base)
	}
	m, err := NewMulti(base, []MultiServer{
		{Name: "a", Command: child.Args},
		{Name: "b", Command: append(append([]string(nil), child.Args...), "session"), Env: []string{"MULTI_TEST=b"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(m.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), serveTestWait)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		ts.Close()
	})
	return m, ts
}

func TestMultiServesEachServerUnderItsName(t *testing.T) {
	checkServeLeaks(t)
	is := is.New(t)
	m, ts := newMultiHarness(t, nil)
	httpc := &http.Client{Transport: &http.Transport{}}
	defer httpc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), serveTestWait)
	defer cancel()
	pids := map[string]string{}
	for _, name := range []string{"a", "b"} {
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			client := mcp.NewClient(&mcp.Implementation{Name: "sdk-client", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/" + name + "/mcp", HTTPClient: httpc}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			is.NoErr(err)
			is.Equal(callText(t, ctx, cs, "echo", map[string]any{"text": name + version}), name+version)
			pids[name+version] = callText(t, ctx, cs, "pid", nil)
			cs.Close()
		}
	}
	is.True(pids["a2025-11-25"] != pids["b2025-11-25"]) // children of their own
	is.True(pids["a2026-07-28"] != pids["b2026-07-28"])
	is.Equal(m.Names(), []string{"a", "b"})

	// An unknown name, a path of no server, a name without its endpoint.
	for _, p := range []string{"/c/mcp", "/mcp", "/", "/a", "/a/other"} {
		resp, err := httpc.Post(ts.URL+p, "application/json", strings.NewReader(serveInitBody))
		is.NoErr(err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		is.Equal(resp.StatusCode, http.StatusNotFound) // p
		if !strings.HasPrefix(p, "/a") {
			is.True(strings.Contains(string(b), "no MCP server is published at this path"))
			is.True(!strings.Contains(string(b), `"a"`) && !strings.Contains(string(b), "/b/"))
		}
	}

	// One admin handler: every server's series, each with its label.
	rec := httptest.NewRecorder()
	m.AdminHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, AdminMetricsPath, nil))
	body := rec.Body.String()
	is.Equal(strings.Count(body, "# TYPE mcp_stdio_sessions_active gauge"), 1)
	is.True(strings.Contains(body, `mcp_stdio_sessions_active{server="a"}`))
	is.True(strings.Contains(body, `mcp_stdio_sessions_active{server="b"}`))
	is.True(strings.Contains(body, `mcp_stdio_requests_total{server="b",era="session",method="tools/call",outcome="ok"}`))
	rec = httptest.NewRecorder()
	m.AdminHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, AdminReadyPath, nil))
	is.Equal(rec.Code, http.StatusOK)
}

func TestMultiGuardsComeBeforeTheUnknownName(t *testing.T) {
	checkServeLeaks(t)
	is := is.New(t)
	_, ts := newMultiHarness(t, func(cfg *ServeConfig) { cfg.AuthToken = "secret"; cfg.HealthPath = "/healthz" })
	httpc := &http.Client{Transport: &http.Transport{}}
	defer httpc.CloseIdleConnections()
	do := func(path, token, origin string) int {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(serveInitBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := httpc.Do(req)
		is.NoErr(err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	is.Equal(do("/c/mcp", "", ""), http.StatusUnauthorized) // names cannot be told apart without the token
	is.Equal(do("/a/mcp", "", ""), http.StatusUnauthorized)
	is.Equal(do("/c/mcp", "secret", "https://evil.example"), http.StatusForbidden)
	is.Equal(do("/c/mcp", "secret", ""), http.StatusNotFound)
	is.Equal(do("/a/mcp", "secret", ""), http.StatusOK)
	resp, err := httpc.Get(ts.URL + "/healthz")
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusOK)
}

func TestNewMultiErrorsNameTheServer(t *testing.T) {
	is := is.New(t)
	child := transporttest.Command("sdk-server")
	for _, tt := range []struct {
		servers []MultiServer
		want    string
	}{
		{[]MultiServer{{Name: "ok", Command: child.Args}, {Name: "no-cmd"}}, `server "no-cmd": serve: no server command`},
		{[]MultiServer{{Name: "a/b", Command: child.Args}}, `"a/b"`},
		{[]MultiServer{{Name: "x", Command: child.Args}, {Name: "x", Command: child.Args}}, `server "x" is named twice`},
		{nil, "no servers"},
	} {
		_, err := NewMulti(ServeConfig{Env: child.Env}, tt.servers)
		is.True(err != nil && strings.Contains(err.Error(), tt.want)) // tt.want
	}
	_, err := NewMulti(ServeConfig{HealthPath: "/x/health"}, []MultiServer{{Name: "x", Command: child.Args}})
	is.True(err != nil && strings.Contains(err.Error(), `server "x"`))
}

// ExampleNewMulti publishes two stdio MCP servers (here the test binary
// acting as one, twice) on one handler, at /files/mcp and /notes/mcp.
func ExampleNewMulti() {
	child := transporttest.Command("sdk-server")
	m, err := NewMulti(ServeConfig{Env: child.Env, CheckHost: true}, []MultiServer{
		{Name: "files", Command: child.Args},
		{Name: "notes", Command: child.Args, Env: []string{"NOTES_DIR=/tmp"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ts := httptest.NewServer(m.Handler())
	defer ts.Close()
	defer m.Close(context.Background())

	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	for _, path := range []string{"/notes/mcp", "/other/mcp"} {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"example","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		var answer struct {
			Result struct {
				ServerInfo struct{ Name string } `json:"serverInfo"`
			} `json:"result"`
		}
		json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		fmt.Println(strings.TrimSpace(fmt.Sprint(path, " ", resp.StatusCode, " ", answer.Result.ServerInfo.Name)))
	}
	fmt.Println(m.Server("notes").Sessions(), m.Server("files").Sessions())
	// Output:
	// /notes/mcp 200 sdk-child
	// /other/mcp 404
	// 1 0
}

func TestMultiReload(t *testing.T) {
	checkServeLeaks(t)
	is := is.New(t)
	m, ts := newMultiHarness(t, nil)
	child := transporttest.Command("sdk-server")
	httpc := &http.Client{Transport: &http.Transport{}}
	defer httpc.CloseIdleConnections()
	post := func(path, sid, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := httpc.Do(req)
		is.NoErr(err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
	}
	const ping = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	status, sid := post("/a/mcp", "", serveInitBody)
	is.Equal(status, http.StatusOK)
	ctx, cancel := context.WithTimeout(context.Background(), serveTestWait)
	defer cancel()

	// Refused: nothing changes.
	_, _, _, err := m.Reload(ctx, []MultiServer{{Name: "a", Command: child.Args}, {Name: "bad/name", Command: child.Args}})
	is.True(err != nil && strings.Contains(err.Error(), `"bad/name"`))
	is.Equal(m.Names(), []string{"a", "b"})

	// a unchanged, b changed, c added.
	a := m.Server("a")
	added, removed, changed, err := m.Reload(ctx, []MultiServer{
		{Name: "a", Command: child.Args},
		{Name: "b", Command: child.Args, Env: []string{"MULTI_TEST=b2"}},
		{Name: "c", Command: child.Args},
	})
	is.NoErr(err)
	is.Equal(added, []string{"c"})
	is.Equal(removed, []string(nil))
	is.Equal(changed, []string{"b"})
	is.True(m.Server("a") == a) // untouched
	status, _ = post("/a/mcp", sid, ping)
	is.Equal(status, http.StatusOK) // its session lives on
	status, _ = post("/c/mcp", "", serveInitBody)
	is.Equal(status, http.StatusOK)

	// a and b removed.
	added, removed, changed, err = m.Reload(ctx, []MultiServer{{Name: "c", Command: child.Args}})
	is.NoErr(err)
	is.Equal(added, []string(nil))
	is.Equal(removed, []string{"a", "b"})
	is.Equal(changed, []string(nil))
	status, _ = post("/a/mcp", sid, ping)
	is.Equal(status, http.StatusNotFound)
	is.Equal(a.Sessions(), 0) // closed, its child with it
	is.Equal(m.Names(), []string{"c"})
}

// With OAuth the servers are one protected resource, the listener: one
// metadata document (also at each server's path-aware URL), one token for
// every server; an unknown name needs a token before its 404.
func TestMultiOAuth(t *testing.T) {
	checkServeLeaks(t)
	is := is.New(t)
	pr, err := server.NewProtectedResource(server.ResourceConfig{
		PublicURL:            "https://mcp.example.com",
		Path:                 "/",
		AuthorizationServers: []string{"https://as.example"},
	})
	is.NoErr(err)
	_, ts := newMultiHarness(t, func(cfg *ServeConfig) {
		cfg.PublicURL = "https://mcp.example.com"
		cfg.OAuth = &OAuthConfig{Verifier: testTokens, Resource: pr, RequiredScopes: []string{"mcp"},
			Routes: map[string]http.Handler{"/token": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "token endpoint") })}}
	})
	httpc := &http.Client{Transport: &http.Transport{}}
	defer httpc.CloseIdleConnections()
	do := func(method, path, token string) (int, http.Header, string) {
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(serveInitBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpc.Do(req)
		is.NoErr(err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header, string(b)
	}
	const doc = `{"resource":"https://mcp.example.com/","authorization_servers":["https://as.example"],"bearer_methods_supported":["header"]}`
	for _, p := range []string{server.MetadataPath, server.MetadataPath + "/a/mcp", server.MetadataPath + "/b/mcp"} {
		status, _, body := do(http.MethodGet, p, "")
		is.Equal(status, http.StatusOK) // p
		is.Equal(strings.TrimSpace(body), doc)
	}
	status, _, _ := do(http.MethodGet, server.MetadataPath+"/zz/mcp", "")
	is.Equal(status, http.StatusUnauthorized)
	status, _, body := do(http.MethodPost, "/token", "")
	is.Equal(status, http.StatusOK)
	is.Equal(body, "token endpoint")
	status, hdr, _ := do(http.MethodPost, "/a/mcp", "")
	is.Equal(status, http.StatusUnauthorized)
	is.True(strings.Contains(hdr.Get("WWW-Authenticate"), `resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource"`))
	status, _, _ = do(http.MethodPost, "/nope/mcp", "")
	is.Equal(status, http.StatusUnauthorized)
	status, _, _ = do(http.MethodPost, "/nope/mcp", aliceToken)
	is.Equal(status, http.StatusNotFound)
	status, _, _ = do(http.MethodPost, "/a/mcp", aliceToken)
	is.Equal(status, http.StatusOK)
	status, _, _ = do(http.MethodPost, "/b/mcp", aliceToken)
	is.Equal(status, http.StatusOK)
	status, _, _ = do(http.MethodPost, "/b/mcp", carolToken) // without the required scope
	is.Equal(status, http.StatusForbidden)

	// A resource of one endpoint is not the listener's.
	one, err := server.NewProtectedResource(server.ResourceConfig{PublicURL: "https://mcp.example.com", Path: "/mcp", AuthorizationServers: []string{"https://as.example"}})
	is.NoErr(err)
	_, err = NewMulti(ServeConfig{OAuth: &OAuthConfig{Verifier: testTokens, Resource: one}}, []MultiServer{{Name: "a", Command: []string{"x"}}})
	is.True(err != nil && strings.Contains(err.Error(), "its path must be /"))
}
