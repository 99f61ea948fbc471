package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// errSignInTimeout is the cause of a flow that ran out of --oauth-timeout.
var errSignInTimeout = errors.New("sign-in timed out")

// signInLockGrace is added to the flow timeout to bound the wait for a
// sibling process's sign-in.
const signInLockGrace = 30 * time.Second

// randomState returns a fresh CSRF state: 32 random bytes, base64url.
func randomState() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// signIn runs one interactive sign-in for the server: hints are what the
// challenge that caused it said (resource_metadata, scope), extra are
// scopes to add (a step-up's union). It holds a per-server cross-process
// lock for its whole length, so sibling relays do not open a browser each,
// and adopts the token a sibling got while it waited.
func (c *Client) signIn(ctx context.Context, hints challengeHints, extra []string) error {
	ctx, cancel := withClockTimeout(ctx, c.clock, c.opts.Timeout, fmt.Errorf("%w after %s", errSignInTimeout, c.opts.Timeout))
	defer cancel()

	if err := c.store.ensureDir(); err != nil {
		return c.flowError(ctx, err)
	}
	release, err := lockFile(ctx, c.signInLockPath(), c.opts.Timeout+signInLockGrace)
	switch {
	case errors.Is(err, errLockTimeout):
		c.log.Warn("oauth: another process's sign-in is taking long; signing in anyway")
	case err != nil:
		return c.flowError(ctx, err)
	default:
		defer release()
	}

	c.mu.Lock()
	rejected := c.tok.AccessToken
	c.mu.Unlock()
	e, err := c.store.load(c.resource)
	if err != nil {
		c.log.Error("oauth: "+err.Error(), "path", c.store.path)
		e = nil
	}
	if e != nil && e.AccessToken != "" && e.AccessToken != rejected {
		t := e.token()
		if !t.expired(c.clock.Now(), 0) && scopesCover(splitScopes(e.Scope), extra) {
			c.log.Info("oauth: using the token another process signed in for", "server", frame.DisplayURLString(c.resource))
			c.install(t, e, false)
			return nil
		}
	}

	d, err := c.discover(ctx, hints)
	if err != nil {
		return c.flowError(ctx, err)
	}
	scopes := c.chooseScopes(d, hints, extra)
	var (
		tok        Token
		creds      clientCreds
		registered bool
	)
	if c.opts.Device {
		tok, creds, registered, err = c.deviceFlow(ctx, d, e, scopes)
	} else {
		tok, creds, registered, err = c.codeFlow(ctx, d, e, scopes)
	}
	if err != nil {
		return c.flowError(ctx, err)
	}
	if tok.Scope == "" {
		tok.Scope = strings.Join(scopes, " ")
	}
	entry := &storeEntry{}
	if e != nil {
		*entry = *e
	}
	entry.setToken(tok)
	entry.Resource = d.resource
	entry.Issuer = d.as.Issuer
	entry.TokenEndpoint = d.as.TokenEndpoint
	entry.AuthorizationEndpoint = d.as.AuthorizationEndpoint
	entry.RegistrationEndpoint = d.as.RegistrationEndpoint
	switch {
	case c.opts.ClientID != "":
		// Pre-registered: the secret stays where the user keeps it.
		entry.setClient(clientCreds{id: creds.id, method: creds.method}, c.flowName())
	case registered || creds.id == c.opts.ClientMetadataURL:
		entry.setClient(creds, c.flowName())
	}
	err = c.store.update(ctx, c.resource, func(*storeEntry) (*storeEntry, bool, error) {
		return entry, true, nil
	})
	if err != nil {
		c.log.Error("oauth: cannot save the token; it is kept in memory only", "err", err)
	}
	c.install(tok, entry, false)
	c.log.Info("oauth: signed in", "server", frame.DisplayURLString(c.resource), "scope", entry.Scope)
	return nil
}

// flowError turns the timeout cause into the error and names the failure.
func (c *Client) flowError(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, errSignInTimeout) {
		err = cause
	}
	return fmt.Errorf("sign-in failed: %w", err)
}

