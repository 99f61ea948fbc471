package server_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
)

// An embedded authorization server for a resource: the one-time sign-in
// code goes to the operator (serve prints it on stderr), the handler
// serves the endpoints, and the server verifies the tokens it issues.
func ExampleNewAuthorizationServer() {
	as, err := server.NewAuthorizationServer(server.AuthorizationServerConfig{
		Issuer:     "http://127.0.0.1:8080",
		Resource:   "http://127.0.0.1:8080/mcp",
		SignInCode: func(code string) { fmt.Println("sign-in code printed:", len(code) == 14) },
	})
	if err != nil {
		panic(err)
	}
	w := httptest.NewRecorder()
	as.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/.well-known/oauth-authorization-server", nil))
	fmt.Println(w.Code, as.Metadata().TokenEndpoint)
	_, err = as.Verify(context.Background(), "not a token")
	fmt.Println(err)
	// Output:
	// sign-in code printed: true
	// 200 http://127.0.0.1:8080/token
	// invalid token: unknown or revoked
}

// Behind a proxy (here, one on loopback), the per-source limits count the
// address the proxy forwarded for: one client registering too often is
// told when to retry, and another is not slowed.
func ExampleAuthorizationServerConfig_trustedProxies() {
	as, err := server.NewAuthorizationServer(server.AuthorizationServerConfig{
		Issuer:         "https://mcp.example.com",
		Resource:       "https://mcp.example.com/mcp",
		SignInCode:     func(string) {},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
	})
	if err != nil {
		panic(err)
	}
	defer as.Close()
	register := func(client string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/register", strings.NewReader(`{"redirect_uris":["http://127.0.0.1:8976/callback"]}`))
		r.RemoteAddr = "127.0.0.1:50000" // the proxy
		r.Header.Set("X-Forwarded-For", client)
		w := httptest.NewRecorder()
		as.Handler().ServeHTTP(w, r)
		return w
	}
	for range 20 {
		register("198.51.100.1")
	}
	w := register("198.51.100.1")
	fmt.Println(w.Code, "Retry-After:", w.Header().Get("Retry-After"))
	fmt.Println(register("198.51.100.2").Code)
	// Output:
	// 429 Retry-After: 60
	// 201
}

// With a store, registrations are written in batches; Close writes the
// last one, so that a restart knows every client.
func ExampleAuthorizationServer_Close() {
	dir, err := os.MkdirTemp("", "mcp-stdio-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	cfg := server.AuthorizationServerConfig{
		Issuer:     "http://127.0.0.1:8080",
		Resource:   "http://127.0.0.1:8080/mcp",
		SignInCode: func(string) {},
		StorePath:  filepath.Join(dir, "oauth.json"),
	}
	as, err := server.NewAuthorizationServer(cfg)
	if err != nil {
		panic(err)
	}
	w := httptest.NewRecorder()
	as.Handler().ServeHTTP(w, httptest.NewRequest("POST", "/register", strings.NewReader(`{"redirect_uris":["http://127.0.0.1:8976/callback"]}`)))
	fmt.Println("registered:", w.Code)
	fmt.Println("closed:", as.Close())
	b, err := os.ReadFile(cfg.StorePath)
	fmt.Println("stored:", err == nil && strings.Contains(string(b), `"client_id"`))
	// Output:
	// registered: 201
	// closed: <nil>
	// stored: true
}
