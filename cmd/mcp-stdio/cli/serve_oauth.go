package cli

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
	"github.com/mcp-stdio/mcp-stdio/pipeline"
)

// oauthConfig turns the OAuth flags into ServeConfig.OAuth: nil when no
// OAuth mode is on. Each mode names its authorization servers first (the
// protected resource lists them), then, knowing the resource its tokens
// must be for, adds its verifier and the handlers it serves:
//
//   - --enable-oauth: the embedded authorization server, whose issuer is
//     the public URL; it is a verifier of its own tokens, and its Handler
//     is mounted on its paths.
//   - --oauth-issuer URL (repeatable): a verifier per external issuer.
//
// Without a mode, --require-scope is refused.
func (f *serveFlags) oauthConfig(ctx context.Context, logger *slog.Logger) (*pipeline.OAuthConfig, error) {
	if err := f.issuer.check(); err != nil {
		return nil, err
	}
	var issuers []string // the authorization servers, in order of preference
	// The modes name theirs here.
	issuers = append(issuers, f.issuer.issuers...)
	if len(issuers) == 0 {
		if len(f.requireScopes) > 0 {
			return nil, errors.New("--require-scope needs OAuth: add --enable-oauth, or --oauth-issuer URL")
		}
		return nil, nil
	}
	if f.authToken != "" {
		return nil, errors.New("a static bearer token (--auth-token, or " + pipeline.ServeTokenEnv + ") and OAuth exclude each other: unset one")
	}
	for _, s := range f.requireScopes {
		if !server.ValidScope(s) {
			return nil, errors.New("invalid --require-scope " + quoteFlagValue(s) + ": a scope is printable ASCII without spaces, quotes or backslashes")
		}
	}
	publicURL, err := oauthPublicURL(f.publicURL, f.listen)
	if err != nil {
		return nil, err
	}
	scopes := append([]string(nil), f.requireScopes...) // and those the modes offer
	res, err := server.NewProtectedResource(server.ResourceConfig{
		PublicURL:            publicURL,
		Path:                 f.path,
		AuthorizationServers: issuers,
		ScopesSupported:      scopes,
	})
	if err != nil {
		return nil, err
	}
	var verifiers []server.Verifier
	routes := map[string]http.Handler{}
	// The modes add their verifiers and routes here, for res.Resource().
	if len(f.issuer.issuers) > 0 {
		vs, err := f.issuer.verifiers(ctx, res.Resource(), logger)
		if err != nil {
			return nil, err
		}
		verifiers = append(verifiers, vs...)
	}
	return &pipeline.OAuthConfig{
		Verifier:       server.Verifiers(verifiers...),
		Resource:       res,
		RequiredScopes: f.requireScopes,
		Routes:         routes,
	}, nil
}

// oauthPublicURL returns the URL clients reach serve at, from which the
// protected resource, its metadata and (with --enable-oauth) the issuer
// are named: --public-url, or, for a loopback --listen with a fixed port,
// http://LISTEN as written (127.0.0.1:8080, localhost:8080, [::1]:8080 —
// the address serve prints, which clients must then use as it is). Never
// a request's Host: that is the client's to choose, and an attacker's.
func oauthPublicURL(publicURL, listen string) (string, error) {
	if publicURL != "" {
		return publicURL, nil
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil || !isLoopbackListener(listen) {
		return "", errors.New("OAuth needs --public-url URL, the address clients reach this server at: it names the protected resource and its metadata")
	}
	if port == "0" || port == "" {
		return "", errors.New("OAuth on --listen port 0 needs --public-url: the address clients reach this server at must be known before it listens; give a fixed port")
	}
	if strings.EqualFold(host, "localhost") {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// quoteFlagValue quotes a flag's value for an error message.
func quoteFlagValue(s string) string { return shellQuote([]string{s}) }
