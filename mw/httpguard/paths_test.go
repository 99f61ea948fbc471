package httpguard_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/mw/httpguard"
)

// reached is an endpoint that answers 202 "reached".
func reached(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, "reached")
}

// serveOnce runs one request through h and returns the recorder.
func serveOnce(h http.Handler, method, path string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
	return w
}

func TestServePathsAnswersOtherPaths404(t *testing.T) {
	is := is.New(t)
	h := httpguard.ServePaths("/mcp", "/sse")(http.HandlerFunc(reached))
	is.Equal(serveOnce(h, http.MethodPost, "/mcp").Code, http.StatusAccepted)
	is.Equal(serveOnce(h, http.MethodGet, "/sse").Code, http.StatusAccepted)
	for _, p := range []string{"/", "/mcp/", "/MCP", "/mcp/x", "/message"} {
		w := serveOnce(h, http.MethodPost, p)
		is.Equal(w.Code, http.StatusNotFound) // p
	}
}

func TestMountHandsItsPathsToTheirHandlers(t *testing.T) {
	is := is.New(t)
	is.True(httpguard.Mount(nil) == nil) // no routes, no guard
	meta := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "metadata") })
	h := httpguard.Guards(httpguard.Mount(map[string]http.Handler{"/.well-known/oauth-protected-resource": meta}))(http.HandlerFunc(reached))
	w := serveOnce(h, http.MethodGet, "/.well-known/oauth-protected-resource")
	is.Equal(w.Code, http.StatusOK)
	is.Equal(w.Body.String(), "metadata")
	w = serveOnce(h, http.MethodPost, "/mcp")
	is.Equal(w.Code, http.StatusAccepted)
	is.Equal(w.Body.String(), "reached")
}

func TestAnswerHealth(t *testing.T) {
	is := is.New(t)
	h := httpguard.AnswerHealth("/healthz")(http.HandlerFunc(reached))
	w := serveOnce(h, http.MethodGet, "/healthz")
	is.Equal(w.Code, http.StatusOK)
	is.Equal(w.Body.String(), "ok\n")
	is.Equal(w.Header().Get("Cache-Control"), "no-store")
	w = serveOnce(h, http.MethodHead, "/healthz")
	is.Equal(w.Code, http.StatusOK)
	is.Equal(w.Body.Len(), 0)
	w = serveOnce(h, http.MethodPost, "/healthz")
	is.Equal(w.Code, http.StatusMethodNotAllowed)
	is.Equal(w.Header().Get("Allow"), "GET, HEAD")
	w = serveOnce(h, http.MethodPost, "/mcp") // other paths pass
	is.Equal(w.Code, http.StatusAccepted)
}
