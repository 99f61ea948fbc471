package server_test

import (
	"fmt"
	"net/http/httptest"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
)

// A protected resource published at https://mcp.example.com/mcp: its
// metadata document, and the challenge of a 401.
func ExampleNewProtectedResource() {
	pr, err := server.NewProtectedResource(server.ResourceConfig{
		PublicURL:            "https://mcp.example.com",
		Path:                 "/mcp",
		AuthorizationServers: []string{"https://mcp.example.com"},
		ScopesSupported:      []string{"mcp:tools"},
	})
	if err != nil {
		panic(err)
	}
	w := httptest.NewRecorder()
	pr.ServeHTTP(w, httptest.NewRequest("GET", "/.well-known/oauth-protected-resource/mcp", nil))
	fmt.Println(w.Body.String())
	fmt.Println(pr.Challenge("", []string{"mcp:tools"}))
	fmt.Println(pr.Challenge(server.ErrorInsufficientScope, []string{"mcp:tools"}))
	// Output:
	// {"resource":"https://mcp.example.com/mcp","authorization_servers":["https://mcp.example.com"],"scopes_supported":["mcp:tools"],"bearer_methods_supported":["header"]}
	// Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp:tools"
	// Bearer error="insufficient_scope", scope="mcp:tools", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
}
