package httpguard

import (
	"net/http"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// LimitBody returns the guard that caps request bodies at limit bytes: a
// request announcing a longer body gets 413 at once, and a body that turns
// out longer while it is read fails the read with *http.MaxBytesError,
// which the transport answers with 413 too. It is the last of serve's
// guards (see the package documentation).
func LimitBody(limit int64) Guard {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > limit {
				w.Header().Set("Connection", "close")
				writeRefusal(w, http.StatusRequestEntityTooLarge, frame.CodeInvalidRequest, "request body too large")
				return
			}
			if r.Body != nil && r.Body != http.NoBody {
				r.Body = http.MaxBytesReader(w, r.Body, limit)
			}
			next.ServeHTTP(w, r)
		})
	}
}
