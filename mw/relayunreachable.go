package mw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Unreachable explains why the server cannot be used at all: nothing
// listens at the URL, the URL names no MCP endpoint, the server wants
// credentials, it failed. [Diagnose] makes it from the failure a
// transport reported; package pipeline's Check reports it, and its relay
// answers a failed initialize with it — and every request with it once
// the HTTP+SSE stream could not be opened — so that the host shows the
// user what is wrong. Its Error is one line: what happened, its likely
// cause, the server's own words and, when [DiagnoseOptions.Advice] gives
// some, what to do.
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
	// Transport is the transport asked for (DiagnoseOptions.Transport).
	Transport string
	// Challenge is the WWW-Authenticate header of a 401 or 403, made safe
	// to print.
	Challenge string
	// Credentials says whether the refused request carried credentials
	// (an Authorization header, or OAuth).
	Credentials bool
	// OAuthMetadata is, after a 401 or 403 when the relay does not sign in
	// itself (DiagnoseOptions.SignsIn is false), the URL of the metadata an OAuth
	// sign-in would start from that the server publishes: its protected
	// resource metadata (RFC 9728), else its origin's authorization server
	// metadata (MCP 2025-03-26). It is looked for as a sign-in does
	// (DiagnoseOptions.FindOAuthMetadata), once per relay
	// (DiagnoseOptions.Lookup), for at most OAuthMetadataWait. "" when the server publishes neither, or it could
	// not be told: then a sign-in has nothing to go by.
	OAuthMetadata string
	// Said is the server's own explanation, made safe to print: the
	// message of its JSON-RPC error, or the first line of its body.
	Said string
	// Cause is the likely cause, in a few words.
	Cause string
	// Advice is what the user can do, from DiagnoseOptions.Advice (the
	// relay's RelayConfig.Advice).
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

// StreamStartFailure is how [Diagnose] and [ServerUnusable] recognise,
// without importing the transport, that the HTTP+SSE stream never offered
// an endpoint (transport.StartError satisfies it). StreamStartFailure
// returns the refusal of the stream's GET when the server refused it with
// a status that asking again will not change (nil otherwise), the refusal
// of the Streamable HTTP POST that made the transport fall back to
// HTTP+SSE (nil when it did not), and the failure otherwise (no endpoint
// in time, the last failed GET).
type StreamStartFailure interface {
	error
	StreamStartFailure() (get, post *frame.StatusError, err error)
}

// RedirectRefusal is how [Diagnose] recognises, without importing the
// transport, a redirect (or an HTTP+SSE endpoint) the transport did not
// follow because it leads away from the server's origin
// (transport.RedirectError satisfies it). RedirectRefusal returns where
// the request was sent and where the server sent it, both fit for
// messages. Its Error names both, and why the transport did not follow.
type RedirectRefusal interface {
	error
	RedirectRefusal() (from, to string)
}

