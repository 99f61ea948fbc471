package httpguard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/mcp-stdio/mcp-stdio/mw"
	"github.com/mcp-stdio/mcp-stdio/mw/httpguard"
)

// oneToken accepts the token "t1", for alice, with the scope "mcp".
type oneToken struct{}

func (oneToken) VerifyToken(_ context.Context, token string) (string, []string, error) {
	if token != "t1" {
		return "", nil, fmt.Errorf("%w: unknown", httpguard.ErrInvalidToken)
	}
	return "https://as.example alice", []string{"mcp"}, nil
}

// challenges stands for auth/server's ProtectedResource.
type challenges struct{}

func (challenges) Challenge(code string, scopes []string) string {
	return fmt.Sprintf("Bearer error=%q scopes=%q", code, scopes)
}

// ExampleRequireOAuth: the gate refuses a request without a valid token,
// with the resource's challenge, and hands the others on with their
// principal and without their token.
func ExampleRequireOAuth() {
	gate := httpguard.RequireOAuth(httpguard.OAuthOptions{Verifier: oneToken{}, Challenges: challenges{}, RequiredScopes: []string{"mcp"}})
	h := gate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Printf("passed: principal %q, Authorization %q\n", mw.PrincipalOf(r.Context()), r.Header.Get("Authorization"))
	}))
	for _, auth := range []string{"", "Bearer t2", "bearer t1"} {
		r := httptest.NewRequest("POST", "/mcp", nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			fmt.Println(w.Code, w.Header().Get("WWW-Authenticate"))
		}
	}
	// Output:
	// 401 Bearer error="" scopes=["mcp"]
	// 401 Bearer error="invalid_token" scopes=["mcp"]
	// passed: principal "https://as.example alice", Authorization ""
}
