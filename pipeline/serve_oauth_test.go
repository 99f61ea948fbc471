//go:build linux

package pipeline

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// serve as an OAuth protected resource, end to end over loopback HTTP,
// with a fake verifier mapping tokens to principals.

func init() {
	transporttest.RunProgram(map[string]func(args []string) int{
		"tee-server": teeServer,
	})
}

// teeServer is the scripted server (transporttest.ScriptedServer) that
// first writes its environment, then every line it reads, to stderr: what
// a child is given, for tests to search.
func teeServer(args []string) int {
	for _, kv := range os.Environ() {
		fmt.Fprintf(os.Stderr, "env: %s\n", kv)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 1
	}
	in := os.Stdin
	os.Stdin = r
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			fmt.Fprintf(os.Stderr, "stdin: %s\n", sc.Bytes())
			w.Write(append(sc.Bytes(), '\n'))
		}
		w.Close()
	}()
	return transporttest.ScriptedServer(args)
}

// fakeVerifier accepts the tokens of its table; "down" cannot be decided.
type fakeVerifier map[string]server.Principal

func (v fakeVerifier) Verify(_ context.Context, token string) (server.Principal, error) {
	if token == "down" {
		return server.Principal{}, errors.New("the identity provider is unreachable")
	}
	p, ok := v[token]
	if !ok {
		return server.Principal{}, fmt.Errorf("%w: unknown token", server.ErrInvalidToken)
	}
	return p, nil
}

// Tokens of the fake verifier; the secrets are long enough to search for.
const (
	aliceToken = "alice-0123456789abcdef0123456789abcdef"
	bobToken   = "bob-0123456789abcdef0123456789abcdef"
	carolToken = "carol-0123456789abcdef0123456789abcdef" // without the required scope
)

var testTokens = fakeVerifier{
	aliceToken: {Issuer: "https://as.example", Subject: "alice", Scopes: []string{"mcp", "profile"}},
	bobToken:   {Issuer: "https://as.example", Subject: "bob", Scopes: []string{"mcp"}},
	carolToken: {Issuer: "https://as.example", Subject: "carol", Scopes: []string{"profile"}},
}

// withOAuth configures serve as the protected resource
// https://mcp.example.com/mcp of the fake verifier, requiring "mcp".
func withOAuth(t *testing.T) func(*ServeConfig) {
	return func(cfg *ServeConfig) {
		pr, err := server.NewProtectedResource(server.ResourceConfig{
			PublicURL:            "https://mcp.example.com",
			Path:                 DefaultServePath,
			AuthorizationServers: []string{"https://as.example"},
			ScopesSupported:      []string{"mcp", "profile"},
		})
		if err != nil {
			t.Fatal(err)
		}
		cfg.PublicURL = "https://mcp.example.com"
		cfg.OAuth = &OAuthConfig{Verifier: testTokens, Resource: pr, RequiredScopes: []string{"mcp"}}
	}
}

const (
	oauthMeta      = `resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`
	oauthChallenge = `Bearer ` + oauthMeta + `, scope="mcp"`
	oauthDoc       = `{"resource":"https://mcp.example.com/mcp","authorization_servers":["https://as.example"],"scopes_supported":["mcp","profile"],"bearer_methods_supported":["header"]}`
)

// rawDo sends a request to path with headers (name, value pairs; "Host"
// sets the Host) and returns the status, headers and body.
func (h *serveHarness) rawDo(t *testing.T, method, path, body string, hdr ...string) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", acceptBoth)
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

func bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }

// The gate answers before anything else of the endpoint, for every
// method, both eras and HTTP+SSE: no child starts for a refused request.
// The metadata, the health path and CORS preflights need no token.
func TestServeOAuthGate(t *testing.T) {
	checkServeLeaks(t)
	h := newServeHarness(t, func(cfg *ServeConfig) {
		withOAuth(t)(cfg)
		cfg.HealthPath = "/healthz"
		cfg.AllowOrigins = []string{"https://app.example.com"}
	})
	const modernList = `{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	modern := []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list"}
	for _, tt := range []struct {
		name      string
		method    string
		path      string
		body      string
		hdr       []string
		status    int
		challenge string
	}{
		{"initialize without a token", "POST", "/mcp", serveInitBody, nil, 401, oauthChallenge},
		{"2026-07-28 without a token", "POST", "/mcp", modernList, modern, 401, oauthChallenge},
		{"GET without a token", "GET", "/mcp", "", nil, 401, oauthChallenge},
		{"DELETE without a token", "DELETE", "/mcp", "", []string{"Mcp-Session-Id", "x"}, 401, oauthChallenge},
		{"HTTP+SSE stream without a token", "GET", DefaultSSEPath, "", nil, 401, oauthChallenge},
		{"HTTP+SSE message without a token", "POST", DefaultMessagePath + "?session=x", serveInitBody, nil, 401, oauthChallenge},
		{"an unknown token", "POST", "/mcp", serveInitBody, bearer("mallory"), 401, `Bearer error="invalid_token", ` + oauthMeta + `, scope="mcp"`},
		{"the static bearer's realm is not ours", "POST", "/mcp", serveInitBody, []string{"Authorization", "Basic YTpi"}, 401, oauthChallenge},
		{"without the scope", "POST", "/mcp", modernList, append(bearer(carolToken), modern...), 403, `Bearer error="insufficient_scope", scope="mcp", ` + oauthMeta},
		{"the verifier cannot decide", "GET", "/mcp", "", bearer("down"), 503, ""},
		{"a token in the query", "POST", "/mcp?access_token=" + aliceToken, serveInitBody, nil, 400, `Bearer error="invalid_request", ` + oauthMeta + `, scope="mcp"`},
		{"a foreign origin first", "POST", "/mcp", serveInitBody, []string{"Origin", "https://evil.example"}, 403, ""},
		{"a rebinding host first", "POST", "/mcp", serveInitBody, []string{"Host", "evil.example"}, 403, ""},
		{"another path first", "POST", "/other", serveInitBody, nil, 404, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			status, hdr, _ := h.rawDo(t, tt.method, tt.path, tt.body, tt.hdr...)
			is.Equal(status, tt.status)
			is.Equal(hdr.Get("WWW-Authenticate"), tt.challenge)
			is.Equal(h.srv.Sessions(), 0)
			is.Equal(h.srv.pool.Len(), 0) // no child
		})
	}

	is := is.New(t)
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		// Host names a loopback address (the DNS-rebinding guard is on);
		// X-Forwarded-Host is hostile; neither reaches the document.
		status, hdr, body := h.rawDo(t, "GET", path, "", "X-Forwarded-Host", "evil.example", "X-Forwarded-Proto", "http", "Host", "localhost")
		is.Equal(status, 200)
		is.Equal(hdr.Get("Content-Type"), "application/json")
		is.Equal(body, oauthDoc)
		// CORS for a page of an allowed origin, preflight included.
		status, hdr, body = h.rawDo(t, "GET", path, "", "Origin", "https://app.example.com")
		is.Equal(status, 200)
		is.Equal(hdr.Get("Access-Control-Allow-Origin"), "https://app.example.com")
		is.Equal(body, oauthDoc)
		status, hdr, _ = h.rawDo(t, "OPTIONS", path, "", "Origin", "https://app.example.com", "Access-Control-Request-Method", "GET")
		is.Equal(status, 204)
		is.Equal(hdr.Get("Access-Control-Allow-Origin"), "https://app.example.com")
	}
	status, _, _ := h.rawDo(t, "GET", "/.well-known/oauth-protected-resource", "", "Origin", "https://evil.example")
	is.Equal(status, 403) // the origin check holds for the metadata too
	status, _, body := h.rawDo(t, "GET", "/healthz", "")
	is.Equal(status, 200)
	is.Equal(body, "ok\n")
	status, hdr, _ := h.rawDo(t, "OPTIONS", "/mcp", "", "Origin", "https://app.example.com", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization")
	is.Equal(status, 204) // a preflight carries no credentials
	is.Equal(hdr.Get("Access-Control-Allow-Headers"), "authorization")
	// A 401 to a page shows it the challenge.
	_, hdr, _ = h.rawDo(t, "POST", "/mcp", serveInitBody, "Origin", "https://app.example.com")
	is.True(strings.Contains(hdr.Get("Access-Control-Expose-Headers"), "WWW-Authenticate"))

	// With the token: a session.
	status, hdr, _ = h.rawDo(t, "POST", "/mcp", serveInitBody, bearer(aliceToken)...)
	is.Equal(status, 200)
	is.True(hdr.Get("Mcp-Session-Id") != "")
	is.Equal(h.srv.Sessions(), 1)
}

// The metadata's URLs come from the public URL alone: with the host check
// off (serve listening on every interface), a hostile Host and
// X-Forwarded-Host reach serve, and change nothing of the document or the
// challenge.
func TestServeOAuthHostNeverReflected(t *testing.T) {
	checkServeLeaks(t)
	h := newServeHarness(t, func(cfg *ServeConfig) {
		withOAuth(t)(cfg)
		cfg.CheckHost = false
	})
	is := is.New(t)
	for _, host := range []string{"evil.example", "evil.example:443", "127.0.0.1"} {
		hostile := []string{"Host", host, "X-Forwarded-Host", "evil.example", "X-Forwarded-Proto", "http", "Forwarded", "host=evil.example;proto=http"}
		for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
			status, _, body := h.rawDo(t, "GET", path, "", hostile...)
			is.Equal(status, 200)
			is.Equal(body, oauthDoc)
		}
		status, hdr, body := h.rawDo(t, "POST", "/mcp", serveInitBody, hostile...)
		is.Equal(status, 401)
		is.Equal(hdr.Get("WWW-Authenticate"), oauthChallenge)
		is.True(!strings.Contains(body, "evil"))
	}
}

// The token goes no further than the gate: the child's environment and
// every line it reads are free of it, in both eras.
func TestServeOAuthNoTokenPassthrough(t *testing.T) {
	checkServeLeaks(t)
	g := newSessionGateway(t, func(cfg *ServeConfig) {
		withOAuth(t)(cfg)
		child := transporttest.Command("tee-server")
		cfg.Command, cfg.Env = child.Args, child.Env
	})
	is := is.New(t)
	status, hdr, _ := g.rawDo(t, "POST", "/mcp", scriptedInit, bearer(aliceToken)...)
	is.Equal(status, 200)
	sid := hdr.Get("Mcp-Session-Id")
	status, _, body := g.rawDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":"e","method":"echo","params":{"x":1}}`, append(bearer(aliceToken), "Mcp-Session-Id", sid, "MCP-Protocol-Version", "2025-11-25")...)
	is.Equal(status, 200)
	is.True(strings.Contains(body, `"result":{"x":1}`))
	// 2026-07-28, through a pooled child of the same program.
	status, _, body = g.rawDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		append(bearer(bobToken), "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list")...)
	is.Equal(status, http.StatusNotFound) // the child's -32601, as 2026-07-28 answers it
	is.Equal(body, `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"method not found"}}`)
	is.Equal(g.srv.pool.Len(), 1)

	// A child's stderr reaches the log on a goroutine of its own, so its
	// lines may come after the answers: wait for the tee of each request.
	// Each child wrote its environment before it read a line.
	g.logs.Watch(regexp.MustCompile(regexp.QuoteMeta(`stdin: {"jsonrpc":"2.0","id":"e","method":"echo","params":{"x":1}}`))).Next(t, 10*time.Second)
	g.logs.Watch(regexp.MustCompile(`stdin: \{"jsonrpc":"2.0","id":.*"method":"tools/list"`)).Next(t, 10*time.Second)
	logs := g.logs.String()
	is.True(strings.Contains(logs, "env: "))
	for _, tok := range []string{aliceToken, bobToken} {
		is.True(!strings.Contains(logs, tok)) // not in the child, nor in serve's logs
	}
	is.True(strings.Contains(logs, `principal="https://as.example alice"`)) // logged, at debug
}