// DiagnoseOptions is what [Diagnose] knows of the relay whose failure it
// explains.
type DiagnoseOptions struct {
	// URL is the server's URL as configured; the diagnosis shows it
	// without credentials or query.
	URL string
	// Transport is the transport asked for (package pipeline's
	// RelayConfig.Transport).
	Transport string
	// Header holds the static headers sent with every request: their
	// values are blanked from the server's text, and an Authorization
	// among them counts as credentials sent.
	Header http.Header
	// SignsIn says the relay signs in itself (OAuth): its requests carry
	// credentials, and no OAuth metadata is looked for.
	SignsIn bool
	// FindOAuthMetadata, when set, looks for the OAuth metadata the server
	// publishes after a 401 or 403 (package pipeline hands in
	// auth.FindOAuthMetadata with the relay's HTTP client), given the
	// refusal's headers and a context bounded by [OAuthMetadataWait]. Nil
	// looks for none.
	FindOAuthMetadata func(ctx context.Context, challenge http.Header) (string, error)
	// Lookup, when set, makes the look for OAuth metadata once for every
	// diagnosis that shares it; nil looks each time.
	Lookup *OAuthMetadataLookup
	// Advice, when set, says what the user can do (Unreachable.Advice).
	Advice func(u *Unreachable) string
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// OAuthMetadataWait bounds the look for a server's OAuth metadata after
// it refused the relay with 401 or 403 (see Unreachable.OAuthMetadata).
const OAuthMetadataWait = 3 * time.Second

// OAuthMetadataLookup is the look for the server's OAuth metadata, made
// once for a relay: the advice of every answer it explains comes from the
// same look. The zero value is ready to use.
type OAuthMetadataLookup struct {
	once sync.Once
	at   string
}

// Diagnose turns a failure to reach the server into an [Unreachable], with
// the advice of o.Advice; it returns nil for failures that say nothing
// about the server (the client cancelled, the relay is closing), and an
// *Unreachable already in err as it is.
func Diagnose(err error, o DiagnoseOptions) *Unreachable {
	if err == nil || errors.Is(err, frame.ErrCancelled) || errors.Is(err, frame.ErrClosed) {
		return nil
	}
	var u *Unreachable
	if errors.As(err, &u) {
		return u
	}
	u = o.diagnose(err)
	if o.Advice != nil {
		u.Advice = o.Advice(u)
	}
	return u
}

// ServerUnusable tells the failures that show the server cannot be used
// (see [AnswerFailures]): the HTTP+SSE stream that could not be opened,
// for every request; a status without the server's own JSON-RPC error,
// or a network failure, for the handshake. It does not tell a failure
// [Diagnose] then finds says nothing about the server.
func ServerUnusable(err error) (unusable, everyRequest bool) {
	var start StreamStartFailure
	var st *frame.StatusError
	var se *frame.SendError
	switch {
	case errors.As(err, &start):
		return true, true
	case errors.As(err, &st):
		return true, false
	case errors.As(err, &se) && networkCause(err) != "":
		return true, false
	}
	return false, false
}

// diagnose finds what happened and its likely cause.
func (o *DiagnoseOptions) diagnose(err error) *Unreachable {
	u := &Unreachable{
		URL:         frame.DisplayURLString(o.URL),
		Transport:   o.Transport,
		Credentials: o.SignsIn || o.Header.Get("Authorization") != "",
		Err:         err,
	}
	var start StreamStartFailure
	var st *frame.StatusError
	switch {
	case isRedirect(err):
		return u // the error says where the server sent us, and why not
	case errors.As(err, &start):
		get, post, startErr := start.StreamStartFailure()
		switch {
		case get != nil:
			st = get
			u.Request = "GET"
			if post != nil {
				u.Request = "POST and GET"
			}
		// The stream never offered an endpoint, for a reason of its own.
		case startErr != nil && !errors.As(startErr, &st):
			u.Cause = networkCause(startErr)
			if u.Cause == "" {
				u.Cause = "no HTTP+SSE stream there (is this the SSE URL?)"
			}
			return u
		case st == nil:
			u.Cause = "no HTTP+SSE stream there (is this the SSE URL?)"
			return u
		default:
			u.Request = "GET"
		}
	case errors.As(err, &st):
		u.Request = "POST"
	default:
		u.Cause = networkCause(err)
		return u
	}
	u.Status = st.Code
	u.Said = o.serverSaid(st)
	if st.Code == http.StatusUnauthorized || st.Code == http.StatusForbidden {
		u.Challenge = o.safeText(st.Header.Get("WWW-Authenticate"))
		if !o.SignsIn {
			u.OAuthMetadata = o.oauthMetadata(st.Header)
		}
	}
	u.Cause = statusCause(u)
	return u
}

// oauthMetadata returns the URL of the OAuth metadata the server
// publishes, "" for none: the look is made once, with the challenge of
// the first refusal h, without credentials.
func (o *DiagnoseOptions) oauthMetadata(h http.Header) string {
	if o.FindOAuthMetadata == nil {
		return ""
	}
	look := o.Lookup
	if look == nil {
		look = &OAuthMetadataLookup{}
	}
	look.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), OAuthMetadataWait)
		defer cancel()
		at, err := o.FindOAuthMetadata(ctx, h)
		if err != nil {
			if o.Logger != nil {
				o.Logger.Debug("could not tell whether the server publishes OAuth metadata", "err", err)
			}
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
	var redirect RedirectRefusal
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

// oneLineText makes a server-supplied string safe to print on one line of
// a terminal.
func oneLineText(s string) string { return frame.PeerText(s, 200) }

// serverSaid returns the server's own explanation of a refusal, made safe
// to print: its JSON-RPC error's message, an OAuth-style error's
// description, or the first line of text of its body.
func (o *DiagnoseOptions) serverSaid(st *frame.StatusError) string {
	body := st.Body
	if m, err := frame.Parse(body); err == nil {
		if msg := m.Get("error.message").String(); msg != "" {
			return o.safeText(msg)
		}
		for _, key := range []string{"error_description", "message", "error"} {
			if r := m.Get(key); r.Type.String() == "String" && r.String() != "" {
				return o.safeText(r.String())
			}
		}
		return ""
	}
	text := string(body)
	if i := strings.Index(strings.ToLower(text), "<title>"); i >= 0 {
		rest := text[i+len("<title>"):]
		if j := strings.Index(strings.ToLower(rest), "</title>"); j >= 0 {
			return o.safeText(rest[:j])
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
		return o.safeText(line)
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
func (o *DiagnoseOptions) safeText(s string) string {
	for _, vs := range o.Header {
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
