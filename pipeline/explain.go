package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-stdio/mcp-stdio/auth"
	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport"
)

// Unreachable explains why the server cannot be used at all: nothing
// listens at the URL, the URL names no MCP endpoint, the server wants
// credentials, it failed. [Check] reports it, and the relay answers a
// failed initialize with it — and every request with it once the HTTP+SSE
// stream could not be opened — so that the host shows the user what is
// wrong. Its Error is one line: what happened, its likely cause, the
// server's own words and, when [RelayConfig.Advice] gives some, what to do.
type Unreachable struct {
	// URL is the server's URL, without credentials or query.
	URL string
	// Status is the HTTP status the server refused with; 0 when there was
	// no answer.
	Status int
	// Request says which request was refused: "POST" (Streamable HTTP),
	// "GET" (the HTTP+SSE stream), or "POST and GET" (both: the relay fell
	// back to HTTP+SSE and was refused again). "" when Status is 0.
	Request string
	// Transport is the transport asked for (RelayConfig.Transport).
	Transport string
	// Challenge is the WWW-Authenticate header of a 401 or 403, made safe
	// to print.
	Challenge string
	// Credentials says whether the refused request carried credentials
	// (an Authorization header, or OAuth).
	Credentials bool
	// OAuthMetadata is, after a 401 or 403 when the relay does not sign in
	// itself (RelayConfig.Auth is nil), the URL of the metadata an OAuth
	// sign-in would start from that the server publishes: its protected
	// resource metadata (RFC 9728), else its origin's authorization server
	// metadata (MCP 2025-03-26). It is looked for as a sign-in does
	// (auth.FindOAuthMetadata), once per relay, for at most
	// OAuthMetadataWait. "" when the server publishes neither, or it could
	// not be told: then a sign-in has nothing to go by.
	OAuthMetadata string
	// Said is the server's own explanation, made safe to print: the
	// message of its JSON-RPC error, or the first line of its body.
	Said string
	// Cause is the likely cause, in a few words.
	Cause string
	// Advice is what the user can do, from RelayConfig.Advice.
	Advice string
	// Err is the failure as the transport reported it.
	Err error
}

func (u *Unreachable) Error() string {
	var b strings.Builder
	switch {
	case u.Status != 0 && u.Request == "POST and GET":
		fmt.Fprintf(&b, "HTTP %d from %s to both the Streamable HTTP POST and the HTTP+SSE GET", u.Status, u.URL)
	case u.Status != 0 && u.Request == "GET":
		fmt.Fprintf(&b, "HTTP %d from %s to the HTTP+SSE GET", u.Status, u.URL)
	case u.Status != 0:
		fmt.Fprintf(&b, "HTTP %d from %s", u.Status, u.URL)
	case isRedirect(u.Err):
		b.WriteString(failureText(u.Err)) // it names where it leads
	case networkCause(u.Err) != "":
		fmt.Fprintf(&b, "cannot reach %s: %s", u.URL, failureText(u.Err))
	default:
		fmt.Fprintf(&b, "%s at %s", failureText(u.Err), u.URL)
	}
	if u.Cause != "" {
		b.WriteString(": " + u.Cause)
	}
	if u.Challenge != "" {
		fmt.Fprintf(&b, " (WWW-Authenticate: %s)", u.Challenge)
	}
	if u.Said != "" {
		fmt.Fprintf(&b, "; the server said: %q", u.Said)
	}
	if u.Advice != "" {
		b.WriteString("; " + u.Advice)
	}
	return b.String()
}

func (u *Unreachable) Unwrap() error { return u.Err }

// explain turns a failure to reach the server into an [Unreachable], with
// the advice of c.Advice; it returns nil for failures that say nothing
// about the server (the client cancelled, the relay is closing).
func (c *RelayConfig) explain(err error) *Unreachable {
	if err == nil || errors.Is(err, frame.ErrCancelled) || errors.Is(err, frame.ErrClosed) {
		return nil
	}
	var u *Unreachable
	if errors.As(err, &u) {
		return u
	}
	u = c.diagnose(err)
	if c.Advice != nil {
		u.Advice = c.Advice(u)
	}
	return u
}