// A session belongs to the principal that opened it: another principal's
// token on its id gets 404, exactly what an unknown id gets, on POST, GET
// and DELETE, and on HTTP+SSE.
func TestServeOAuthSessionsBoundToPrincipal(t *testing.T) {
	g := newSessionGateway(t, withOAuth(t))
	is := is.New(t)
	status, hdr, _ := g.rawDo(t, "POST", "/mcp", scriptedInit, bearer(aliceToken)...)
	is.Equal(status, 200)
	sid := hdr.Get("Mcp-Session-Id")
	v := []string{"MCP-Protocol-Version", "2025-11-25"}
	for _, tt := range []struct{ method, body string }{
		{"POST", `{"jsonrpc":"2.0","id":"p","method":"pid"}`},
		{"POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{"GET", ""},
		{"DELETE", ""},
	} {
		status, _, body := g.rawDo(t, tt.method, "/mcp", tt.body, headerPairs(bearer(bobToken), v, "Mcp-Session-Id", sid)...)
		unknownStatus, _, unknownBody := g.rawDo(t, tt.method, "/mcp", tt.body, headerPairs(bearer(bobToken), v, "Mcp-Session-Id", "no-such-session")...)
		is.Equal(status, http.StatusNotFound) // tt.method
		is.Equal(status, unknownStatus)
		is.Equal(body, unknownBody)
	}
	is.Equal(g.srv.Sessions(), 1)
	status, _, body := g.rawDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":"p","method":"pid"}`, headerPairs(bearer(aliceToken), v, "Mcp-Session-Id", sid)...)
	is.Equal(status, 200)
	is.True(strings.Contains(body, `"pid":`))
	status, _, _ = g.rawDo(t, "DELETE", "/mcp", "", headerPairs(bearer(aliceToken), v, "Mcp-Session-Id", sid)...)
	is.Equal(status, http.StatusNoContent)
	is.Equal(g.srv.Sessions(), 0)

	// HTTP+SSE: the stream's principal owns the session.
	req, err := http.NewRequest(http.MethodGet, g.ts.URL+DefaultSSEPath, nil)
	is.NoErr(err)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	resp, err := g.client.Do(req)
	is.NoErr(err)
	defer resp.Body.Close()
	is.Equal(resp.StatusCode, 200)
	events := frame.NewSSEReader(resp.Body, 0)
	ev, err := events.Next()
	is.NoErr(err)
	is.Equal(ev.Type, "endpoint")
	endpoint := string(ev.Data)
	status, _, body = g.rawDo(t, "POST", endpoint, scriptedInit, bearer(bobToken)...)
	unknownStatus, _, unknownBody := g.rawDo(t, "POST", DefaultMessagePath+"?session=no-such-session", scriptedInit, bearer(bobToken)...)
	is.Equal(status, http.StatusNotFound)
	is.Equal(status, unknownStatus)
	is.Equal(body, unknownBody)
	status, _, _ = g.rawDo(t, "POST", endpoint, scriptedInit, bearer(aliceToken)...)
	is.Equal(status, http.StatusAccepted)
	msg := nextEvent(t, events)
	is.Equal(msg.Get("result.protocolVersion").String(), "2025-11-25")
}

// headerPairs joins header pairs.
func headerPairs(parts ...any) []string {
	var out []string
	for _, p := range parts {
		switch p := p.(type) {
		case []string:
			out = append(out, p...)
		case string:
			out = append(out, p)
		}
	}
	return out
}

// Two principals get two pooled 2026-07-28 children; one principal keeps
// its own.
func TestServeOAuthTwoPrincipalsTwoChildren(t *testing.T) {
	checkServeLeaks(t)
	h := newServeHarness(t, withOAuth(t))
	is := is.New(t)
	pid := func(token string) string {
		t.Helper()
		status, _, body := h.rawDo(t, "POST", "/mcp",
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"pid","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			append(bearer(token), "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "pid")...)
		is.Equal(status, 200)
		i := strings.Index(body, `"text":"`)
		is.True(i >= 0) // body
		return strings.SplitN(body[i+len(`"text":"`):], `"`, 2)[0]
	}
	alice := pid(aliceToken)
	bob := pid(bobToken)
	is.True(alice != "" && bob != "")
	is.True(alice != bob)
	is.Equal(pid(aliceToken), alice)
	is.Equal(h.srv.pool.Len(), 2)
	is.Equal(h.srv.Sessions(), 0)
}

