//go:build linux

package main_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"

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

// authPost sends one JSON-RPC message to serve with a bearer token (none
// when token is empty), on the session sid unless it is empty, and
// returns the answer's status, WWW-Authenticate, body and session id.
func authPost(t *testing.T, g *servedGateway, token, sid, body string) (status int, challenge, answer, answerSID string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b), resp.Header.Get("Mcp-Session-Id")
}

// TestServeResourceServerModeAgainstOIDCProvider runs `mcp-stdio serve
// --oauth-issuer` against a real OpenID provider: without a token serve
// challenges and its metadata names the provider; with the provider's JWT
// a session opens and a tool call succeeds as the token's subject; after
// the provider rotates its signing key a new token still works; an opaque
// token works through introspection; a token for another resource is
// refused.
func TestServeResourceServerModeAgainstOIDCProvider(t *testing.T) {
	is := is.New(t)
	p := startOIDCProvider(t, oidcResource)
	t.Setenv(server.IntrospectionSecretEnv, oidcRSSecret)
	g := startServe(t, "--public-url", "https://mcp.example.test", "--oauth-issuer", p.issuer, "--oauth-introspection-client-id", oidcRSID)
	principal := p.issuer + " " + oidcClientID
	authorized := g.stderr.Watch(regexp.MustCompile(`msg=authorized .*principal="([^"]*)"`))

	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"oidc-e2e","version":"1"}}}`
	status, challenge, _, _ := authPost(t, g, "", "", initialize)
	is.Equal(status, http.StatusUnauthorized)
	is.True(strings.Contains(challenge, `resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp"`))
	md := g.url[:strings.LastIndex(g.url, "/mcp")] + "/.well-known/oauth-protected-resource/mcp"
	resp, err := g.client.Get(md)
	is.NoErr(err)
	doc, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	is.Equal(gjson.GetBytes(doc, "resource").Str, oidcResource)
	is.Equal(gjson.GetBytes(doc, "authorization_servers").Raw, `["`+p.issuer+`"]`)

	call := func(token, sid, id string) {
		t.Helper()
		status, _, answer, _ := authPost(t, g, token, sid, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello `+id+`"}}}`)
		is.Equal(status, http.StatusOK)
		is.True(strings.Contains(answer, "hello "+id)) // the tool answered
	}
	tok := p.token(t, oidcResource, false)
	status, _, answer, sid := authPost(t, g, tok, "", initialize)
	is.Equal(status, http.StatusOK)
	is.True(sid != "")
	is.True(strings.Contains(answer, `"protocolVersion"`))
	is.Equal(authorized.Next(t, serveProcWait)[1], principal) // the principal is the token's sub, at its issuer
	status, _, _, _ = authPost(t, g, tok, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	is.Equal(status, http.StatusAccepted)
	call(tok, sid, "2")

	// The provider rotates its key; its next token, signed with the new
	// one, works on the same session (the same principal).
	kid := p.rotate(t)
	fresh := p.token(t, oidcResource, false)
	is.Equal(jwtKid(t, fresh), kid)
	call(fresh, sid, "3")

	// An opaque token of the same client, through introspection.
	call(p.token(t, oidcResource, true), sid, "4")

	// A token for another resource: refused, with a challenge.
	status, challenge, _, _ = authPost(t, g, p.token(t, "https://other.example.test/mcp", false), sid, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
	is.Equal(status, http.StatusUnauthorized)
	is.True(strings.Contains(challenge, `error="invalid_token"`))
	is.True(!strings.Contains(g.stderr.String(), fresh)) // tokens are never logged
}
