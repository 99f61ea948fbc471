package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// maxDocumentSize bounds every metadata, registration and token response
// read from the network.
const maxDocumentSize = 1 << 20

// discovery is what a sign-in needs to know about the server's
// authorization: the resource to ask a token for and the authorization
// server to ask.
type discovery struct {
	// resource is the RFC 8707 resource parameter: the PRM resource when it
	// covers the server, else the server's canonical URI.
	resource string
	// prm is the protected resource metadata, nil for a server that has
	// none (MCP 2025-03-26).
	prm *ProtectedResourceMetadata
	// as is the authorization server metadata, or the default endpoints.
	as AuthServerMetadata
	// fromMetadata is false when as holds the default endpoints because no
	// metadata document exists.
	fromMetadata bool
}

// discover finds the authorization server for the client's MCP server
// (MCP 2025-11-25 and 2026-07-28 "Authorization Server Discovery"):
//
//  1. Protected resource metadata: the resource_metadata URL of the
//     challenge when there is one, then the path-aware well-known URL (the
//     server's query kept), then the host root. A 404 or any other status,
//     and a body that is not JSON at all, move on to the next URL; a
//     document that parses but is wrong (bad types, no resource, a resource
//     that is not this server) is an error, as MCP 2026-07-28 requires for
//     the resource.
//  2. The first authorization server listed that is https (http only on
//     loopback); without metadata or servers, the MCP server's origin.
//  3. Its metadata: RFC 8414 with path insertion, then OpenID configuration,
//     in the order of MCP 2026-07-28 §"Authorization Server Metadata
//     Discovery". A document whose issuer differs is an error, never a
//     reason to try defaults.
//  4. When every metadata URL says 404 (or similar): the default endpoints
//     /authorize, /token and /register on the authorization server
//     (MCP 2025-03-26 fallback).
func (c *Client) discover(ctx context.Context, hints challengeHints) (*discovery, error) {
	d := &discovery{}
	prm, _, tried, err := findResourceMetadata(ctx, c.http, c.log, c.server, hints.resourceMetadata)
	if err != nil {
		return nil, err
	}
	d.prm = prm
	d.resource = c.resource
	if d.prm != nil {
		d.resource = d.prm.Resource
		c.log.Debug("oauth: protected resource metadata found", "resource", d.prm.Resource, "authorization_servers", d.prm.AuthorizationServers)
	} else {
		c.log.Debug("oauth: no protected resource metadata; using the server's origin as authorization server", "tried", tried)
	}

	issuer, err := c.pickAuthServer(d.prm)
	if err != nil {
		return nil, err
	}
	as, err := c.fetchAuthServerMetadata(ctx, issuer)
	if err != nil {
		return nil, err
	}
	if as != nil {
		d.as, d.fromMetadata = *as, true
		return d, nil
	}
	base := strings.TrimRight(issuer, "/")
	d.as = AuthServerMetadata{
		Issuer:                issuer,
		AuthorizationEndpoint: base + "/authorize",
		TokenEndpoint:         base + "/token",
		RegistrationEndpoint:  base + "/register",
	}
	c.log.Info("oauth: no authorization server metadata; using default endpoints", "issuer", issuer)
	return d, nil
}

