package transport

import (
	"net/http"
	"net/netip"
	"strconv"
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

// CheckOrigin returns a handler that refuses, with 403 and before anything
// reads the request body, every request whose Origin p does not allow, and
// passes the others to next. The refusal closes the connection, so an
// unread body is never drained.
func CheckOrigin(p OriginPolicy, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origins := r.Header.Values("Origin")
		if len(origins) > 1 || (len(origins) == 1 && !p.Allowed(origins[0])) {
			refuse(w, "origin not allowed")
			return
		}
		next.ServeHTTP(w, r)
	})
}

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
// does not allow, and in front of authentication, since a browser sends
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
		h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate")
		next.ServeHTTP(w, r)
	})
}

// corsMaxAge is how long, in seconds, a browser may reuse a preflight's
// answer.
const corsMaxAge = "600"

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

// CheckHost returns a handler that refuses, with 403 and before anything
// reads the request body, every request whose Host p does not allow, and
// passes the others to next.
func CheckHost(p HostPolicy, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.Allowed(r.Host) {
			refuse(w, "host not allowed")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// LimitBody returns a handler that caps request bodies at limit bytes: a
// request announcing a longer body gets 413 at once, and a body that turns
// out longer while it is read fails the read with *http.MaxBytesError
// (which [ReadBody] callers answer with 413).
func LimitBody(limit int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			w.Header().Set("Connection", "close")
			writeRPCError(w, http.StatusRequestEntityTooLarge, "", -32600, "request body too large")
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		next.ServeHTTP(w, r)
	})
}

// refuse answers 403 and closes the connection.
func refuse(w http.ResponseWriter, msg string) {
	w.Header().Set("Connection", "close")
	http.Error(w, msg, http.StatusForbidden)
}

// originOf returns the scheme://host[:port] part of an absolute URL.
func originOf(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return ""
	}
	rest := u[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	return u[:i+3] + rest
}

// parseOrigin splits a serialized origin "scheme://host[:port]" into its
// lower-cased scheme and host (brackets kept on IPv6 literals) and its
// port ("" when absent). It accepts nothing else: no path, no userinfo, no
// whitespace or control characters, a numeric port up to 65535.
func parseOrigin(s string) (scheme, host, port string, ok bool) {
	i := strings.Index(s, "://")
	if i <= 0 {
		return "", "", "", false
	}
	scheme = strings.ToLower(s[:i])
	for j := 0; j < len(scheme); j++ {
		c := scheme[j]
		if !(c >= 'a' && c <= 'z' || j > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", "", "", false
		}
	}
	host, port, ok = splitHostPort(s[i+3:])
	return scheme, host, port, ok
}

// splitHostPort splits "host[:port]" (host possibly a bracketed IPv6
// literal) and lower-cases the host, dropping one trailing dot. It refuses
// empty hosts, bad ports and any character that cannot appear in a host.
func splitHostPort(s string) (host, port string, ok bool) {
	if s == "" {
		return "", "", false
	}
	if s[0] == '[' {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", false
		}
		host, rest := s[:end+1], s[end+1:]
		a, err := netip.ParseAddr(host[1 : len(host)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", "", false
		}
		if rest != "" {
			if rest[0] != ':' || !validPort(rest[1:]) {
				return "", "", false
			}
			port = rest[1:]
		}
		return strings.ToLower(host), port, true
	}
	host = s
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		host, port = s[:i], s[i+1:]
		if !validPort(port) {
			return "", "", false
		}
	}
	host = strings.TrimSuffix(host, ".")
	if host == "" {
		return "", "", false
	}
	for j := 0; j < len(host); j++ {
		c := host[j]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return "", "", false
		}
	}
	return strings.ToLower(host), port, true
}

// validPort reports whether p is a decimal port number, 0 to 65535.
func validPort(p string) bool {
	if p == "" || len(p) > 5 {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
	}
	n, _ := strconv.Atoi(p)
	return n <= 65535
}

// defaultPort returns port, or the scheme's default when port is empty.
func defaultPort(scheme, port string) string {
	if port != "" {
		return port
	}
	switch scheme {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// isLoopbackName reports whether a lower-cased host (as splitHostPort
// returns it) names the local machine: localhost, [::1] and 127.0.0.1 —
// and, when wide, any *.localhost name and all of 127.0.0.0/8.
func isLoopbackName(host string, wide bool) bool {
	switch {
	case host == "localhost":
		return true
	case wide && strings.HasSuffix(host, ".localhost") && len(host) > len(".localhost"):
		return true
	case strings.HasPrefix(host, "["):
		a, err := netip.ParseAddr(host[1 : len(host)-1])
		return err == nil && a == netip.IPv6Loopback()
	}
	a, err := netip.ParseAddr(host)
	if err != nil || !a.Is4() {
		return false
	}
	if wide {
		return a.IsLoopback()
	}
	return a == netip.AddrFrom4([4]byte{127, 0, 0, 1})
}
