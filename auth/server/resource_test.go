package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
)

func newResource(t *testing.T, c server.ResourceConfig) *server.ProtectedResource {
	t.Helper()
	pr, err := server.NewProtectedResource(c)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

const wantDoc = `{"resource":"https://mcp.example.com/mcp","authorization_servers":["https://mcp.example.com"],"scopes_supported":["mcp:tools","profile"],"bearer_methods_supported":["header"],"resource_name":"mcp-stdio"}`

// The document is served on the root and the path-aware well-known path,
// the same bytes whatever the request's Host or X-Forwarded-Host say.
func TestProtectedResourceMetadata(t *testing.T) {
	is := is.New(t)
	pr := newResource(t, server.ResourceConfig{
		PublicURL:            "HTTPS://MCP.Example.com",
		Path:                 "/mcp",
		AuthorizationServers: []string{"https://mcp.example.com"},
		ScopesSupported:      []string{"mcp:tools", "profile"},
		ResourceName:         "mcp-stdio",
	})
	is.Equal(pr.Resource(), "https://mcp.example.com/mcp")
	is.Equal(pr.MetadataURL(), "https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
	is.Equal(pr.MetadataPaths(), []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"})
	for _, path := range pr.MetadataPaths() {
		for _, host := range []string{"", "evil.example", `evil.example"`, "127.0.0.1:1"} {
			r := httptest.NewRequest("GET", "http://"+strings.Trim(host, `"`)+path, nil)
			if host != "" {
				r.Host = host
				r.Header.Set("X-Forwarded-Host", host)
				r.Header.Set("X-Forwarded-Proto", "http")
				r.Header.Set("Forwarded", "host="+host)
			}
			w := httptest.NewRecorder()
			pr.ServeHTTP(w, r)
			is.Equal(w.Code, 200)
			is.Equal(w.Header().Get("Content-Type"), "application/json")
			is.Equal(w.Body.String(), wantDoc) // path, host
		}
	}
	r := httptest.NewRequest("HEAD", "/.well-known/oauth-protected-resource/mcp", nil)
	w := httptest.NewRecorder()
	pr.ServeHTTP(w, r)
	is.Equal(w.Code, 200)
	is.Equal(w.Header().Get("Content-Length"), fmt.Sprint(len(wantDoc)))
	is.Equal(w.Body.Len(), 0)

	r = httptest.NewRequest("POST", "/.well-known/oauth-protected-resource", nil)
	w = httptest.NewRecorder()
	pr.ServeHTTP(w, r)
	is.Equal(w.Code, http.StatusMethodNotAllowed)
	is.Equal(w.Header().Get("Allow"), "GET, HEAD")

	r = httptest.NewRequest("GET", "/.well-known/oauth-protected-resource/other", nil)
	w = httptest.NewRecorder()
	pr.ServeHTTP(w, r)
	is.Equal(w.Code, http.StatusNotFound)
}

// A public URL with a path is a proxy's prefix: the resource and the
// challenges' metadata URL live under it, the paths serve answers do not.
func TestProtectedResourceUnderPrefix(t *testing.T) {
	is := is.New(t)
	pr := newResource(t, server.ResourceConfig{
		PublicURL:            "https://h.example:8443/tenant/a/",
		Path:                 "/mcp",
		AuthorizationServers: []string{"https://idp.example/realms/x"},
	})
	is.Equal(pr.Resource(), "https://h.example:8443/tenant/a/mcp")
	is.Equal(pr.MetadataURL(), "https://h.example:8443/tenant/a/.well-known/oauth-protected-resource/mcp")
	is.Equal(pr.MetadataPaths(), []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"})
	w := httptest.NewRecorder()
	pr.ServeHTTP(w, httptest.NewRequest("GET", "/.well-known/oauth-protected-resource", nil))
	is.Equal(w.Body.String(), `{"resource":"https://h.example:8443/tenant/a/mcp","authorization_servers":["https://idp.example/realms/x"],"bearer_methods_supported":["header"]}`)

	root := newResource(t, server.ResourceConfig{PublicURL: "http://127.0.0.1:8080", Path: "/", AuthorizationServers: []string{"http://127.0.0.1:8080"}})
	is.Equal(root.Resource(), "http://127.0.0.1:8080/")
	is.Equal(root.MetadataURL(), "http://127.0.0.1:8080/.well-known/oauth-protected-resource")
	is.Equal(root.MetadataPaths(), []string{"/.well-known/oauth-protected-resource"})
}

func TestProtectedResourceChallenge(t *testing.T) {
	is := is.New(t)
	pr := newResource(t, server.ResourceConfig{PublicURL: "https://mcp.example.com", Path: "/mcp", AuthorizationServers: []string{"https://mcp.example.com"}})
	const meta = `resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`
	for _, tt := range []struct {
		code   string
		scopes []string
		want   string
	}{
		{"", nil, `Bearer ` + meta},
		{"", []string{"mcp:tools", "profile"}, `Bearer ` + meta + `, scope="mcp:tools profile"`},
		{server.ErrorInvalidToken, []string{"mcp:tools"}, `Bearer error="invalid_token", ` + meta + `, scope="mcp:tools"`},
		{server.ErrorInvalidRequest, nil, `Bearer error="invalid_request", ` + meta},
		{server.ErrorInsufficientScope, []string{"mcp:tools", "mcp:admin"}, `Bearer error="insufficient_scope", scope="mcp:tools mcp:admin", ` + meta},
		{server.ErrorInsufficientScope, nil, `Bearer error="insufficient_scope", ` + meta},
	} {
		is.Equal(pr.Challenge(tt.code, tt.scopes), tt.want)
	}
}

func TestNewProtectedResourceRefuses(t *testing.T) {
	ok := server.ResourceConfig{PublicURL: "https://h", Path: "/mcp", AuthorizationServers: []string{"https://h"}}
	for _, tt := range []struct {
		name string
		edit func(*server.ResourceConfig)
		want string
	}{
		{"no public URL", func(c *server.ResourceConfig) { c.PublicURL = "" }, "needs the public URL"},
		{"a relative public URL", func(c *server.ResourceConfig) { c.PublicURL = "/mcp" }, "invalid public URL"},
		{"another scheme", func(c *server.ResourceConfig) { c.PublicURL = "ftp://h" }, "invalid public URL"},
		{"userinfo", func(c *server.ResourceConfig) { c.PublicURL = "https://u:p@h" }, "invalid public URL"},
		{"a relative path", func(c *server.ResourceConfig) { c.Path = "mcp" }, "must start with /"},
		{"no authorization server", func(c *server.ResourceConfig) { c.AuthorizationServers = nil }, "at least one authorization server"},
		{"an issuer with a fragment", func(c *server.ResourceConfig) { c.AuthorizationServers = []string{"https://h#x"} }, "invalid authorization server"},
		{"a scope with a quote", func(c *server.ResourceConfig) { c.ScopesSupported = []string{`a"b`} }, "invalid scope"},
		{"a scope with a space", func(c *server.ResourceConfig) { c.ScopesSupported = []string{"a b"} }, "invalid scope"},
		{"an empty scope", func(c *server.ResourceConfig) { c.ScopesSupported = []string{""} }, "invalid scope"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.edit(&c)
			_, err := server.NewProtectedResource(c)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// verifierFunc adapts a function to a Verifier.
type verifierFunc func(ctx context.Context, token string) (server.Principal, error)

func (f verifierFunc) Verify(ctx context.Context, token string) (server.Principal, error) {
	return f(ctx, token)
}

func issuer(name string, accept string, down bool) server.Verifier {
	return verifierFunc(func(_ context.Context, token string) (server.Principal, error) {
		switch {
		case down:
			return server.Principal{}, errors.New(name + " is unreachable")
		case token == accept:
			return server.Principal{Issuer: name, Subject: "alice"}, nil
		}
		return server.Principal{}, fmt.Errorf("%w: not issued by %s", server.ErrInvalidToken, name)
	})
}

func TestVerifiers(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	a, b := issuer("https://a", "ta", false), issuer("https://b", "tb", false)
	p, err := server.Verifiers(a, b).Verify(ctx, "tb")
	is.NoErr(err)
	is.Equal(p.Key(), "https://b alice")

	_, err = server.Verifiers(a, b).Verify(ctx, "tc")
	is.True(errors.Is(err, server.ErrInvalidToken))
	is.Equal(err.Error(), "invalid token: not issued by https://a") // the first refusal

	// One issuer down: a token the others refuse cannot be decided.
	_, err = server.Verifiers(a, issuer("https://c", "", true)).Verify(ctx, "tc")
	is.True(err != nil && !errors.Is(err, server.ErrInvalidToken))
	// But one that another accepts passes.
	p, err = server.Verifiers(issuer("https://c", "", true), a).Verify(ctx, "ta")
	is.NoErr(err)
	is.Equal(p.Issuer, "https://a")

	_, err = server.Verifiers().Verify(ctx, "ta")
	is.True(errors.Is(err, server.ErrInvalidToken))
}

func TestPrincipalKey(t *testing.T) {
	is := is.New(t)
	is.Equal(server.Principal{Issuer: "https://as", Subject: "u1"}.Key(), "https://as u1")
	// The same subject of two issuers is two principals.
	is.True(server.Principal{Issuer: "https://a", Subject: "u"}.Key() != server.Principal{Issuer: "https://b", Subject: "u"}.Key())
}