// findResourceMetadata finds the protected resource metadata of the MCP
// server at server (step 1 of discover): at hint, the resource_metadata of
// a challenge, when it is usable, then at the path-aware well-known URL
// (the server's query kept), then at the host root. It returns the
// document and where it was found, or nil with the URLs tried and how
// they answered when none has one. A 404 or any other status, and a body
// that is not JSON at all, move on to the next URL; a document that
// parses but is wrong (bad types, no resource, a resource that is not
// this server) is an error, and so is a failure to reach a URL.
func findResourceMetadata(ctx context.Context, hc *http.Client, log *slog.Logger, server *url.URL, hint string) (*ProtectedResourceMetadata, string, []string, error) {
	var tried []string
	var candidates []string
	if hint != "" {
		u, err := parseHTTPURL(hint)
		switch {
		case err != nil:
			log.Warn("oauth: ignoring the challenge's resource_metadata", "err", err)
		case checkSecureURL("resource metadata URL", u) != nil && origin(u) != origin(server):
			log.Warn("oauth: ignoring a plain-http resource_metadata URL on another origin", "url", frame.DisplayURL(u))
		default:
			candidates = append(candidates, u.String())
		}
	}
	for _, u := range prmURLs(server) {
		if !slices.Contains(candidates, u) {
			candidates = append(candidates, u)
		}
	}
	var malformed error
	for _, u := range candidates {
		body, status, err := getDocument(ctx, hc, u)
		if err != nil {
			return nil, "", tried, fmt.Errorf("protected resource metadata: %w", err)
		}
		if status != http.StatusOK {
			tried = append(tried, fmt.Sprintf("%s: HTTP %d", frame.DisplayURLString(u), status))
			continue
		}
		prm, err := ParseProtectedResourceMetadata(body)
		if errors.Is(err, errNotJSONObject) {
			malformed = fmt.Errorf("%s: %w", frame.DisplayURLString(u), err)
			tried = append(tried, malformed.Error())
			continue
		}
		if err != nil {
			return nil, "", tried, fmt.Errorf("%s: %w", frame.DisplayURLString(u), err)
		}
		if !resourceCovers(prm.Resource, server) {
			return nil, "", tried, fmt.Errorf("protected resource metadata at %s is for resource %q, not for %s", frame.DisplayURLString(u), prm.Resource, canonical(server))
		}
		return prm, u, tried, nil
	}
	if malformed != nil {
		return nil, "", tried, fmt.Errorf("protected resource metadata is malformed: %w", malformed)
	}
	return nil, "", tried, nil
}

