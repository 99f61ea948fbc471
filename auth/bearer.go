package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// BearerRealm is the realm of the challenge [BearerGate] sends.
const BearerRealm = "mcp-stdio"

// BearerGate admits HTTP requests that present one static bearer token
// (`mcp-stdio serve --auth-token`, or MCP_STDIO_SERVE_TOKEN). Tokens are
// compared in constant time — over their SHA-256 digests, so that not even
// the token's length leaks through timing.
type BearerGate struct {
	digest [sha256.Size]byte
}

// NewBearerGate returns a gate for token, which must not be empty.
func NewBearerGate(token string) *BearerGate {
	return &BearerGate{digest: sha256.Sum256([]byte(token))}
}

// Check reports whether r presents the token, and whether it presented a
// bearer token at all (a wrong one, as opposed to none). More than one
// Authorization header never passes.
func (g *BearerGate) Check(r *http.Request) (ok, presented bool) {
	values := r.Header.Values("Authorization")
	if len(values) == 0 {
		return false, false
	}
	if len(values) > 1 {
		return false, true
	}
	scheme, token, found := strings.Cut(strings.TrimSpace(values[0]), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return false, false
	}
	token = strings.TrimLeft(token, " ")
	if token == "" {
		return false, true
	}
	d := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(d[:], g.digest[:]) == 1, true
}

// Wrap returns a handler that passes requests presenting the token to next
// and answers the others with 401 and a Bearer challenge
// (`WWW-Authenticate: Bearer realm="mcp-stdio"`, with
// `error="invalid_token"` when a wrong token was presented), without
// reading their bodies.
func (g *BearerGate) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok, presented := g.Check(r)
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
		h.Set("Content-Type", "application/json")
		h.Set("Connection", "close")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Unauthorized: a valid bearer token is required"}}`))
	})
}
