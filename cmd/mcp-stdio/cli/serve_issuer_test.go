package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// issuerOAuth parses args and env as serve would and returns the OAuth
// configuration, or the error serve would print.
func issuerOAuth(t *testing.T, env map[string]string, args ...string) (*serveFlags, error) {
	t.Helper()
	var f serveFlags
	fs, _ := newServeFlagSet(&f)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	f.issuer.readEnv(func(k string) string { return env[k] })
	_, _, err := f.oauthConfig(t.Context(), fixedAddr("127.0.0.1:8080"), io.Discard, slog.New(slog.DiscardHandler))
	return &f, err
}

// --oauth-issuer discovers each issuer at start and lists them as the
// resource's authorization servers; what it cannot use is refused at start
// in one line that says what to do.
func TestServeOAuthIssuerFlags(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var issuer string
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "jwks_uri": issuer + "/jwks", "introspection_endpoint": issuer + "/introspect"})
		case "/jwks":
			json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1"}}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer idp.Close()
	issuer = idp.URL
	base := []string{"--public-url", "https://mcp.example.com", "--oauth-issuer", issuer}

	t.Run("good", func(t *testing.T) {
		is := is.New(t)
		var f serveFlags
		fs, _ := newServeFlagSet(&f)
		is.NoErr(fs.Parse(append(base, "--oauth-issuer", issuer, "--oauth-introspection-client-id", "rs")))
		f.issuer.readEnv(func(k string) string { return map[string]string{server.IntrospectionSecretEnv: "s"}[k] })
		is.Equal(f.issuer.secret, "s")
		o, _, err := f.oauthConfig(t.Context(), fixedAddr("127.0.0.1:8080"), io.Discard, slog.New(slog.DiscardHandler))
		is.NoErr(err)
		is.Equal(o.Resource.Resource(), "https://mcp.example.com/mcp")
		rec := httptest.NewRecorder()
		o.Resource.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, server.MetadataPath, nil))
		var md struct {
			AuthorizationServers []string `json:"authorization_servers"`
		}
		is.NoErr(json.Unmarshal(rec.Body.Bytes(), &md))
		is.Equal(md.AuthorizationServers, []string{issuer, issuer})
	})
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"client id without issuer", nil, []string{"--oauth-introspection-client-id", "rs"}, "needs --oauth-issuer"},
		{"secret without client id", map[string]string{server.IntrospectionSecretEnv: "s"}, base, "--oauth-introspection-client-id is not"},
		{"with a static token", nil, append([]string{"--auth-token", "x"}, base...), "exclude each other"},
		{"plain http beyond loopback", nil, []string{"--public-url", "https://mcp.example.com", "--oauth-issuer", "http://idp.example.com"}, "plain http is allowed only on loopback"},
		{"another issuer in the metadata", nil, []string{"--public-url", "https://mcp.example.com", "--oauth-issuer", issuer + "/"}, "set --oauth-issuer to exactly the issuer"},
		{"no public URL", nil, []string{"--listen", "0.0.0.0:8080", "--oauth-issuer", issuer}, "--public-url"},
		{"no introspection rate", nil, append([]string{"--oauth-introspection-rate", "0"}, base...), "--oauth-introspection-rate 0: give at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			_, err := issuerOAuth(t, tc.env, tc.args...)
			is.True(err != nil && strings.Contains(err.Error(), tc.want)) // tc.want
			is.True(!strings.Contains(err.Error(), "\n"))                 // one line
		})
	}
}

// An issuer whose certificate a private CA signed: without --ca-file the
// discovery fails at start in one line that names --ca-file; with the
// CA's file it succeeds. A file without a certificate, or --ca-file
// without --oauth-issuer, is refused at start.
func TestServeOAuthIssuerCAFile(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := transporttest.NewCA(t)
	var issuer string
	idp := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "jwks_uri": issuer + "/jwks"})
		case "/jwks":
			json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1"}}})
		default:
			http.NotFound(w, r)
		}
	}))
	idp.TLS = ca.ServerConfig(t, "127.0.0.1")
	idp.Config.ErrorLog = log.New(io.Discard, "", 0)
	idp.StartTLS()
	defer idp.Close()
	issuer = idp.URL
	caFile := ca.WriteFile(t)
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--public-url", "https://mcp.example.com", "--oauth-issuer", issuer}

	is := is.New(t)
	_, err = issuerOAuth(t, nil, base...)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "--ca-file PEM"))
	is.True(!strings.Contains(err.Error(), "\n"))

	_, err = issuerOAuth(t, nil, append(base, "--ca-file", caFile)...)
	is.NoErr(err)

	_, err = issuerOAuth(t, nil, append(base, "--ca-file", notPEM)...)
	is.True(err != nil && strings.Contains(err.Error(), "--ca-file "+notPEM+": no PEM certificate"))
	_, err = issuerOAuth(t, nil, append(base, "--ca-file", notPEM+".missing")...)
	is.True(err != nil && strings.Contains(err.Error(), "no such file"))
	_, err = issuerOAuth(t, nil, "--ca-file", caFile)
	is.True(err != nil && strings.Contains(err.Error(), "--ca-file needs --oauth-issuer"))
}
