package httpguard_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/mcp-stdio/mcp-stdio/mw/httpguard"
)

// ExampleOriginPolicy shows which browser origins may call a local server.
func ExampleOriginPolicy() {
	p := httpguard.OriginPolicy{Allow: []string{"chrome-extension://abcdef"}}
	for _, origin := range []string{"", "http://localhost:5173", "http://[::1]:8080", "chrome-extension://abcdef", "https://evil.example", "null"} {
		fmt.Printf("%q %v\n", origin, p.Allowed(origin))
	}
	// Output:
	// "" true
	// "http://localhost:5173" true
	// "http://[::1]:8080" true
	// "chrome-extension://abcdef" true
	// "https://evil.example" false
	// "null" false
}

// ExampleCORS lets a page on an allowed origin call the endpoint: its
// preflight is answered before any authentication, and its requests'
// responses name its origin. A page on another origin is refused by
// CheckOrigin first.
func ExampleCORS() {
	h := httpguard.Guards(httpguard.CheckOrigin(httpguard.OriginPolicy{}), httpguard.CORS)(tokenEndpoint())

	for _, r := range []struct{ method, origin, auth string }{
		{http.MethodOptions, "http://localhost:6274", ""}, // the preflight carries no token
		{http.MethodPost, "http://localhost:6274", "Bearer t"},
		{http.MethodOptions, "https://evil.example", ""},
	} {
		req := httptest.NewRequest(r.method, "/mcp", nil)
		req.Header.Set("Origin", r.origin)
		if r.method == http.MethodOptions {
			req.Header.Set("Access-Control-Request-Method", "POST")
			req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		}
		if r.auth != "" {
			req.Header.Set("Authorization", r.auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		line := fmt.Sprint(r.method, " ", r.origin, " ", w.Code, " ", w.Header().Get("Access-Control-Allow-Origin"), " ", w.Header().Get("Access-Control-Allow-Headers"))
		fmt.Println(strings.TrimSpace(line))
	}
	// Output:
	// OPTIONS http://localhost:6274 204 http://localhost:6274 authorization, content-type
	// POST http://localhost:6274 202 http://localhost:6274
	// OPTIONS https://evil.example 403
}

// ExampleAnswerHealth puts a probe's path before the other guards: the
// probe is answered though it carries no token, while the endpoint still
// wants one, and paths serve does not serve get 404.
func ExampleAnswerHealth() {
	h := httpguard.Guards(httpguard.AnswerHealth("/healthz"), httpguard.ServePaths("/mcp"))(tokenEndpoint())
	for _, path := range []string{"/healthz", "/mcp", "/admin"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Println(path, w.Code)
	}
	// Output:
	// /healthz 200
	// /mcp 401
	// /admin 404
}

// tokenEndpoint stands for an endpoint behind a real token gate: 401
// without the token "t", 202 with it.
func tokenEndpoint() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
}
