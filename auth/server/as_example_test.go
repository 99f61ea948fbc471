package server_test

import (
	"context"
	"fmt"
	"net/http/httptest"

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
