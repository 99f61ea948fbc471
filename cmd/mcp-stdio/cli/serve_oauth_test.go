package cli

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/mcp-stdio/mcp-stdio/auth/server"
)

// OAuth names its URLs from --public-url, or from the address a loopback
// --listen bound; anything else is refused with a line saying what to give.
func TestOAuthPublicURL(t *testing.T) {
	for _, tt := range []struct {
		publicURL, listen string
		want, err         string
	}{
		{"https://mcp.example.com/p", "0.0.0.0:8080", "https://mcp.example.com/p", ""},
		{"", "127.0.0.1:8080", "http://127.0.0.1:8080", ""},
		{"", "LOCALHOST:9000", "http://localhost:9000", ""},
		{"", "[::1]:8080", "http://[::1]:8080", ""},
		{"", "0.0.0.0:8080", "", "OAuth needs --public-url URL"},
		{"", ":8080", "", "OAuth needs --public-url URL"},
		{"", "192.168.1.2:8080", "", "OAuth needs --public-url URL"},
	} {
		t.Run(tt.listen, func(t *testing.T) {
			is := is.New(t)
			got, err := oauthPublicURL(tt.publicURL, tt.listen, fixedAddr(tt.listen))
			if tt.err != "" {
				is.True(err != nil && strings.Contains(err.Error(), tt.err)) // tt.err
				is.True(!strings.Contains(err.Error(), "\n"))                // one line
				return
			}
			is.NoErr(err)
			is.Equal(got, tt.want)
		})
	}
}

// --require-scope without an OAuth mode is refused; without either, serve
// has no OAuth.
func TestServeRequireScopeNeedsOAuth(t *testing.T) {
	is := is.New(t)
	var f serveFlags
	fs, _ := newServeFlagSet(&f)
	is.NoErr(fs.Parse([]string{"--require-scope", "mcp", "--require-scope", "profile"}))
	is.Equal([]string(f.requireScopes), []string{"mcp", "profile"})
	_, _, err := f.oauthConfig(t.Context(), fixedAddr("127.0.0.1:8080"), io.Discard, slog.New(slog.DiscardHandler))
	is.True(err != nil && strings.Contains(err.Error(), "--require-scope needs OAuth"))

	f = serveFlags{}
	fs, _ = newServeFlagSet(&f)
	is.NoErr(fs.Parse(nil))
	o, _, err := f.oauthConfig(t.Context(), fixedAddr("127.0.0.1:8080"), io.Discard, slog.New(slog.DiscardHandler))
	is.NoErr(err)
	is.True(o == nil)
}

// fixedAddr is the TCP address listen names, as if bound there.
func fixedAddr(listen string) net.Addr {
	addr, err := net.ResolveTCPAddr("tcp", listen)
	if err != nil {
		return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	}
	return addr
}

// The embedded authorization server's flags are checked before serve
// listens, each failure one sentence saying what to do.
func TestServeOAuthFlagsChecked(t *testing.T) {
	for _, c := range []struct {
		f    serveFlags
		want string
	}{
		{serveFlags{listen: "127.0.0.1:0", oauth: serveOAuthFlags{passwordFile: "p"}}, "--oauth-password-file needs --enable-oauth"},
		{serveFlags{listen: "127.0.0.1:0", oauth: serveOAuthFlags{tokenStore: "s"}}, "--token-store needs --enable-oauth"},
		{serveFlags{listen: "127.0.0.1:0", oauth: serveOAuthFlags{redirectURIs: stringList{"https://x/cb"}}}, "--allow-redirect-uri needs --enable-oauth"},
		{serveFlags{listen: "127.0.0.1:0", oauth: serveOAuthFlags{trustedProxies: prefixList{netip.MustParsePrefix("127.0.0.1/32")}}}, "--trusted-proxy needs --enable-oauth"},
		{serveFlags{listen: "127.0.0.1:0", authToken: "t", oauth: serveOAuthFlags{enable: true}}, "exclude each other"},
		{serveFlags{listen: "0.0.0.0:8080", oauth: serveOAuthFlags{enable: true}}, "needs --public-url"},
	} {
		err := c.f.oauth.check(&c.f)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.f.oauth, err, c.want)
		}
	}
	for _, f := range []serveFlags{
		{listen: "127.0.0.1:0", oauth: serveOAuthFlags{enable: true}},
		{listen: "0.0.0.0:8080", publicURL: "https://mcp.example.com", oauth: serveOAuthFlags{enable: true}},
		{listen: "127.0.0.1:0"},
	} {
		if err := f.oauth.check(&f); err != nil {
			t.Errorf("%+v: %v", f, err)
		}
	}
}

