package auth

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// maxRedirects bounds the redirects one OAuth request follows, as
// net/http's default does.
const maxRedirects = 10

// errTooManyRedirects ends a chain of redirects past maxRedirects.
var errTooManyRedirects = errors.New("stopped after 10 redirects")

// guardRedirects returns c with a CheckRedirect that keeps credentials
// where they were sent: a request carrying them — a body (a token
// request's code, verifier, refresh token or client secret; a client
// registration) or an Authorization header — is not redirected to another
// origin (scheme, host and port), and no request is redirected from https
// to plain http, since the metadata documents fetched decide where
// credentials go next. c's own CheckRedirect, if any, is asked about the
// rest. c itself is not modified.
func guardRedirects(c *http.Client) *http.Client {
	own := c.CheckRedirect
	cc := *c
	cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := checkRedirect(req, via); err != nil {
			return err
		}
		if own != nil {
			return own(req, via)
		}
		if len(via) >= maxRedirects {
			return errTooManyRedirects
		}
		return nil
	}
	return &cc
}

// checkRedirect applies guardRedirects' rule to the next hop req.
func checkRedirect(req *http.Request, via []*http.Request) error {
	first := via[0]
	switch {
	case strings.EqualFold(first.URL.Scheme, "https") && !strings.EqualFold(req.URL.Scheme, "https"):
		return fmt.Errorf("redirected from https to plain http (%s): not followed", frame.DisplayURL(req.URL))
	case carriesCredentials(first) && origin(req.URL) != origin(first.URL):
		return fmt.Errorf("redirected to another origin (%s): not followed, as the request carries credentials", frame.DisplayURL(req.URL))
	}
	return nil
}

// carriesCredentials reports whether a request sends secrets: a body, or
// an Authorization header.
func carriesCredentials(r *http.Request) bool {
	return (r.Body != nil && r.Body != http.NoBody) || r.ContentLength > 0 || r.GetBody != nil || r.Header.Get("Authorization") != ""
}

// firstRequest returns the request a chain of redirects began with.
func firstRequest(r *http.Request) *http.Request {
	for r.Response != nil && r.Response.Request != nil {
		r = r.Response.Request
	}
	return r
}

// sameOrigin reports whether two URLs share scheme, host and port.
func sameOrigin(a, b *url.URL) bool { return origin(a) == origin(b) }
