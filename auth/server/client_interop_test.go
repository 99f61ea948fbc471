package server_test

import (
	"net/http/httptest"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/auth"
	"github.com/mcp-stdio/mcp-stdio/auth/server"
)

// The relay's OAuth client (package auth, the client half) reads what the
// server half writes: every challenge's parameters, and the metadata.
// Only this test imports the client.
func TestTheClientHalfReadsTheServerHalf(t *testing.T) {
	is := is.New(t)
	pr := newResource(t, server.ResourceConfig{
		PublicURL:            "https://mcp.example.com/p",
		Path:                 "/mcp",
		AuthorizationServers: []string{"https://as.example"},
		ScopesSupported:      []string{"mcp:tools", "profile"},
	})
	for _, code := range []string{"", server.ErrorInvalidToken, server.ErrorInvalidRequest, server.ErrorInsufficientScope} {
		cs := auth.ParseWWWAuthenticate([]string{pr.Challenge(code, []string{"mcp:tools", "profile"})})
		is.Equal(len(cs), 1)
		is.Equal(cs[0].Scheme, "Bearer")
		is.Equal(cs[0].Params["resource_metadata"], pr.MetadataURL())
		is.Equal(cs[0].Params["scope"], "mcp:tools profile")
		e, ok := cs[0].Params["error"]
		is.Equal(ok, code != "")
		is.Equal(e, code)
	}
	w := httptest.NewRecorder()
	pr.ServeHTTP(w, httptest.NewRequest("GET", "/.well-known/oauth-protected-resource/mcp", nil))
	m, err := auth.ParseProtectedResourceMetadata(w.Body.Bytes())
	is.NoErr(err)
	is.Equal(m.Resource, "https://mcp.example.com/p/mcp")
	is.Equal(m.AuthorizationServers, []string{"https://as.example"})
}
