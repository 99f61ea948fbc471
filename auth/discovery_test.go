package auth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/auth/authtest"
)

// paths returns the paths the server saw, in order.
func paths(srv *authtest.Server) []string {
	var out []string
	for _, r := range srv.Requests() {
		out = append(out, r.Path)
	}
	return out
}

func TestDiscoveryResourceMetadataFromChallenge(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{PRMPath: "/custom/metadata/location.json"})
	h := newHarness(t, srv, nil)
	d, err := h.c.discover(context.Background(), hintsFrom(challenge(srv)))
	is.NoErr(err)
	is.Equal(d.resource, srv.MCPURL())
	is.Equal(d.as.Issuer, srv.Issuer())
	is.True(d.fromMetadata)
	p := paths(srv)
	is.Equal(p[0], "/custom/metadata/location.json") // the challenge's URL first, nothing guessed before it
}

func TestDiscoveryPathAwareKeepsQuery(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{})
	h := newHarness(t, srv, func(o *Options) { o.ServerURL = srv.URL + "/mcp?tenant=t1" })
	d, err := h.c.discover(context.Background(), challengeHints{}) // no challenge (eager start)
	is.NoErr(err)
	is.Equal(d.resource, srv.MCPURL())
	first := srv.Requests()[0]
	is.Equal(first.Path, "/.well-known/oauth-protected-resource/mcp")
	is.Equal(first.Query.Get("tenant"), "t1") // mcp-remote#244
}

func TestDiscoveryRootFallback(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{PRMPath: "/.well-known/oauth-protected-resource"})
	h := newHarness(t, srv, nil)
	d, err := h.c.discover(context.Background(), challengeHints{})
	is.NoErr(err)
	is.Equal(d.resource, srv.URL) // the root document names the origin, which covers /mcp
	is.Equal(paths(srv)[:2], []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"})
}

func TestDiscoveryAuthServerMetadataOrder(t *testing.T) {
	tests := []struct {
		name string
		mode authtest.MetadataMode
		want []string // metadata paths requested, in order
	}{
		{"RFC 8414 path insertion (mcp-remote#207)", authtest.RFC8414, []string{"/.well-known/oauth-authorization-server/tenant1"}},
		{"OpenID with path insertion", authtest.OpenID, []string{"/.well-known/oauth-authorization-server/tenant1", "/.well-known/openid-configuration/tenant1"}},
		{"OpenID appended", authtest.OpenIDAppended, []string{"/.well-known/oauth-authorization-server/tenant1", "/.well-known/openid-configuration/tenant1", "/tenant1/.well-known/openid-configuration"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			srv := authtest.NewServer(t, authtest.Options{IssuerPath: "/tenant1", Metadata: tt.mode})
			h := newHarness(t, srv, nil)
			d, err := h.c.discover(context.Background(), hintsFrom(challenge(srv)))
			is.NoErr(err)
			is.Equal(d.as.Issuer, srv.URL+"/tenant1")
			is.Equal(d.as.TokenEndpoint, srv.URL+"/tenant1/token")
			var got []string
			for _, p := range paths(srv) {
				if strings.Contains(p, "openid") || strings.Contains(p, "authorization-server") {
					got = append(got, p)
				}
			}
			is.Equal(got, tt.want) // never the root form for an issuer with a path
		})
	}
}

func TestDiscoveryOpenIDWithoutPath(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{Metadata: authtest.OpenID})
	h := newHarness(t, srv, nil)
	d, err := h.c.discover(context.Background(), challengeHints{})
	is.NoErr(err)
	is.True(d.fromMetadata)
	is.True(slicesContain(paths(srv), "/.well-known/openid-configuration"))
}

func TestDiscoveryDefaultsWithoutAnyMetadata(t *testing.T) {
	is := is.New(t)
	// MCP 2025-03-26 server: no PRM, no AS metadata (claude-code#31349).
	srv := authtest.NewServer(t, authtest.Options{PRMPath: "-", Metadata: authtest.NoMetadata})
	h := newHarness(t, srv, nil)
	d, err := h.c.discover(context.Background(), hintsFrom(challenge(srv)))
	is.NoErr(err)
	is.True(!d.fromMetadata)
	is.Equal(d.as.AuthorizationEndpoint, srv.URL+"/authorize")
	is.Equal(d.as.TokenEndpoint, srv.URL+"/token")
	is.Equal(d.as.RegistrationEndpoint, srv.URL+"/register")
	is.Equal(d.resource, srv.MCPURL())

	// And the whole sign-in works on them.
	is.NoErr(h.c.SignIn(context.Background()))
	is.Equal(srv.Count("/register", ""), 1)
	is.Equal(srv.Count("/token", "authorization_code"), 1)
}

