package transport

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// maxRedirects bounds the redirects one request follows.
const maxRedirects = 10

// RedirectError reports a redirect the HTTP client transports did not
// follow, or an HTTP+SSE endpoint event they did not use, because it
// leads away from the server's origin (scheme, host and port): to plain
// http from https, which is never followed, or to another origin, which
// is followed only when the transport's FollowRedirects allows it. Nothing
// was sent to the target. It is returned as it is, not wrapped in a
// *frame.SendError: sending again would only be redirected again.
type RedirectError struct {
	// Status is the redirect's HTTP status (307 or 308); 0 for an HTTP+SSE
	// endpoint event.
	Status int
	// From is the URL that was redirected (the stream's, for an endpoint
	// event), and To the target; both fit for messages, without
	// credentials or query.
	From, To string
	// Downgrade reports a target on plain http after https.
	Downgrade bool
}

func (e *RedirectError) Error() string {
	what := fmt.Sprintf("the server redirected (HTTP %d) to", e.Status)
	done := "not followed"
	if e.Status == 0 {
		what, done = "the HTTP+SSE stream named its endpoint", "not used"
	}
	if e.Downgrade {
		return fmt.Sprintf("%s %s, plain http after https: %s, as the request and its credentials would cross the network in clear", what, e.To, done)
	}
	return fmt.Sprintf("%s %s, another origin than %s: %s, as the request would go to another server than the one given", what, e.To, origin(e.From), done)
}

// RedirectRefusal returns From and To: it is how package mw, which does
// not import the transport, recognises a redirect not followed
// (mw.RedirectRefusal) to explain it.
func (e *RedirectError) RedirectRefusal() (from, to string) { return e.From, e.To }

// redirectPolicy is the rule the client transports apply to a redirect,
// and to an HTTP+SSE endpoint: same origin only, never from https to
// http, and to another origin only when crossOrigin allows it, without
// credentials.
type redirectPolicy struct {
	crossOrigin bool
	// static holds the transport's static headers (-H entries, a bearer
	// token): none is sent to another origin.
	static http.Header
}

// check is the policy as an http.Client's CheckRedirect. A redirect that
// changes the method (301, 302, 303 turn a POST into a GET, losing the
// message) or one past maxRedirects is not followed: its response is
// returned, to be reported as a status error.
func (p redirectPolicy) check(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects || req.Method != via[0].Method {
		return http.ErrUseLastResponse
	}
	status := 0
	if req.Response != nil {
		status = req.Response.StatusCode
	}
	if err := p.judge(via[0].URL, req.URL, status); err != nil {
		return err
	}
	if !sameOrigin(via[0].URL, req.URL) {
		p.strip(req.Header)
	}
	return nil
}

// judge returns the *RedirectError that refuses target after from, or nil
// when the policy allows it.
func (p redirectPolicy) judge(from, target *url.URL, status int) error {
	switch {
	case strings.EqualFold(from.Scheme, "https") && !strings.EqualFold(target.Scheme, "https"):
		return &RedirectError{Status: status, From: frame.DisplayURL(from), To: frame.DisplayURL(target), Downgrade: true}
	case sameOrigin(from, target), p.crossOrigin:
		return nil
	}
	return &RedirectError{Status: status, From: frame.DisplayURL(from), To: frame.DisplayURL(target)}
}

// strip takes the credentials off a request bound for another origin:
// Authorization, Cookie and every static header.
func (p redirectPolicy) strip(h http.Header) {
	h.Del("Authorization")
	h.Del("Cookie")
	for k := range p.static {
		h.Del(k)
	}
}

// client returns c (http.DefaultClient when nil) with the policy in front
// of its own CheckRedirect, which is still asked about what the policy
// lets through.
func (p redirectPolicy) client(c *http.Client) *http.Client {
	if c == nil {
		c = http.DefaultClient
	}
	own := c.CheckRedirect
	cc := *c
	cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := p.check(req, via); err != nil {
			return err
		}
		if own != nil {
			return own(req, via)
		}
		return nil
	}
	return &cc
}

// redirectRefused returns the *RedirectError in err, if any.
func redirectRefused(err error) (*RedirectError, bool) {
	var re *RedirectError
	ok := errors.As(err, &re)
	return re, ok
}

// isRedirectRefusal reports whether err is a *RedirectError.
func isRedirectRefusal(err error) bool {
	_, ok := redirectRefused(err)
	return ok
}

// sameOrigin reports whether a and b have the same scheme, host and port
// (an absent port is the scheme's default).
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

// port returns u's port, or its scheme's default.
func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}

// origin returns the scheme://host[:port] of a URL as text.
func origin(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}