// diagnose finds what happened and its likely cause.
func (c *RelayConfig) diagnose(err error) *Unreachable {
	u := &Unreachable{
		URL:         frame.DisplayURLString(c.URL),
		Transport:   c.Transport,
		Credentials: c.Auth != nil || c.Header.Get("Authorization") != "",
		Err:         err,
	}
	var start *transport.StartError
	var st *frame.StatusError
	switch {
	case isRedirect(err):
		return u // the error says where the server sent us, and why not
	case errors.As(err, &start) && start.Status != nil:
		st = start.Status
		u.Request = "GET"
		if start.PostStatus != nil {
			u.Request = "POST and GET"
		}
	case errors.As(err, &start):
		// The stream never offered an endpoint, for a reason of its own.
		if start.Err != nil && !errors.As(start.Err, &st) {
			u.Cause = networkCause(start.Err)
			if u.Cause == "" {
				u.Cause = "no HTTP+SSE stream there (is this the SSE URL?)"
			}
			return u
		}
		if st == nil {
			u.Cause = "no HTTP+SSE stream there (is this the SSE URL?)"
			return u
		}
		u.Request = "GET"
	case errors.As(err, &st):
		u.Request = "POST"
	default:
		u.Cause = networkCause(err)
		return u
	}
	u.Status = st.Code
	u.Said = c.serverSaid(st)
	if st.Code == http.StatusUnauthorized || st.Code == http.StatusForbidden {
		u.Challenge = c.safeText(st.Header.Get("WWW-Authenticate"))
		if c.Auth == nil {
			u.OAuthMetadata = c.oauthMetadata(st.Header)
		}
	}
	u.Cause = statusCause(u)
	return u
}

// OAuthMetadataWait bounds the look for a server's OAuth metadata after
// it refused the relay with 401 or 403 (see Unreachable.OAuthMetadata).
const OAuthMetadataWait = 3 * time.Second

// metadataLookup is the look for the server's OAuth metadata, made once
// for a relay (and [Check]): the advice of every answer it explains comes
// from the same look.
type metadataLookup struct {
	once sync.Once
	at   string
}

// oauthMetadata returns the URL of the OAuth metadata the server
// publishes, "" for none: the look is made once, with the challenge of
// the first refusal h, without credentials.
func (c *RelayConfig) oauthMetadata(h http.Header) string {
	look := c.lookup
	if look == nil {
		look = &metadataLookup{}
	}
	look.once.Do(func() {
		hc := c.HTTPClient
		if hc == nil {
			hc = transport.NewHTTPClient(c.HTTP)
			defer hc.CloseIdleConnections()
		}
		ctx, cancel := context.WithTimeout(context.Background(), OAuthMetadataWait)
		defer cancel()
		at, err := auth.FindOAuthMetadata(ctx, hc, c.URL, h)
		if err != nil {
			c.Logger.Debug("could not tell whether the server publishes OAuth metadata", "err", err)
			return
		}
		look.at = at
	})
	return look.at
}

// statusCause is the likely cause of a refusal.
func statusCause(u *Unreachable) string {
	switch code := u.Status; {
	case u.Request == "POST and GET" && code != http.StatusUnauthorized && code != http.StatusForbidden:
		return "no MCP endpoint at this path"
	case code == http.StatusNotFound:
		return "no MCP endpoint at this path"
	case u.Request == "GET" && (code == http.StatusBadRequest || code == http.StatusMethodNotAllowed):
		return "not an HTTP+SSE stream (a Streamable HTTP endpoint answers a GET without a session this way)"
	case code == http.StatusMethodNotAllowed:
		return "the endpoint takes no POST (an HTTP+SSE stream?)"
	case code == http.StatusUnauthorized && u.Credentials:
		return "the server refused the credentials sent"
	case code == http.StatusUnauthorized:
		return "the server wants credentials"
	case code == http.StatusForbidden:
		return "the server refused access"
	case code >= 500:
		return "the server (or a proxy in front of it) failed"
	}
	return ""
}

