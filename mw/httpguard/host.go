package httpguard

import "net/http"

// HostPolicy protects a server bound to a loopback address against DNS
// rebinding: a hostile page whose name resolves to 127.0.0.1 reaches the
// server with its own name in the Host header, which this policy refuses.
type HostPolicy struct {
	// Allow lists extra host names (without port), compared ASCII
	// case-insensitively; a trailing dot is ignored.
	Allow []string
	// PublicURL is the server's external URL, if it has one; its host is
	// allowed.
	PublicURL string
}

// Allowed reports whether a Host header value (with or without a port)
// names this server: localhost, 127.0.0.1 or [::1] (in any spelling of
// ::1), an Allow entry, or the host of PublicURL. A malformed Host is
// refused.
func (p HostPolicy) Allowed(hostport string) bool {
	host, _, ok := splitHostPort(hostport)
	if !ok {
		return false
	}
	if isLoopbackName(host, false) {
		return true
	}
	for _, a := range p.Allow {
		if h, _, ok := splitHostPort(a); ok && h == host {
			return true
		}
	}
	if p.PublicURL != "" {
		if _, ph, _, ok := parseOrigin(originOf(p.PublicURL)); ok && ph == host {
			return true
		}
	}
	return false
}

// CheckHost returns the guard that refuses, with 403, every request whose
// Host p does not allow. serve puts it behind CheckOrigin when it listens
// on loopback (see the package documentation).
func CheckHost(p HostPolicy) Guard {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !p.Allowed(r.Host) {
				refuse(w, "host not allowed")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
