package httpguard

import (
	"io"
	"net/http"
)

// AnswerHealth returns the guard that answers path itself: 200 "ok" to GET
// and HEAD, 405 with Allow to any other method; other paths pass. It says
// the gateway is up, not that a server process can start. serve puts it
// before every other guard (see the package documentation): a load
// balancer's probe sends no Origin, no token and not the public Host.
func AnswerHealth(path string) Guard {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != path {
				next.ServeHTTP(w, r)
				return
			}
			switch r.Method {
			case http.MethodGet, http.MethodHead:
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.Header().Set("Cache-Control", "no-store")
				w.WriteHeader(http.StatusOK)
				if r.Method == http.MethodGet {
					_, _ = io.WriteString(w, "ok\n")
				}
			default:
				w.Header().Set("Allow", "GET, HEAD")
				http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			}
		})
	}
}