// OAuth and a static token exclude each other; the routes are checked.
func TestServeOAuthConfig(t *testing.T) {
	pr, err := server.NewProtectedResource(server.ResourceConfig{PublicURL: "https://h", Path: "/mcp", AuthorizationServers: []string{"https://h"}})
	if err != nil {
		t.Fatal(err)
	}
	cmd := []string{"server"}
	ok := func() *OAuthConfig { return &OAuthConfig{Verifier: testTokens, Resource: pr} }
	for _, tt := range []struct {
		name string
		cfg  ServeConfig
		err  string
	}{
		{"fine", ServeConfig{Command: cmd, OAuth: ok()}, ""},
		{"with a static token", ServeConfig{Command: cmd, AuthToken: "t", OAuth: ok()}, "exclude each other"},
		{"no verifier", ServeConfig{Command: cmd, OAuth: &OAuthConfig{Resource: pr}}, "needs a token verifier"},
		{"another endpoint", ServeConfig{Command: cmd, Path: "/other", OAuth: ok()}, "not the endpoint /other"},
		{"a bad scope", ServeConfig{Command: cmd, OAuth: &OAuthConfig{Verifier: testTokens, Resource: pr, RequiredScopes: []string{"a b"}}}, "invalid required scope"},
		{"a route on the endpoint", ServeConfig{Command: cmd, OAuth: &OAuthConfig{Verifier: testTokens, Resource: pr, Routes: map[string]http.Handler{"/mcp": http.NotFoundHandler()}}}, "a path serve answers itself"},
		{"a route on the health path", ServeConfig{Command: cmd, HealthPath: "/authorize", OAuth: &OAuthConfig{Verifier: testTokens, Resource: pr, Routes: map[string]http.Handler{"/authorize": http.NotFoundHandler()}}}, "a path serve answers itself"},
		{"a route on the metadata", ServeConfig{Command: cmd, OAuth: &OAuthConfig{Verifier: testTokens, Resource: pr, Routes: map[string]http.Handler{server.MetadataPath: http.NotFoundHandler()}}}, "metadata path"},
		{"a relative route", ServeConfig{Command: cmd, OAuth: &OAuthConfig{Verifier: testTokens, Resource: pr, Routes: map[string]http.Handler{"token": http.NotFoundHandler()}}}, "must start with /"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			_, err := NewServer(tt.cfg)
			if tt.err == "" {
				is.NoErr(err)
				return
			}
			is.True(err != nil && strings.Contains(err.Error(), tt.err)) // tt.err
		})
	}
}

