package httpguard

import "net/http"

// BearerVerifier checks the credentials of an HTTP request; auth's
// BearerGate (a static token) is one.
type BearerVerifier interface {
	// Check reports whether r presents valid credentials, and whether it
	// presented a bearer token at all (a wrong one, as opposed to none).
	Check(r *http.Request) (ok, presented bool)
}

// BearerRealm is the realm of the challenge [RequireBearer] sends.
const BearerRealm = "mcp-stdio"

// RequireBearer returns the guard that passes requests v accepts and
// answers the others with 401, a JSON-RPC error body and the challenge
// `WWW-Authenticate: Bearer realm="mcp-stdio"` (with
// `error="invalid_token"` when a wrong token was presented), without
// reading their bodies. It sits behind CORS, whose preflights carry no
// credentials (see the package documentation).
func RequireBearer(v BearerVerifier) Guard {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ok, presented := v.Check(r)
			if ok {
				next.ServeHTTP(w, r)
				return
			}
			challenge := `Bearer realm="` + BearerRealm + `"`
			if presented {
				challenge += `, error="invalid_token"`
			}
			h := w.Header()
			h.Set("WWW-Authenticate", challenge)
			h.Set("Connection", "close")
			writeRefusal(w, http.StatusUnauthorized, -32000, "Unauthorized: a valid bearer token is required")
		})
	}
}