// signInLockPath is the per-server lock file of interactive sign-ins.
func (c *Client) signInLockPath() string {
	sum := sha256.Sum256([]byte(c.resource))
	return c.store.path + ".signin-" + hex.EncodeToString(sum[:6]) + ".lock"
}

// chooseScopes picks the scope of a sign-in: --oauth-scope when given, else
// the challenge's scope, else the PRM's scopes_supported, else none (the
// parameter is then omitted, MCP 2025-11-25 "Scope Selection Strategy");
// then the step-up extras. offline_access is added only when the
// authorization server lists it and some scope is requested at all (SEP-2207).
func (c *Client) chooseScopes(d *discovery, hints challengeHints, extra []string) []string {
	var base []string
	switch {
	case c.opts.Scope != "":
		base = splitScopes(c.opts.Scope)
	case len(hints.scopes) > 0:
		base = hints.scopes
	case d.prm != nil:
		base = d.prm.ScopesSupported
	}
	out := unionScopes(extra, base) // a step-up keeps what it holds first
	if len(out) > 0 && slices.Contains(d.as.ScopesSupported, "offline_access") && !slices.Contains(out, "offline_access") {
		out = append(out, "offline_access")
	}
	return out
}

// unionScopes returns a's scopes followed by those of b not in a.
func unionScopes(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	for _, s := range a {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, s := range b {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// scopesCover reports whether have includes every scope of want.
func scopesCover(have, want []string) bool {
	for _, s := range want {
		if !slices.Contains(have, s) {
			return false
		}
	}
	return true
}

// codeFlow runs the authorization code grant with PKCE S256 through the
// browser and the loopback listener, and exchanges the code.
//
// golang.org/x/oauth2 builds the authorization URL and makes the PKCE
// verifier and challenge: both are exactly what RFC 7636 and RFC 6749 say
// and there is nothing to gain from a second copy. It never adds prompt=
// (claude-code#49722). The verifier lives in this function only, never on
// disk (mcp-remote#251).
func (c *Client) codeFlow(ctx context.Context, d *discovery, e *storeEntry, scopes []string) (Token, clientCreds, bool, error) {
	state := randomState()
	cb, err := startCallback(c.opts.CallbackPort, state, d.as.Issuer, d.as.AuthorizationResponseIssParameterSupported)
	if err != nil {
		return Token{}, clientCreds{}, false, err
	}
	defer cb.close()
	redirect := cb.redirectURI()
	creds, registered, err := c.clientFor(ctx, d, e, redirect)
	if err != nil {
		return Token{}, clientCreds{}, false, err
	}
	verifier := oauth2.GenerateVerifier()
	cfg := oauth2.Config{
		ClientID:    creds.id,
		Endpoint:    oauth2.Endpoint{AuthURL: d.as.AuthorizationEndpoint},
		RedirectURL: redirect,
		Scopes:      scopes,
	}
	authURL := cfg.AuthCodeURL(state, append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}, c.authURLOptions(d.resource)...)...)
	fmt.Fprintf(c.stderr, "mcp-stdio: sign in to %s in your browser. If it did not open, visit this URL:\n%s\n", frame.DisplayURLString(c.resource), authURL)
	if err := c.openURL(ctx, authURL); err != nil {
		c.log.Warn("oauth: could not open a browser; open the URL printed above", "err", err)
	}
	var res callbackResult
	select {
	case res = <-cb.results:
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), errSignInTimeout) {
			return Token{}, clientCreds{}, false, fmt.Errorf("%w: no answer from the browser", context.Cause(ctx))
		}
		return Token{}, clientCreds{}, false, context.Cause(ctx)
	}
	if res.err != nil {
		return Token{}, clientCreds{}, false, res.err
	}
	tok, err := c.requestToken(ctx, d.as.TokenEndpoint, creds, c.withResource(url.Values{
		"grant_type":    {grantAuthorizationCode},
		"code":          {res.code},
		"redirect_uri":  {redirect},
		"code_verifier": {verifier},
	}, d.resource))
	if err != nil {
		return Token{}, clientCreds{}, false, fmt.Errorf("exchanging the authorization code: %w", err)
	}
	return tok, creds, registered, nil
}
