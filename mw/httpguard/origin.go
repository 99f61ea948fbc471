package httpguard

import (
	"net/http"
	"strings"
)

// OriginPolicy decides which browser origins may call the server. An
// Origin header tells that a web page made the request; a page on a hostile
// site must not reach a server on the user's machine (or behind the user's
// firewall), whatever name it used to get there. The zero policy allows only
// requests without an Origin and loopback origins.
type OriginPolicy struct {
	// Allow lists extra origins, compared exactly (ASCII case aside), in
	// any scheme: "https://app.example.com", "chrome-extension://abcdef".
	Allow []string
	// PublicURL is the server's external URL, if it has one; its origin is
	// allowed.
	PublicURL string
}

// Allowed reports whether a request carrying the Origin header value origin
// may pass. An absent Origin (the empty string: not a browser, or a
// same-origin GET) passes; so do http and https origins on a loopback host
// — localhost, *.localhost, 127.0.0.0/8 and [::1] — on any port, the
// origin of PublicURL, and the Allow entries. Everything else is refused,
// including the opaque origin "null" and anything that is not a
// well-formed origin. Allowed origins are never derived from the request's
// Host, which a DNS-rebinding page controls.
func (p OriginPolicy) Allowed(origin string) bool {
	if origin == "" {
		return true
	}
	for _, a := range p.Allow {
		if a != "" && strings.EqualFold(strings.TrimSuffix(a, "/"), origin) {
			return true
		}
	}
	scheme, host, port, ok := parseOrigin(origin)
	if !ok {
		return false
	}
	if p.PublicURL != "" {
		if ps, ph, pp, ok := parseOrigin(originOf(p.PublicURL)); ok &&
			ps == scheme && ph == host && defaultPort(ps, pp) == defaultPort(scheme, port) {
			return true
		}
	}
	return (scheme == "http" || scheme == "https") && isLoopbackName(host, true)
}

// CheckOrigin returns the guard that refuses, with 403, every request
// whose Origin p does not allow (or that carries more than one Origin).
// The refusal closes the connection, so an unread body is never drained.
// It is the first of serve's guards (see the package documentation).
func CheckOrigin(p OriginPolicy) Guard {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			origins := r.Header.Values("Origin")
			if len(origins) > 1 || (len(origins) == 1 && !p.Allowed(origins[0])) {
				refuse(w, "origin not allowed")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