// isRedirect reports whether err is a redirect (or an HTTP+SSE endpoint)
// the transport did not follow.
func isRedirect(err error) bool {
	var redirect *transport.RedirectError
	return errors.As(err, &redirect)
}

// networkCause names a failure to get any answer, in a few words.
func networkCause(err error) string {
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "nothing listens there"
	case errors.As(err, &dns):
		return "the host name does not resolve"
	case errors.Is(err, syscall.ECONNRESET):
		return "the connection was reset"
	case isTimeout(err):
		return "no answer in time"
	case errors.As(err, &op):
		return "the connection failed"
	}
	return ""
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// failureText is the most specific text of a network failure: the
// innermost error, without the method and URL a *url.Error repeats.
func failureText(err error) string {
	if err == nil {
		return "no answer"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var se *frame.SendError
	if errors.As(err, &se) {
		err = se.Err
	}
	var errno syscall.Errno
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns):
		return oneLineText(dns.Error())
	case errors.As(err, &errno):
		return errno.Error()
	}
	return oneLineText(err.Error())
}

// serverSaid returns the server's own explanation of a refusal, made safe
// to print: its JSON-RPC error's message, an OAuth-style error's
// description, or the first line of text of its body.
func (c *RelayConfig) serverSaid(st *frame.StatusError) string {
	body := st.Body
	if m, err := frame.Parse(body); err == nil {
		if msg := m.Get("error.message").String(); msg != "" {
			return c.safeText(msg)
		}
		for _, key := range []string{"error_description", "message", "error"} {
			if r := m.Get(key); r.Type.String() == "String" && r.String() != "" {
				return c.safeText(r.String())
			}
		}
		return ""
	}
	text := string(body)
	if i := strings.Index(strings.ToLower(text), "<title>"); i >= 0 {
		rest := text[i+len("<title>"):]
		if j := strings.Index(strings.ToLower(rest), "</title>"); j >= 0 {
			return c.safeText(rest[:j])
		}
	}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "<") {
			return "" // markup, and no title
		}
		return c.safeText(line)
	}
	return ""
}

// bearerText matches a bearer token in a server's text: 16 or more
// token characters after "Bearer" (so "Bearer realm" is left alone); the
// empty group marks where the token starts.
var bearerText = regexp.MustCompile(`(?i)bearer\s+()[A-Za-z0-9\-._~+/]{16,}=*`)

// safeText makes a server's text fit for one line of a terminal and free
// of the credentials we sent: servers echo them in error pages. Values of
// the static headers and anything shaped like a bearer token are blanked.
func (c *RelayConfig) safeText(s string) string {
	for _, vs := range c.Header {
		for _, v := range vs {
			if len(v) >= 8 {
				s = strings.ReplaceAll(s, v, "…")
				if _, tok, ok := strings.Cut(v, " "); ok && len(tok) >= 8 {
					s = strings.ReplaceAll(s, tok, "…")
				}
			}
		}
	}
	s = blankBearerTokens(s)
	return strings.TrimSpace(oneLineText(s))
}

// blankBearerTokens blanks what follows "Bearer " when it is shaped like
// a token: not an auth-param (name=value) of a challenge.
func blankBearerTokens(s string) string {
	var b strings.Builder
	last := 0
	for _, m := range bearerText.FindAllStringSubmatchIndex(s, -1) {
		tokStart, end := m[3], m[1]
		if strings.HasSuffix(s[tokStart:end], "=") && end < len(s) && s[end] != ' ' && s[end] != ',' {
			continue // name=value
		}
		b.WriteString(s[last:tokStart])
		b.WriteString("…")
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}
