package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
	"github.com/mcp-stdio/mcp-stdio/pipeline"
)

// serve's embedded OAuth 2.1 authorization server (--enable-oauth): its
// flags, and the wiring of auth/server's AuthorizationServer as the
// verifier and routes of pipeline's OAuth hook.

// serveOAuthFlags are the flags of the embedded authorization server.
type serveOAuthFlags struct {
	enable         bool
	passwordFile   string
	redirectURIs   stringList
	tokenStore     string
	trustedProxies prefixList

	as *server.AuthorizationServer // once built: closed when serve ends
}

// prefixList is a repeatable flag of IP addresses or CIDR prefixes.
type prefixList []netip.Prefix

func (l *prefixList) String() string {
	var s []string
	for _, p := range *l {
		s = append(s, p.String())
	}
	return strings.Join(s, ",")
}

func (l *prefixList) Set(s string) error {
	if a, err := netip.ParseAddr(s); err == nil {
		*l = append(*l, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		return nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return errors.New("want an IP address (127.0.0.1, ::1) or a CIDR prefix (10.0.0.0/8)")
	}
	*l = append(*l, p.Masked())
	return nil
}

// define defines the flags on fs.
func (o *serveOAuthFlags) define(fs *flag.FlagSet) {
	fs.BoolVar(&o.enable, "enable-oauth", false, "sign clients in with serve's own OAuth 2.1 authorization server (for claude.ai and Claude Desktop connectors); the person signing in types the code serve prints, or a password (--oauth-password-file)")
	fs.StringVar(&o.passwordFile, "oauth-password-file", "", "with --enable-oauth, sign people in by user name and password from `PATH` (user:bcrypt-hash lines, as htpasswd -nB writes them) instead of the printed code")
	fs.Var(&o.redirectURIs, "allow-redirect-uri", "with --enable-oauth, let clients register `URI` as where their sign-in returns, exact match, besides loopback ones (repeatable; claude.ai's is https://claude.ai/api/mcp/auth_callback)")
	fs.StringVar(&o.tokenStore, "token-store", "", "with --enable-oauth, keep registered clients and sign-ins in `PATH` (0600), so that they survive a restart; else in memory only")
	fs.Var(&o.trustedProxies, "trusted-proxy", "with --enable-oauth, the proxy or tunnel at `ADDR` (an IP or a CIDR prefix) names the client in X-Forwarded-For, so that the sign-in limits per address count the client's (repeatable; without it every client behind a proxy is the proxy's address)")
}

// close writes what the authorization server's store has not been given
// yet, when serve ends.
func (o *serveOAuthFlags) close(logger *slog.Logger) {
	if o.as == nil {
		return
	}
	if err := o.as.Close(); err != nil {
		logger.Error("the OAuth token store could not be written at exit; the last registrations are lost", "path", o.tokenStore, "err", err)
	}
}

// check checks the flags before serve listens.
func (o *serveOAuthFlags) check(f *serveFlags) error {
	if !o.enable {
		for name, set := range map[string]bool{"--oauth-password-file": o.passwordFile != "", "--allow-redirect-uri": len(o.redirectURIs) > 0, "--token-store": o.tokenStore != "", "--allow-client-id-url": len(f.clientIDURLs) > 0, "--trusted-proxy": len(o.trustedProxies) > 0} {
			if set {
				return fmt.Errorf("%s needs --enable-oauth", name)
			}
		}
		return nil
	}
	if f.authToken != "" {
		return fmt.Errorf("--enable-oauth and a static bearer token (--auth-token or %s) exclude each other: keep one", pipeline.ServeTokenEnv)
	}
	if f.publicURL == "" && !isLoopbackListener(f.listen) {
		return errors.New("--enable-oauth needs --public-url (the https URL clients reach serve at) unless serve listens on loopback")
	}
	return nil
}

// oauthConfig turns the OAuth flags into ServeConfig.OAuth, for a server
// listening on bound: nil when no OAuth mode is on. Each mode names its
// authorization servers first (the protected resource lists them), then,
// knowing the resource its tokens must be for, adds its verifier and the
// handlers it serves:
//
//   - --enable-oauth: the embedded authorization server, whose issuer is
//     the public URL's origin; it is a verifier of its own tokens, and its
//     Handler is mounted on its paths. It returns its issuer, for serve's
//     startup line, and prints the one-time sign-in codes on stderr.
//   - --oauth-issuer URL (repeatable): resource-server mode, a verifier per
//     external issuer (serve_issuer.go).
//
// Without a mode, --require-scope is refused.
func (f *serveFlags) oauthConfig(ctx context.Context, bound net.Addr, stderr io.Writer, logger *slog.Logger) (_ *pipeline.OAuthConfig, issuer string, _ error) {
	if err := f.issuer.check(); err != nil {
		return nil, "", err
	}
	var issuers []string // the authorization servers, in order of preference
	enable := f.oauth.enable
	if !enable && len(f.issuer.issuers) == 0 {
		if len(f.requireScopes) > 0 {
			return nil, "", errors.New("--require-scope needs OAuth: add --enable-oauth, or --oauth-issuer URL")
		}
		return nil, "", nil
	}
	if f.authToken != "" {
		return nil, "", errors.New("a static bearer token (--auth-token, or " + pipeline.ServeTokenEnv + ") and OAuth exclude each other: unset one")
	}
	for _, s := range f.requireScopes {
		if !server.ValidScope(s) {
			return nil, "", errors.New("invalid --require-scope " + quoteFlagValue(s) + ": a scope is printable ASCII without spaces, quotes or backslashes")
		}
	}
	publicURL, err := oauthPublicURL(f.publicURL, f.listen, bound)
	if err != nil {
		return nil, "", err
	}
	origin, err := originOf(publicURL)
	if err != nil {
		return nil, "", err
	}
	if enable {
		issuers = append(issuers, origin)
	}
	issuers = append(issuers, f.issuer.issuers...)
	scopes := append([]string(nil), f.requireScopes...) // and those the modes offer
	if enable && !slices.Contains(scopes, server.DefaultScope) {
		scopes = append(scopes, server.DefaultScope)
	}
	resourcePath := f.path
	if f.configFile != "" {
		resourcePath = "/" // one resource for all the servers: the listener (see pipeline.NewMulti)
	}
	res, err := server.NewProtectedResource(server.ResourceConfig{
		PublicURL:            publicURL,
		Path:                 resourcePath,
		AuthorizationServers: issuers,
		ScopesSupported:      scopes,
		ResourceName:         "mcp-stdio",
	})
	if err != nil {
		return nil, "", err
	}
	var verifiers []server.Verifier
	routes := map[string]http.Handler{}
	if enable {
		var urlClients server.URLClients
		if len(f.clientIDURLs) > 0 {
			fetcher, err := server.NewClientMetadataFetcher(server.ClientMetadataConfig{AllowURLs: f.clientIDURLs})
			if err != nil {
				return nil, "", err
			}
			urlClients = cimdClients{fetcher}
		}
		as, err := f.oauth.authorizationServer(origin, res.Resource(), scopes, urlClients, stderr, logger)
		if err != nil {
			return nil, "", err
		}
		verifiers = append(verifiers, as)
		for _, p := range as.Paths() {
			routes[p] = as.Handler()
		}
		issuer = as.Issuer()
	}
	if len(f.issuer.issuers) > 0 {
		vs, err := f.issuer.verifiers(ctx, res.Resource(), logger)
		if err != nil {
			return nil, "", err
		}
		verifiers = append(verifiers, vs...)
	}
	return &pipeline.OAuthConfig{
		Verifier:       server.Verifiers(verifiers...),
		Resource:       res,
		RequiredScopes: f.requireScopes,
		Routes:         routes,
	}, issuer, nil
}

// authorizationServer builds the embedded authorization server of issuer
// for resource. The one-time sign-in codes are printed on stderr, unless
// a password file signs people in.
func (o *serveOAuthFlags) authorizationServer(issuer, resource string, scopes []string, urlClients server.URLClients, stderr io.Writer, logger *slog.Logger) (*server.AuthorizationServer, error) {
	var passwords *server.Passwords
	if o.passwordFile != "" {
		file, err := os.Open(o.passwordFile)
		if err != nil {
			return nil, fmt.Errorf("--oauth-password-file: %v", err)
		}
		passwords, err = server.ParsePasswordFile(file)
		file.Close()
		if err != nil {
			return nil, fmt.Errorf("--oauth-password-file %s: %v", o.passwordFile, err)
		}
	}
	var signIn func(string)
	if passwords == nil {
		signIn = func(code string) {
			fmt.Fprintf(stderr, "mcp-stdio: OAuth sign-in code, to type on the consent page (one use; a new one is printed after each sign-in): %s\n", code)
		}
	}
	as, err := server.NewAuthorizationServer(server.AuthorizationServerConfig{
		Issuer:            issuer,
		Resource:          resource,
		Scopes:            scopes,
		Passwords:         passwords,
		SignInCode:        signIn,
		AllowRedirectURIs: o.redirectURIs,
		URLClients:        urlClients,
		StorePath:         o.tokenStore,
		TrustedProxies:    o.trustedProxies,
		Logger:            logger,
	})
	if err != nil {
		return nil, err
	}
	o.as = as
	return as, nil
}

// cimdClients gives the authorization server the clients whose client_id
// is an --allow-client-id-url URL: their Client ID Metadata Documents,
// fetched by the hardened fetcher. A withdrawn document (404, 410) ends
// their grants at the token endpoint.
type cimdClients struct{ f *server.ClientMetadataFetcher }

func (c cimdClients) Allowed(clientID string) bool { return c.f.StillAllowed(clientID) }

func (c cimdClients) Client(ctx context.Context, clientID string) (string, []string, error) {
	md, err := c.f.Fetch(ctx, clientID)
	if err != nil {
		return "", nil, err
	}
	return md.ClientName, md.RedirectURIs, nil
}

// oauthPublicURL returns the URL clients reach serve at, from which the
// protected resource, its metadata and (with --enable-oauth) the issuer
// are named: --public-url, or, for a loopback --listen, the address bound
// (the one serve prints, which clients must then use as it is). Never a
// request's Host: that is the client's to choose, and an attacker's.
func oauthPublicURL(publicURL, listen string, bound net.Addr) (string, error) {
	if publicURL != "" {
		return publicURL, nil
	}
	if !isLoopbackListener(listen) {
		return "", errors.New("OAuth needs --public-url URL, the address clients reach this server at: it names the protected resource and its metadata")
	}
	return strings.TrimSuffix(endpointURL(bound, listen, "/"), "/"), nil
}

// quoteFlagValue quotes a flag's value for an error message.
func quoteFlagValue(s string) string { return shellQuote([]string{s}) }

// originOf returns the origin of an http(s) URL.
func originOf(public string) (string, error) {
	scheme, rest, ok := strings.Cut(public, "://")
	if !ok {
		return "", fmt.Errorf("invalid --public-url %q: want http(s)://host[/path]", public)
	}
	host, _, _ := strings.Cut(rest, "/")
	host, _, _ = strings.Cut(host, "?")
	return strings.ToLower(scheme) + "://" + strings.ToLower(host), nil
}