// Routes are served without a token, beside the endpoint, behind the
// origin check and CORS.
func TestServeOAuthRoutes(t *testing.T) {
	checkServeLeaks(t)
	h := newServeHarness(t, func(cfg *ServeConfig) {
		withOAuth(t)(cfg)
		cfg.OAuth.Routes = map[string]http.Handler{
			"/token": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				is.New(t).Equal(r.Header.Get("Authorization"), "Basic Y2xpZW50OnNlY3JldA==") // untouched
				io.WriteString(w, "token endpoint")
			}),
		}
	})
	is := is.New(t)
	status, _, body := h.rawDo(t, "POST", "/token", "grant_type=x", "Authorization", "Basic Y2xpZW50OnNlY3JldA==")
	is.Equal(status, 200)
	is.Equal(body, "token endpoint")
	status, _, _ = h.rawDo(t, "POST", "/token", "grant_type=x", "Origin", "https://evil.example")
	is.Equal(status, 403)
}

// The gate comes before --modern-only's refusals (row 178).
func TestServeOAuthBeforeModernOnly(t *testing.T) {
	checkServeLeaks(t)
	h := newServeHarness(t, func(cfg *ServeConfig) {
		withOAuth(t)(cfg)
		cfg.ModernOnly = true
	})
	is := is.New(t)
	status, hdr, _ := h.rawDo(t, "GET", "/mcp", "")
	is.Equal(status, 401)
	is.Equal(hdr.Get("WWW-Authenticate"), oauthChallenge)
	status, _, _ = h.rawDo(t, "POST", "/mcp", serveInitBody)
	is.Equal(status, 401)
	status, hdr, _ = h.rawDo(t, "GET", "/mcp", "", bearer(aliceToken)...)
	is.Equal(status, 405)
	is.Equal(hdr.Get("Allow"), "POST")
	status, _, body := h.rawDo(t, "POST", "/mcp", serveInitBody, bearer(aliceToken)...)
	is.Equal(status, 400)
	is.True(strings.Contains(body, `"code":-32022`))
}
