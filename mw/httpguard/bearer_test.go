package httpguard_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/auth"
	"github.com/mcp-stdio/mcp-stdio/mw/httpguard"
)

func TestRequireBearer(t *testing.T) {
	is := is.New(t)
	reached := 0
	h := httpguard.RequireBearer(auth.NewBearerGate("tok"))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached++
		w.WriteHeader(http.StatusTeapot)
	}))
	serve := func(auth string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/mcp", nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}

	w := serve("")
	is.Equal(w.Code, http.StatusUnauthorized)
	is.Equal(w.Header().Get("WWW-Authenticate"), `Bearer realm="mcp-stdio"`)
	is.Equal(w.Header().Get("Content-Type"), "application/json")
	is.Equal(w.Header().Get("Connection"), "close")
	is.Equal(w.Body.String(), `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Unauthorized: a valid bearer token is required"}}`)

	w = serve("Bearer nope")
	is.Equal(w.Code, http.StatusUnauthorized)
	is.Equal(w.Header().Get("WWW-Authenticate"), `Bearer realm="mcp-stdio", error="invalid_token"`)
	is.Equal(reached, 0) // nothing behind the guard ran

	w = serve("Bearer tok")
	is.Equal(w.Code, http.StatusTeapot)
	is.Equal(reached, 1)
}