func TestDiscoveryAuthServerHTTPSRule(t *testing.T) {
	t.Run("plain http elsewhere is refused", func(t *testing.T) {
		is := is.New(t)
		srv := authtest.NewServer(t, authtest.Options{PRMServers: []string{"http://as.example.com", "ftp://as.example.com"}})
		h := newHarness(t, srv, nil)
		_, err := h.c.discover(context.Background(), challengeHints{})
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "not https")) // one clear message
	})
	t.Run("the first acceptable server is used", func(t *testing.T) {
		is := is.New(t)
		srv := authtest.NewServer(t, authtest.Options{})
		srv.Update(func(o *authtest.Options) { o.PRMServers = []string{"http://as.example.com", srv.Issuer()} })
		h := newHarness(t, srv, nil)
		d, err := h.c.discover(context.Background(), challengeHints{})
		is.NoErr(err)
		is.Equal(d.as.Issuer, srv.Issuer()) // http on loopback is fine
	})
}

func TestDiscoveryRefusals(t *testing.T) {
	tests := []struct {
		name string
		o    authtest.Options
		want string
	}{
		{"resource mismatch (MCP 2026-07-28)", authtest.Options{PRMResource: "https://evil.example.com/mcp"}, "not for"},
		{"metadata issuer mismatch", authtest.Options{MetadataIssuer: "https://attacker.example.com"}, "names issuer"},
		{"no S256", authtest.Options{CodeChallengeMethods: []string{"plain"}}, "S256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			srv := authtest.NewServer(t, tt.o)
			h := newHarness(t, srv, nil)
			err := h.c.SignIn(context.Background())
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), tt.want)) // the reason
			is.Equal(srv.Count("/authorize", ""), 0)        // nothing was used
			is.Equal(srv.Count("/register", ""), 0)
		})
	}
}

func TestDiscoveryBadInput(t *testing.T) {
	docs := map[string]struct {
		prm, as string
		want    string
	}{
		"PRM not JSON anywhere":       {prm: "<html>hello</html>", want: "protected resource metadata is malformed"},
		"PRM wrong type":              {prm: `{"resource":"RES","authorization_servers":"AS"}`, want: "wrong type"},
		"AS metadata truncated":       {prm: `{"resource":"RES","authorization_servers":["AS"]}`, as: `{"issuer":`, want: "authorization server metadata is malformed"},
		"AS metadata endpoint http":   {prm: `{"resource":"RES","authorization_servers":["AS"]}`, as: `{"issuer":"AS","token_endpoint":"http://evil.example/token"}`, want: "not https"},
		"AS metadata wrong bool type": {prm: `{"resource":"RES","authorization_servers":["AS"]}`, as: `{"issuer":"AS","authorization_response_iss_parameter_supported":"yes"}`, want: "wrong type"},
	}
	for name, tt := range docs {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			var base string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fill := func(s string) string {
					return strings.ReplaceAll(strings.ReplaceAll(s, "RES", base+"/mcp"), `"AS"`, `"`+base+`"`)
				}
				switch {
				case strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") && tt.prm != "":
					w.Write([]byte(fill(tt.prm)))
				case strings.HasPrefix(r.URL.Path, "/.well-known/oauth-authorization-server") && tt.as != "":
					w.Write([]byte(fill(tt.as)))
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			base = srv.URL
			h := newHarness(t, &authtest.Server{URL: srv.URL}, func(o *Options) { o.ServerURL = srv.URL + "/mcp" })
			_, err := h.c.discover(context.Background(), challengeHints{})
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), tt.want)) // one clear message
		})
	}
}

func TestDiscoveryUnreachableAuthServer(t *testing.T) {
	is := is.New(t)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	srv := authtest.NewServer(t, authtest.Options{PRMServers: []string{deadURL}})
	h := newHarness(t, srv, nil)
	err := h.c.SignIn(context.Background())
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "cannot reach")) // one clear message, no hang
}

func slicesContain(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// FindOAuthMetadata tells whether a server publishes what a sign-in
// starts from, looking where a sign-in would: the challenge's URL first,
// then the well-known ones; then, as in MCP 2025-03-26, the origin's
// authorization server metadata. Nothing found is no error.
func TestFindOAuthMetadata(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{PRMPath: "/custom/prm.json"})
	at, err := FindOAuthMetadata(context.Background(), nil, srv.MCPURL(), challenge(srv))
	is.NoErr(err)
	is.Equal(at, srv.URL+"/custom/prm.json")
	is.Equal(paths(srv), []string{"/custom/prm.json"})

	// No protected resource metadata, but the origin's authorization
	// server metadata (MCP 2025-03-26).
	old := authtest.NewServer(t, authtest.Options{PRMPath: "-"})
	at, err = FindOAuthMetadata(context.Background(), nil, old.MCPURL(), nil)
	is.NoErr(err)
	is.Equal(at, old.URL+"/.well-known/oauth-authorization-server")
	is.Equal(paths(old), []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource", "/.well-known/oauth-authorization-server"})

	// Neither: a plain bearer token server.
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	at, err = FindOAuthMetadata(context.Background(), nil, plain.URL+"/mcp", nil)
	is.NoErr(err)
	is.Equal(at, "")

	// A document for another resource is an error, not "none".
	other := authtest.NewServer(t, authtest.Options{PRMResource: "https://elsewhere.example/mcp"})
	_, err = FindOAuthMetadata(context.Background(), nil, other.MCPURL(), nil)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), `is for resource "https://elsewhere.example/mcp"`))
	http.DefaultClient.CloseIdleConnections()
}