func TestOriginOf(t *testing.T) {
	for in, want := range map[string]string{
		"https://MCP.example.com/prefix?x": "https://mcp.example.com",
		"http://127.0.0.1:8080":            "http://127.0.0.1:8080",
	} {
		if got, err := originOf(in); err != nil || got != want {
			t.Errorf("originOf(%q) = %q, %v", in, got, err)
		}
	}
}

// The authorization server reaches --allow-client-id-url clients through
// the CIMD fetcher: only the allowlisted URLs are clients, and any other
// client_id is refused without a fetch.
func TestCIMDClientsFollowTheAllowlist(t *testing.T) {
	is := is.New(t)
	fetcher, err := server.NewClientMetadataFetcher(server.ClientMetadataConfig{AllowURLs: []string{"https://app.example/client.json"}})
	is.NoErr(err)
	c := cimdClients{fetcher}
	is.True(c.Allowed("https://app.example/client.json"))
	is.True(!c.Allowed("https://app.example/other.json"))
	_, _, err = c.Client(t.Context(), "https://app.example/other.json")
	is.True(errors.Is(err, server.ErrClientIDNotAllowed))
}

// --trusted-proxy takes addresses and prefixes; the authorization server
// built from the flags counts the client a trusted proxy forwarded for,
// and serve's end writes its store.
func TestServeTrustedProxy(t *testing.T) {
	is := is.New(t)
	var f serveFlags
	fs, _ := newServeFlagSet(&f)
	store := filepath.Join(t.TempDir(), "oauth.json")
	is.NoErr(fs.Parse([]string{"--enable-oauth", "--token-store", store, "--trusted-proxy", "127.0.0.1", "--trusted-proxy", "10.0.0.0/8", "--trusted-proxy", "::ffff:10.1.2.3"}))
	is.Equal(f.oauth.trustedProxies.String(), "127.0.0.1/32,10.0.0.0/8,10.1.2.3/32")
	is.True(fs.Parse([]string{"--trusted-proxy", "10.0.0.0/33"}) != nil)
	is.True(fs.Parse([]string{"--trusted-proxy", "proxy.example"}) != nil)

	o, _, err := f.oauthConfig(t.Context(), fixedAddr("127.0.0.1:8080"), io.Discard, slog.New(slog.DiscardHandler))
	is.NoErr(err)
	register := func(client string) int {
		r := httptest.NewRequest(http.MethodPost, "/register", strings.NewReader(`{"redirect_uris":["http://127.0.0.1:1/cb"]}`))
		r.RemoteAddr = "10.9.9.9:4000"
		r.Header.Set("X-Forwarded-For", client)
		w := httptest.NewRecorder()
		o.Routes["/register"].ServeHTTP(w, r)
		return w.Code
	}
	for range 20 {
		is.Equal(register("198.51.100.1"), http.StatusCreated)
	}
	is.Equal(register("198.51.100.1"), http.StatusTooManyRequests)
	is.Equal(register("198.51.100.2"), http.StatusCreated) // another client behind the proxy
	f.oauth.close(slog.New(slog.DiscardHandler))
	b, err := os.ReadFile(store)
	is.NoErr(err)
	is.Equal(strings.Count(string(b), `"client_id"`), 21)
}
