package httpguard

import (
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Guard is a stage of serve that sees an HTTP request before anything
// reads its body, and decides on its headers alone: it answers the
// request itself (a refusal, a CORS preflight) or passes it to next. A
// refused request never reaches a child and never costs a read.
type Guard func(next http.Handler) http.Handler

// Guards stacks gs into one Guard, gs[0] the first to see a request. A nil
// entry is skipped, so optional guards can be listed inline.
func Guards(gs ...Guard) Guard {
	return func(next http.Handler) http.Handler {
		for i := len(gs) - 1; i >= 0; i-- {
			if gs[i] != nil {
				next = gs[i](next)
			}
		}
		return next
	}
}

// refuse answers 403 and closes the connection.
func refuse(w http.ResponseWriter, msg string) {
	w.Header().Set("Connection", "close")
	http.Error(w, msg, http.StatusForbidden)
}

// writeRefusal answers with status and a JSON-RPC error body (id null).
func writeRefusal(w http.ResponseWriter, status, code int, msg string) {
	b := frame.ErrorResponse("", code, msg).Bytes()
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
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
