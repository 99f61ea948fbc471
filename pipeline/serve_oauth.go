// serve as an OAuth 2.1 protected resource: the gate, the metadata, and
// the handlers of an embedded authorization server.

package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
	"github.com/mcp-stdio/mcp-stdio/mw/httpguard"
)

// OAuthConfig makes serve an OAuth 2.1 protected resource
// (ServeConfig.OAuth): every request to the endpoint (and to HTTP+SSE)
// presents an access token Verifier accepts, for every era, and the
// principal it names keys the 2026-07-28 pool and owns the sessions it
// opens (httpguard.RequireOAuth). The resource's metadata is served without a
// token on its paths (server.ProtectedResource.MetadataPaths), as are
// Routes.
type OAuthConfig struct {
	// Verifier checks the access tokens; required. Several issuers are
	// one server.Verifiers.
	Verifier server.Verifier
	// Resource is the protected resource: its identifier, metadata and
	// challenges; required. Its path must be the endpoint's (Path).
	Resource *server.ProtectedResource
	// RequiredScopes are the scopes every token must grant (else 403
	// insufficient_scope); --require-scope.
	RequiredScopes []string
	// Routes are handlers served without a token, each on its exact path
	// (an embedded authorization server's endpoints and its metadata),
	// behind the origin and host checks and CORS like the endpoint. No
	// path may be one serve answers itself.
	Routes map[string]http.Handler
}

// oauthRoutes checks cfg.OAuth and returns the handlers served beside the
// endpoint, by path: the resource's metadata and the Routes.
func oauthRoutes(cfg ServeConfig, served []string) (map[string]http.Handler, error) {
	o := cfg.OAuth
	switch {
	case o == nil:
		return nil, nil
	case cfg.AuthToken != "":
		return nil, fmt.Errorf("serve: a static bearer token (--auth-token, %s) and OAuth exclude each other: keep one", ServeTokenEnv)
	case o.Verifier == nil || o.Resource == nil:
		return nil, errors.New("serve: OAuth needs a token verifier and a protected resource")
	}
	// A server of NewMulti is under the resource of the whole listener
	// (checked there).
	if cfg.Name == "" && cfg.Path != "/" && !slices.Contains(o.Resource.MetadataPaths(), server.MetadataPath+cfg.Path) {
		return nil, fmt.Errorf("serve: the protected resource is not the endpoint %s", cfg.Path)
	}
	for _, s := range o.RequiredScopes {
		if !server.ValidScope(s) {
			return nil, fmt.Errorf("serve: invalid required scope %q: a scope is printable ASCII without spaces, quotes or backslashes", s)
		}
	}
	routes := make(map[string]http.Handler, len(o.Routes)+2)
	for _, p := range o.Resource.MetadataPaths() {
		routes[p] = o.Resource
	}
	for _, p := range slices.Sorted(maps.Keys(o.Routes)) {
		switch _, dup := routes[p]; {
		case !strings.HasPrefix(p, "/"):
			return nil, fmt.Errorf("serve: OAuth route %q must start with /", p)
		case dup:
			return nil, fmt.Errorf("serve: OAuth route %q is the protected resource's metadata path", p)
		}
		routes[p] = o.Routes[p]
	}
	for p := range routes {
		if slices.Contains(served, p) || p == cfg.HealthPath {
			return nil, fmt.Errorf("serve: OAuth route %q is a path serve answers itself; choose other paths", p)
		}
	}
	return routes, nil
}

// oauthGuard returns the OAuth gate of cfg.OAuth, or nil without it.
func oauthGuard(cfg ServeConfig) httpguard.Guard {
	if cfg.OAuth == nil {
		return nil
	}
	return httpguard.RequireOAuth(httpguard.OAuthOptions{
		Verifier:       tokenVerifier{cfg.OAuth.Verifier},
		Challenges:     cfg.OAuth.Resource,
		RequiredScopes: cfg.OAuth.RequiredScopes,
		// A client signing in asks for what it needs, else for what the
		// resource offers.
		ChallengeScopes: challengeScopes(cfg.OAuth),
		Logger:          cfg.Logger,
	})
}

// tokenVerifier is a server.Verifier as the gate knows verifiers.
type tokenVerifier struct{ v server.Verifier }

func (t tokenVerifier) VerifyToken(ctx context.Context, token string) (string, []string, error) {
	p, err := t.v.Verify(ctx, token)
	switch {
	case errors.Is(err, server.ErrInvalidToken):
		return "", nil, refusedToken{err}
	case err != nil:
		return "", nil, err
	}
	return p.Key(), p.Scopes, nil
}

// refusedToken is a verifier's refusal, which the gate tells by
// httpguard.ErrInvalidToken.
type refusedToken struct{ err error }

func (e refusedToken) Error() string        { return e.err.Error() }
func (e refusedToken) Unwrap() error        { return e.err }
func (e refusedToken) Is(target error) bool { return target == httpguard.ErrInvalidToken }

// challengeScopes returns the scopes serve's 401 challenges name: the
// required ones, else those the protected resource lists.
func challengeScopes(o *OAuthConfig) []string {
	if len(o.RequiredScopes) > 0 {
		return o.RequiredScopes
	}
	return o.Resource.ScopesSupported()
}
