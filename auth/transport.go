package auth

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// TokenSource supplies the bearer token of the next request. [Client]
// implements it.
type TokenSource interface {
	// BearerToken returns the access token to send ("" for none: the
	// request then goes without OAuth credentials) and its generation,
	// which changes whenever the token does. It must be safe for concurrent
	// use and must not start an interactive sign-in.
	BearerToken(ctx context.Context) (token string, generation uint64)
}

// Transport is an http.RoundTripper that authorizes every request it
// carries — POSTs, the GET stream, DELETE — with "Authorization: Bearer"
// and the current token of Source. The OAuth value replaces any
// Authorization header already on the request (a static -H header loses).
// The token goes only to the server it was issued for: never to a
// redirect's target on another origin than the request that was
// redirected, and, when Origin is set, to no request for another origin.
//
// On a 401 or 403 response it adds [GenerationHeader] to the response
// headers: the generation of the token the request carried, so the reauth
// stage can tell a stale rejection from a current one. It never retries:
// that is mw.Reauth's job, which knows which requests may be repeated.
//
// Following the RoundTripper contract, the caller's request is not
// modified (a clone carries the header) and errors are Base's.
type Transport struct {
	// Base carries the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
	// Source supplies the token.
	Source TokenSource
	// Origin, when set, is the server's URL: requests for another origin
	// (scheme, host and port) than its go without the token.
	Origin string
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	tok, gen := t.Source.BearerToken(req.Context())
	out := req
	if tok != "" && t.mayAuthorize(req) {
		out = req.Clone(req.Context())
		out.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := base.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		if resp.Header == nil {
			resp.Header = make(http.Header)
		}
		resp.Header.Set(GenerationHeader, strconv.FormatUint(gen, 10))
	}
	return resp, nil
}

// mayAuthorize reports whether req may carry the token: its origin is the
// one its chain of redirects began at, and Origin's when that is set.
func (t *Transport) mayAuthorize(req *http.Request) bool {
	if !sameOrigin(req.URL, firstRequest(req).URL) {
		return false
	}
	if t.Origin == "" {
		return true
	}
	u, err := url.Parse(t.Origin)
	return err == nil && sameOrigin(req.URL, u)
}
