package main_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
)

// oidcResource is the resource the provider's tokens are for: serve's
// --public-url plus its path.
const oidcResource = "https://mcp.example.test/mcp"

// TestIssuerVerifierAgainstOIDCProvider checks resource-server mode's
// verifier against a real OpenID provider: discovery (the provider serves
// only OpenID Connect metadata), its JWT access tokens, a key rotation
// mid-run, and its RFC 7662 introspection of opaque tokens.
func TestIssuerVerifierAgainstOIDCProvider(t *testing.T) {
	is := is.New(t)
	p := startOIDCProvider(t, oidcResource)
	ctx := context.Background()
	v, err := server.NewIssuerVerifier(ctx, server.IssuerConfig{
		Issuer:                p.issuer,
		Resource:              oidcResource,
		IntrospectionClientID: oidcRSID,
		IntrospectionSecret:   oidcRSSecret,
	})
	is.NoErr(err)

	tok := p.token(t, oidcResource, false)
	is.Equal(jwtKid(t, tok), p.kid)
	pr, err := v.Verify(ctx, tok)
	is.NoErr(err)
	is.Equal(pr.Issuer, p.issuer)
	is.Equal(pr.Subject, oidcClientID) // a client credentials token's sub is its client
	is.Equal(pr.Scopes, []string{"mcp:tools"})

	// A token for another resource is refused.
	_, err = v.Verify(ctx, p.token(t, "https://other.example.test/mcp", false))
	is.True(errors.Is(err, server.ErrInvalidToken))

	// The provider rotates its key: a token signed with the new one is
	// taken after one fetch of its key set.
	kid := p.rotate(t)
	tok = p.token(t, oidcResource, false)
	is.Equal(jwtKid(t, tok), kid)
	pr, err = v.Verify(ctx, tok)
	is.NoErr(err)
	is.Equal(pr.Subject, oidcClientID)

	// An opaque token goes to introspection.
	opaque := p.token(t, oidcResource, true)
	is.True(strings.Count(opaque, ".") != 2)
	pr, err = v.Verify(ctx, opaque)
	is.NoErr(err)
	is.Equal(pr.Subject, oidcClientID)
	is.Equal(pr.Scopes, []string{"mcp:tools"})
	_, err = v.Verify(ctx, p.token(t, "https://other.example.test/mcp", true))
	is.True(errors.Is(err, server.ErrInvalidToken)) // its introspection names another audience
	_, err = v.Verify(ctx, "made-up-opaque-token")
	is.True(errors.Is(err, server.ErrInvalidToken)) // not active
}
