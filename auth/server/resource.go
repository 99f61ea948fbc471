package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// MetadataPath is the root of RFC 9728's well-known URIs: the metadata of
// the resource at https://h/mcp lives at
// https://h/.well-known/oauth-protected-resource/mcp.
const MetadataPath = "/.well-known/oauth-protected-resource"

// ResourceConfig describes serve as an OAuth protected resource, for
// [NewProtectedResource].
type ResourceConfig struct {
	// PublicURL is the URL clients reach serve at (--public-url):
	// http(s)://host[:port][/prefix], where a prefix is the path a proxy
	// publishes serve under (it strips it before serve sees a request).
	// Required: every URL of the metadata and the challenges is built
	// from it, never from a request's Host or X-Forwarded-Host.
	PublicURL string
	// Path is the MCP endpoint's path as serve sees it (after the proxy
	// stripped its prefix); required, it starts with /.
	Path string
	// AuthorizationServers are the issuer URLs of the authorization
	// servers whose tokens the resource takes, in order of preference;
	// at least one.
	AuthorizationServers []string
	// ScopesSupported are the scopes a client may ask for this resource
	// (RFC 6749 scope tokens); none is allowed.
	ScopesSupported []string
	// ResourceName is a name for people, shown by clients; "" for none.
	ResourceName string
}

// ProtectedResource is serve as an OAuth protected resource (RFC 9728): it
// names the resource, serves its metadata document and builds the
// WWW-Authenticate challenges of the OAuth gate's refusals. It is
// immutable, and safe for concurrent use.
type ProtectedResource struct {
	resource    string
	metadataURL string
	paths       []string
	doc         []byte
	scopes      []string
}

// resourceMetadata is the RFC 9728 document.
type resourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// NewProtectedResource checks c and returns its protected resource. The
// resource identifier is the public URL (lower-cased scheme and host, no
// query or fragment) with the endpoint's path appended under its prefix:
// https://h/mcp for PublicURL https://h and Path /mcp, https://h/p/mcp
// under the prefix /p. The metadata document is served on
// [MetadataPath] and on MetadataPath + Path (RFC 9728's path-aware form),
// as serve sees paths; the challenges name the latter, under the public
// URL's prefix (so that a proxy hands it on as it hands on the endpoint).
func NewProtectedResource(c ResourceConfig) (*ProtectedResource, error) {
	u, err := url.Parse(c.PublicURL)
	switch {
	case c.PublicURL == "":
		return nil, errors.New("a protected resource needs the public URL clients reach it at")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Opaque != "":
		return nil, fmt.Errorf("invalid public URL %q: want http(s)://host[:port][/path]", c.PublicURL)
	case !strings.HasPrefix(c.Path, "/"):
		return nil, fmt.Errorf("the endpoint's path %q must start with /", c.Path)
	case len(c.AuthorizationServers) == 0:
		return nil, errors.New("a protected resource needs at least one authorization server")
	}
	for _, as := range c.AuthorizationServers {
		if a, err := url.Parse(as); err != nil || (a.Scheme != "http" && a.Scheme != "https") || a.Host == "" || a.RawQuery != "" || a.Fragment != "" {
			return nil, fmt.Errorf("invalid authorization server %q: want an http(s) issuer URL without query or fragment", as)
		}
	}
	for _, s := range c.ScopesSupported {
		if !ValidScope(s) {
			return nil, fmt.Errorf("invalid scope %q: a scope is printable ASCII without spaces, quotes or backslashes", s)
		}
	}
	prefix := strings.TrimSuffix(u.EscapedPath(), "/")
	base := strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + prefix
	path := (&url.URL{Path: c.Path}).EscapedPath()
	paths := []string{MetadataPath}
	aware := MetadataPath
	if c.Path != "/" {
		aware += path
		paths = append(paths, MetadataPath+c.Path)
	}
	pr := &ProtectedResource{
		resource:    base + path,
		metadataURL: base + aware,
		paths:       paths,
		scopes:      append([]string(nil), c.ScopesSupported...),
	}
	pr.doc, err = json.Marshal(resourceMetadata{
		Resource:               pr.resource,
		AuthorizationServers:   c.AuthorizationServers,
		ScopesSupported:        c.ScopesSupported,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           c.ResourceName,
	})
	if err != nil {
		return nil, err
	}
	return pr, nil
}

// Resource returns the resource identifier (RFC 8707): the audience every
// access token presented here must name.
func (pr *ProtectedResource) Resource() string { return pr.resource }

// MetadataURL returns the URL of the metadata document the challenges
// name.
func (pr *ProtectedResource) MetadataURL() string { return pr.metadataURL }

// MetadataPaths returns the paths, as serve sees them, that
// [ProtectedResource.ServeHTTP] answers: [MetadataPath], and the
// path-aware form unless the endpoint is at /.
func (pr *ProtectedResource) MetadataPaths() []string { return append([]string(nil), pr.paths...) }

// ScopesSupported returns the scopes the metadata lists.
func (pr *ProtectedResource) ScopesSupported() []string {
	return append([]string(nil), pr.scopes...)
}

// ServeHTTP answers GET and HEAD on the metadata paths with the metadata
// document (application/json), other methods with 405, and other paths
// with 404. Nothing of the request shapes the answer: the document is the
// same whatever Host or X-Forwarded-Host say.
func (pr *ProtectedResource) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	found := false
	for _, p := range pr.paths {
		found = found || r.URL.Path == p
	}
	if !found {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	default:
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(pr.doc)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(pr.doc)
	}
}

// Error codes of the challenges (RFC 6750 §3.1).
const (
	ErrorInvalidRequest    = "invalid_request"
	ErrorInvalidToken      = "invalid_token"
	ErrorInsufficientScope = "insufficient_scope"
)

// Challenge returns the value of the WWW-Authenticate header of a refusal,
// a Bearer challenge naming the metadata URL: for a 401 without a token
// (code ""), `Bearer resource_metadata="…", scope="…"`; for a refused
// token (code [ErrorInvalidToken]) or a malformed request
// ([ErrorInvalidRequest]) the same with `error="…"` first; for a 403
// ([ErrorInsufficientScope]), `Bearer error="insufficient_scope",
// scope="…", resource_metadata="…"`, in the order of the MCP
// specification's examples. scope lists scopes (space-separated) and is
// left out when there are none. Nothing in it comes from the request.
func (pr *ProtectedResource) Challenge(code string, scopes []string) string {
	var b strings.Builder
	b.WriteString("Bearer ")
	param := func(name, value string) {
		if b.Len() > len("Bearer ") {
			b.WriteString(", ")
		}
		b.WriteString(name)
		b.WriteString(`="`)
		b.WriteString(quote(value))
		b.WriteByte('"')
	}
	scope := strings.Join(scopes, " ")
	if code != "" {
		param("error", code)
	}
	if code == ErrorInsufficientScope {
		if scope != "" {
			param("scope", scope)
		}
		param("resource_metadata", pr.metadataURL)
		return b.String()
	}
	param("resource_metadata", pr.metadataURL)
	if scope != "" {
		param("scope", scope)
	}
	return b.String()
}

// quote escapes s for a quoted-string (RFC 9110 §5.6.4): a backslash
// before every quote and backslash. Scopes and URLs checked here hold
// neither; this is for what might slip past.
func quote(s string) string {
	if !strings.ContainsAny(s, `"\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ValidScope reports whether s is a scope token of RFC 6749 §3.3:
// one or more of the printable ASCII characters but space, the double
// quote and the backslash.
func ValidScope(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
