package httpguard

import (
	"net/http"
	"strings"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// CORS lets web pages call the server from the origins the policy in front
// of it allowed (MCP Inspector in the browser, say): a browser sends a
// cross-origin request only after a preflight, and shows the page a
// response only when it names the page's origin.
//
// A request with an Origin gets Access-Control-Allow-Origin naming it, and
// the MCP response headers a page needs are exposed (Mcp-Session-Id,
// MCP-Protocol-Version, WWW-Authenticate). A preflight (OPTIONS with
// Access-Control-Request-Method) is answered here with 204: methods GET,
// POST and DELETE, the request headers it asked for, cached for 10
// minutes. No credentials mode: MCP clients send tokens in Authorization,
// not cookies.
//
// CORS must sit behind [CheckOrigin], which has refused every origin it
// does not allow, and in front of authentication (see the package
// documentation), since a browser sends
// its preflight without credentials. Requests without an Origin pass
// untouched.
func CORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
			if req := r.Header.Values("Access-Control-Request-Headers"); len(req) > 0 {
				h.Set("Access-Control-Allow-Headers", strings.Join(req, ", "))
			}
			h.Set("Access-Control-Max-Age", corsMaxAge)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		next.ServeHTTP(w, r)
	})
}

// corsExposeHeaders are the response headers a browser's script may read:
// the session's, and the challenge of a refusal.
const corsExposeHeaders = frame.HeaderSessionID + ", " + frame.HeaderProtocolVersion + ", WWW-Authenticate"

// corsMaxAge is how long, in seconds, a browser may reuse a preflight's
// answer.
const corsMaxAge = "600"
