package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// BearerGate admits HTTP requests that present one static bearer token
// (`mcp-stdio serve --auth-token`, or MCP_STDIO_SERVE_TOKEN); serve's
// bearer guard (httpguard.RequireBearer) asks it. Tokens are compared in constant
// time — over their SHA-256 digests, so that not even the token's length
// leaks through timing.
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
