package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
	"github.com/mcp-stdio/mcp-stdio/pipeline"
)

// serve's embedded OAuth 2.1 authorization server (--enable-oauth): its
// flags, and the wiring of auth/server's AuthorizationServer as the
// verifier and routes of pipeline's OAuth hook.

// serveOAuthFlags are the flags of the embedded authorization server.
type serveOAuthFlags struct {
	enable       bool
	passwordFile string
	redirectURIs stringList
	tokenStore   string
}

// define defines the flags on fs.
func (o *serveOAuthFlags) define(fs *flag.FlagSet) {
	fs.BoolVar(&o.enable, "enable-oauth", false, "sign clients in with serve's own OAuth 2.1 authorization server (for claude.ai and Claude Desktop connectors); the person signing in types the code serve prints, or a password (--oauth-password-file)")
	fs.StringVar(&o.passwordFile, "oauth-password-file", "", "with --enable-oauth, sign people in by user name and password from `PATH` (user:bcrypt-hash lines, as htpasswd -nB writes them) instead of the printed code")
	fs.Var(&o.redirectURIs, "allow-redirect-uri", "with --enable-oauth, let clients register `URI` as where their sign-in returns, exact match, besides loopback ones (repeatable; claude.ai's is https://claude.ai/api/mcp/auth_callback)")
	fs.StringVar(&o.tokenStore, "token-store", "", "with --enable-oauth, keep registered clients and sign-ins in `PATH` (0600), so that they survive a restart; else in memory only")
}

// check checks the flags before serve listens.
func (o *serveOAuthFlags) check(f *serveFlags) error {
	if !o.enable {
		for name, set := range map[string]bool{"--oauth-password-file": o.passwordFile != "", "--allow-redirect-uri": len(o.redirectURIs) > 0, "--token-store": o.tokenStore != ""} {
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

// configure builds the authorization server for a server listening on
// bound and sets cfg.OAuth. The one-time sign-in codes are printed on
// stderr. Without --public-url the public URL is the loopback address
// bound.
func (o *serveOAuthFlags) configure(cfg *pipeline.ServeConfig, f *serveFlags, bound net.Addr, stderr io.Writer, logger *slog.Logger) (issuer string, err error) {
	if !o.enable {
		return "", nil
	}
	public := f.publicURL
	if public == "" {
		public = strings.TrimSuffix(endpointURL(bound, f.listen, "/"), "/")
	}
	var passwords *server.Passwords
	if o.passwordFile != "" {
		file, err := os.Open(o.passwordFile)
		if err != nil {
			return "", fmt.Errorf("--oauth-password-file: %v", err)
		}
		passwords, err = server.ParsePasswordFile(file)
		file.Close()
		if err != nil {
			return "", fmt.Errorf("--oauth-password-file %s: %v", o.passwordFile, err)
		}
	}
	origin, err := originOf(public)
	if err != nil {
		return "", err
	}
	scopes := []string{server.DefaultScope}
	resource, err := server.NewProtectedResource(server.ResourceConfig{
		PublicURL:            public,
		Path:                 cfg.Path,
		AuthorizationServers: []string{origin},
		ScopesSupported:      scopes,
		ResourceName:         "mcp-stdio",
	})
	if err != nil {
		return "", err
	}
	var signIn func(string)
	if passwords == nil {
		signIn = func(code string) {
			fmt.Fprintf(stderr, "mcp-stdio: OAuth sign-in code, to type on the consent page (one use; a new one is printed after each sign-in): %s\n", code)
		}
	}
	as, err := server.NewAuthorizationServer(server.AuthorizationServerConfig{
		Issuer:            origin,
		Resource:          resource.Resource(),
		Scopes:            scopes,
		Passwords:         passwords,
		SignInCode:        signIn,
		AllowRedirectURIs: o.redirectURIs,
		StorePath:         o.tokenStore,
		Logger:            logger,
	})
	if err != nil {
		return "", err
	}
	routes := map[string]http.Handler{}
	for _, p := range as.Paths() {
		routes[p] = as.Handler()
	}
	cfg.OAuth = &pipeline.OAuthConfig{
		Verifier: as,
		Resource: resource,
		Routes:   routes,
	}
	return as.Issuer(), nil
}

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
