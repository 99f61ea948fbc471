package httpguard

import (
	"net/http"
	"slices"
)

// ServePaths returns the guard that lets requests for the given paths
// through and answers every other path with 404. In serve it sits behind
// the origin and host checks (see the package documentation), so a
// foreign page learns nothing from which paths exist.
func ServePaths(paths ...string) Guard {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !slices.Contains(paths, r.URL.Path) {
				http.NotFound(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// Mount returns the guard that hands a request whose path routes names to
// that handler, and every other request to the guards and stages behind
// it; with no routes it is nil (no guard). serve mounts the OAuth
// metadata and authorization server this way, in front of authentication
// (see the package documentation): a client reads them to get a token.
func Mount(routes map[string]http.Handler) Guard {
	if len(routes) == 0 {
		return nil
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if h := routes[r.URL.Path]; h != nil {
				h.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
