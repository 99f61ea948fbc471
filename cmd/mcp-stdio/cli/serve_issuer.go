package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
	"github.com/mcp-stdio/mcp-stdio/transport"
)

// issuerDiscoveryTimeout bounds the discovery of every --oauth-issuer at
// start, all together.
const issuerDiscoveryTimeout = 30 * time.Second

// issuerFlags are the flags of resource-server mode: serve trusts the
// access tokens of external authorization servers.
type issuerFlags struct {
	issuers  stringList // --oauth-issuer, in order of preference
	clientID string     // --oauth-introspection-client-id
	secret   string     // from server.IntrospectionSecretEnv, never a flag
	rate     int        // --oauth-introspection-rate
	caFiles  stringList // --ca-file
	getenv   func(string) string
}

// define defines the flags on fs.
func (f *issuerFlags) define(fs *flag.FlagSet) {
	fs.Var(&f.issuers, "oauth-issuer", "take the access tokens of the authorization server whose issuer is `URL` (https; http only on loopback), checked against its published keys or, for opaque tokens, its introspection (repeatable)")
	fs.StringVar(&f.clientID, "oauth-introspection-client-id", "", "introspect opaque access tokens at the --oauth-issuer as the client `ID`, with the secret in the "+server.IntrospectionSecretEnv+" env var")
	fs.Var(&f.caFiles, "ca-file", "trust the CA certificates in the PEM file `PEM` too, besides the system's, for the --oauth-issuer requests (metadata, keys, introspection); repeatable")
	fs.IntVar(&f.rate, "oauth-introspection-rate", server.DefaultIntrospectionRate, "send each --oauth-issuer at most `N` introspection requests a second (tokens already checked are answered from the cache); a check beyond it answers 503 with Retry-After")
}

// readEnv takes the introspection secret from the environment.
// It keeps getenv for the issuer requests' proxy (HTTPS_PROXY,
// HTTP_PROXY, NO_PROXY).
func (f *issuerFlags) readEnv(getenv func(string) string) {
	f.secret = getenv(server.IntrospectionSecretEnv)
	f.getenv = getenv
}

// check refuses the flags that need --oauth-issuer without one.
func (f *issuerFlags) check() error {
	if len(f.issuers) == 0 && f.clientID != "" {
		return errors.New("--oauth-introspection-client-id needs --oauth-issuer URL, the authorization server to introspect tokens at")
	}
	if len(f.issuers) == 0 && len(f.caFiles) > 0 {
		return errors.New("--ca-file needs --oauth-issuer URL: serve makes no other requests that need it")
	}
	if f.rate < 1 {
		return fmt.Errorf("--oauth-introspection-rate %d: give at least 1 request a second", f.rate)
	}
	if f.clientID == "" && f.secret != "" && len(f.issuers) > 0 {
		return fmt.Errorf("%s is set but --oauth-introspection-client-id is not: give the client ID the secret belongs to", server.IntrospectionSecretEnv)
	}
	return nil
}

// verifiers discovers every --oauth-issuer and returns a verifier of its
// tokens for resource, the protected resource's identifier, in the order
// given. A discovery that fails is an error naming the issuer.
func (f *issuerFlags) verifiers(ctx context.Context, resource string, logger *slog.Logger) ([]server.Verifier, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	tlsConfig, err := caTLSConfig(f.caFiles)
	if err != nil {
		return nil, err
	}
	// The issuer requests go through the environment's proxy and trust
	// --ca-file's CAs; each is bounded by the verifier itself.
	client := transport.NewHTTPClient(transport.HTTPOptions{Getenv: f.getenv, KeepAlive: true, TLSClientConfig: tlsConfig})
	ctx, cancel := context.WithTimeout(ctx, issuerDiscoveryTimeout)
	defer cancel()
	var vs []server.Verifier
	for _, iss := range f.issuers {
		v, err := server.NewIssuerVerifier(ctx, server.IssuerConfig{
			Issuer:                iss,
			Resource:              resource,
			IntrospectionClientID: f.clientID,
			IntrospectionSecret:   f.secret,
			IntrospectionRate:     f.rate,
			HTTPClient:            client,
			Logger:                logger,
		})
		if err != nil {
			if advice := certificateAdvice(err, len(f.caFiles) > 0); advice != "" {
				return nil, fmt.Errorf("--oauth-issuer: %w; %s", err, advice)
			}
			return nil, fmt.Errorf("--oauth-issuer: %w", err)
		}
		vs = append(vs, v)
	}
	return vs, nil
}