// FindOAuthMetadata tells whether an OAuth sign-in has something to start
// from at the MCP server at serverURL, looking where a sign-in looks: its
// protected resource metadata (RFC 9728) at the resource_metadata URL of
// the WWW-Authenticate challenge in header (nil for none), then at the
// well-known URLs, path-aware first; else, as MCP 2025-03-26 had it, the
// authorization server metadata (RFC 8414, then OpenID configuration) of
// the server's origin. It returns the URL of the first document found, ""
// with a nil error when the server publishes neither: a sign-in would
// then guess endpoints the server most likely does not have. hc sends the
// requests, which carry no credentials; nil means http.DefaultClient. A
// protected resource metadata document that is malformed or names another
// resource, or a URL that cannot be reached, is an error.
func FindOAuthMetadata(ctx context.Context, hc *http.Client, serverURL string, header http.Header) (string, error) {
	u, err := parseHTTPURL(serverURL)
	if err != nil {
		return "", fmt.Errorf("server URL: %w", err)
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	hc = guardRedirects(hc)
	_, at, _, err := findResourceMetadata(ctx, hc, slog.New(slog.DiscardHandler), u, hintsFrom(header).resourceMetadata)
	if err != nil || at != "" {
		return at, err
	}
	issuer := origin(u)
	for _, mu := range asMetadataURLs(u.ResolveReference(&url.URL{Path: "/"})) {
		body, status, err := getDocument(ctx, hc, mu)
		if err != nil {
			return "", fmt.Errorf("authorization server metadata: %w", err)
		}
		if status != http.StatusOK {
			continue
		}
		if m, err := ParseAuthServerMetadata(body); err == nil && sameIssuer(m.Issuer, issuer) {
			return mu, nil
		}
	}
	return "", nil
}

// pickAuthServer returns the issuer identifier to use: the first listed
// authorization server that passes the https rule, or the MCP server's
// origin when the metadata lists none.
func (c *Client) pickAuthServer(prm *ProtectedResourceMetadata) (string, error) {
	if prm == nil || len(prm.AuthorizationServers) == 0 {
		return origin(c.server), nil
	}
	var first error
	for _, s := range prm.AuthorizationServers {
		u, err := parseSecureURL("authorization server", s)
		if err == nil && (u.RawQuery != "" || u.Fragment != "") {
			err = fmt.Errorf("authorization server %s: an issuer has no query or fragment", frame.DisplayURL(u))
		}
		if err != nil {
			if first == nil {
				first = err
			}
			c.log.Warn("oauth: skipping authorization server", "err", err)
			continue
		}
		if origin(u) != origin(c.server) {
			c.log.Info("oauth: the authorization server is on another origin", "issuer", frame.DisplayURL(u))
		}
		return s, nil
	}
	return "", fmt.Errorf("no usable authorization server: %w", first)
}

// fetchAuthServerMetadata fetches the metadata of issuer, or returns nil
// when no metadata URL has a document.
func (c *Client) fetchAuthServerMetadata(ctx context.Context, issuer string) (*AuthServerMetadata, error) {
	iu, err := parseHTTPURL(issuer)
	if err != nil {
		return nil, fmt.Errorf("authorization server: %w", err)
	}
	var malformed error
	for _, u := range asMetadataURLs(iu) {
		body, status, err := c.getDocument(ctx, u)
		if err != nil {
			return nil, fmt.Errorf("authorization server metadata: %w", err)
		}
		if status != http.StatusOK {
			continue
		}
		m, err := ParseAuthServerMetadata(body)
		if errors.Is(err, errNotJSONObject) {
			malformed = fmt.Errorf("%s: %w", frame.DisplayURLString(u), err)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", frame.DisplayURLString(u), err)
		}
		if !sameIssuer(m.Issuer, issuer) {
			return nil, fmt.Errorf("authorization server metadata at %s names issuer %q, not %q", frame.DisplayURLString(u), m.Issuer, issuer)
		}
		if err := m.check(issuer); err != nil {
			return nil, fmt.Errorf("authorization server metadata at %s: %w", frame.DisplayURLString(u), err)
		}
		c.log.Debug("oauth: authorization server metadata found", "url", frame.DisplayURLString(u), "issuer", m.Issuer)
		return m, nil
	}
	if malformed != nil {
		return nil, fmt.Errorf("authorization server metadata is malformed: %w", malformed)
	}
	return nil, nil
}

// check validates the endpoints of metadata found for issuer and fills the
// defaults of MCP 2025-03-26 for the two a client cannot do without.
func (m *AuthServerMetadata) check(issuer string) error {
	base := strings.TrimRight(issuer, "/")
	if m.AuthorizationEndpoint == "" {
		m.AuthorizationEndpoint = base + "/authorize"
	}
	if m.TokenEndpoint == "" {
		m.TokenEndpoint = base + "/token"
	}
	for _, e := range []struct{ what, url string }{
		{"authorization_endpoint", m.AuthorizationEndpoint},
		{"token_endpoint", m.TokenEndpoint},
		{"registration_endpoint", m.RegistrationEndpoint},
		{"device_authorization_endpoint", m.DeviceAuthorizationEndpoint},
	} {
		if e.url == "" {
			continue
		}
		if _, err := parseSecureURL(e.what, e.url); err != nil {
			return err
		}
	}
	if !m.supportsS256() {
		return fmt.Errorf("PKCE S256 is not supported (code_challenge_methods_supported: %v)", m.CodeChallengeMethodsSupported)
	}
	return nil
}

// getDocument GETs a JSON document with c's HTTP client (see the
// function getDocument).
func (c *Client) getDocument(ctx context.Context, u string) ([]byte, int, error) {
	return getDocument(ctx, c.http, u)
}

// getDocument GETs a JSON document with hc. A transport failure is an
// error; any HTTP status is returned for the caller to judge.
func getDocument(ctx context.Context, hc *http.Client, u string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", frame.DisplayURLString(u), err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot reach %s: %w", frame.DisplayURLString(u), unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, resp.StatusCode, nil
	}
	body, err := readLimited(resp.Body)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", frame.DisplayURLString(u), err)
	}
	return body, resp.StatusCode, nil
}

// readLimited reads a response body of at most maxDocumentSize bytes.
func readLimited(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxDocumentSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading the response: %w", err)
	}
	if len(b) > maxDocumentSize {
		return nil, fmt.Errorf("response larger than %d bytes", maxDocumentSize)
	}
	return b, nil
}

// unwrapURLError drops the *url.Error wrapper, whose message repeats the
// method and the full URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
