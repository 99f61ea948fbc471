package auth

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Well-known URI suffixes (RFC 9728, RFC 8414, OpenID Connect Discovery).
const (
	wellKnownPRM    = "/.well-known/oauth-protected-resource"
	wellKnownAS     = "/.well-known/oauth-authorization-server"
	wellKnownOpenID = "/.well-known/openid-configuration"
)

// CanonicalResource returns the canonical URI of an MCP server (RFC 8707,
// MCP 2025-06-18 "canonical server URI"): scheme and host lowercased, a
// default port dropped, userinfo and fragment removed, a lone "/" path
// dropped; the rest of the path and the query are kept as given. It is the
// `resource` parameter the client sends and, with the same rules, the key
// under which tokens for the server are stored.
//
//	CanonicalResource("HTTPS://Example.COM:443/mcp?tenant=t1#x") == "https://example.com/mcp?tenant=t1"
func CanonicalResource(raw string) (string, error) {
	u, err := parseHTTPURL(raw)
	if err != nil {
		return "", err
	}
	return canonical(u), nil
}

// parseHTTPURL parses an absolute http or https URL with a host.
func parseHTTPURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("invalid URL: %w", errors.Unwrap(err))
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	default:
		return nil, fmt.Errorf("invalid URL %q: scheme must be http or https", frame.DisplayURL(u))
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("invalid URL %q: no host", frame.DisplayURL(u))
	}
	if u.Opaque != "" {
		return nil, fmt.Errorf("invalid URL %q: not hierarchical", frame.DisplayURL(u))
	}
	return u, nil
}

// canonical renders u by the rules of [CanonicalResource].
func canonical(u *url.URL) string {
	c := url.URL{
		Scheme:   strings.ToLower(u.Scheme),
		Host:     canonicalHost(u),
		Path:     u.Path,
		RawPath:  u.RawPath,
		RawQuery: u.RawQuery,
	}
	if c.Path == "/" {
		c.Path, c.RawPath = "", ""
	}
	return c.String()
}

// canonicalHost returns u's host lowercased, without a default port.
func canonicalHost(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	scheme := strings.ToLower(u.Scheme)
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") { // IPv6 literal
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return host
}

// origin returns scheme://host[:port] of u, canonicalised.
func origin(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + canonicalHost(u)
}

// IsLoopbackHost reports whether host (a URL's Hostname, without brackets
// or port) names the local machine: "localhost" and "localhost." in any
// case, any address in 127.0.0.0/8, and every spelling of ::1 (including
// the IPv4-mapped ::ffff:127.x.y.z).
func IsLoopbackHost(host string) bool {
	h := strings.ToLower(host)
	if h == "localhost" || h == "localhost." {
		return true
	}
	if i := strings.IndexByte(h, '%'); i >= 0 { // zone, as in ::1%lo0
		h = h[:i]
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// checkSecureURL accepts an https URL, or an http URL on a loopback host;
// what names the URL's role in the error.
func checkSecureURL(what string, u *url.URL) error {
	switch strings.ToLower(u.Scheme) {
	case "https":
		return nil
	case "http":
		if IsLoopbackHost(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("%s %s is not https (plain http is allowed only on loopback)", what, frame.DisplayURL(u))
	}
	return fmt.Errorf("%s %s: scheme must be https", what, frame.DisplayURL(u))
}

// parseSecureURL parses raw and applies [checkSecureURL].
func parseSecureURL(what, raw string) (*url.URL, error) {
	u, err := parseHTTPURL(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := checkSecureURL(what, u); err != nil {
		return nil, err
	}
	return u, nil
}

// prmURLs returns the protected resource metadata URLs to try for the MCP
// server u, in order (RFC 9728 §3.1, mcp-remote#249/#244): the path-aware
// form with the server's query kept, then the host root.
//
//	https://h/mcp?tenant=t1 → https://h/.well-known/oauth-protected-resource/mcp?tenant=t1,
//	                          https://h/.well-known/oauth-protected-resource
func prmURLs(u *url.URL) []string {
	root := origin(u) + wellKnownPRM
	path := strings.TrimRight(u.EscapedPath(), "/")
	if path == "" {
		if u.RawQuery != "" {
			return []string{root + "?" + u.RawQuery, root}
		}
		return []string{root}
	}
	aware := root + path
	if u.RawQuery != "" {
		aware += "?" + u.RawQuery
	}
	return []string{aware, root}
}

// asMetadataURLs returns the authorization server metadata URLs to try for
// issuer u, in the order of MCP 2025-11-25 (RFC 8414 §3.1 path insertion,
// then OpenID Connect Discovery both ways).
func asMetadataURLs(u *url.URL) []string {
	o := origin(u)
	path := strings.TrimRight(u.EscapedPath(), "/")
	if path == "" {
		return []string{o + wellKnownAS, o + wellKnownOpenID}
	}
	return []string{
		o + wellKnownAS + path,
		o + wellKnownOpenID + path,
		o + path + wellKnownOpenID,
	}
}

// resourceCovers reports whether the protected resource identifier prm (from
// a PRM document) covers the MCP server whose canonical URI is server: the
// same origin, and the same path or a parent of it on a segment boundary.
// Trailing slashes are ignored. A query on prm must equal the server's.
func resourceCovers(prm string, server *url.URL) bool {
	pu, err := parseHTTPURL(prm)
	if err != nil || pu.Fragment != "" {
		return false
	}
	if origin(pu) != origin(server) {
		return false
	}
	if pu.RawQuery != "" && pu.RawQuery != server.RawQuery {
		return false
	}
	pp := strings.TrimRight(pu.EscapedPath(), "/")
	sp := strings.TrimRight(server.EscapedPath(), "/")
	return pp == "" || pp == sp || strings.HasPrefix(sp, pp+"/")
}

// sameIssuer reports whether the issuer a metadata document names matches
// the one its URL was built from. RFC 8414 §3.3 wants them identical; a
// difference of one trailing slash is tolerated because authorization
// server lists and issuers disagree on it in the wild.
func sameIssuer(doc, want string) bool {
	return doc == want || strings.TrimSuffix(doc, "/") == strings.TrimSuffix(want, "/")
}
