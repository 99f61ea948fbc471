package cli

import (
	"errors"
	"net/http"
	"strings"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/pipeline"
	"github.com/mcp-stdio/mcp-stdio/transport"
)

// advice says what the user can do about a server the relay cannot use,
// in the terms of this command line: it ends the message --check prints
// and the relay answers initialize with (see pipeline.Unreachable).
func (f *relayFlags) advice(u *pipeline.Unreachable) string {
	if remedy := f.remedy(u.Err); remedy != "" {
		return remedy
	}
	switch code := u.Status; {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return f.authAdvice(u)
	case u.Request == "POST and GET" || code == http.StatusNotFound:
		return "check the URL's path (servers commonly serve /mcp, and /sse for HTTP+SSE)"
	case u.Request == "GET" && u.Transport == pipeline.TransportSSE && (code == http.StatusBadRequest || code == http.StatusMethodNotAllowed):
		return "if this is a Streamable HTTP endpoint, leave out --transport sse"
	case u.Request == "POST" && code == http.StatusMethodNotAllowed && u.Transport == pipeline.TransportStreamable:
		return "if this is an HTTP+SSE stream, use --transport sse (or auto)"
	case code >= 500:
		return "the server's own error: try again later, or tell its operator"
	case code != 0:
		return ""
	case u.Request == "" && strings.Contains(u.Cause, "HTTP+SSE"):
		return "check the URL (for HTTP+SSE it is the stream's, often /sse); a slow server may need a longer --timeout-connect"
	case strings.Contains(u.Cause, "nothing listens"), strings.Contains(u.Cause, "does not resolve"):
		return "check the host and port, and that the server is running"
	}
	return ""
}

// authAdvice is the advice for a 401 or 403: which credentials to give,
// after what the server's challenge asks for and what it publishes. A
// sign-in with --oauth is advised only where the server publishes the
// metadata a sign-in starts from (pipeline.Unreachable.OAuthMetadata);
// without it, --oauth would guess endpoints the server most likely does
// not have.
func (f *relayFlags) authAdvice(u *pipeline.Unreachable) string {
	challenge := strings.ToLower(u.Challenge)
	oauth := u.OAuthMetadata != ""
	switch {
	case strings.Contains(challenge, "insufficient_scope"):
		if f.oauth {
			return "the token lacks a scope the server asks for: pass it with --oauth-scope"
		}
		if oauth {
			return "the token lacks a scope the server asks for: use a token that has it, or --oauth to sign in"
		}
		return "the token lacks a scope the server asks for: use a token that has it"
	case f.oauth:
		return "the signed-in token was refused: check --oauth-scope and --client-id"
	case u.Credentials && oauth:
		return "check the token (MCP_BEARER_TOKEN, --bearer-token or -H 'Authorization: …'), or sign in with --oauth (the server publishes OAuth metadata)"
	case u.Credentials:
		return "check the token (MCP_BEARER_TOKEN, --bearer-token or -H 'Authorization: …')"
	case strings.HasPrefix(challenge, "basic"):
		return "the server asks for Basic credentials: pass -H 'Authorization: Basic …'"
	case oauth:
		return "the server publishes OAuth metadata: sign in with --oauth, or set MCP_BEARER_TOKEN (or --bearer-token) to a token it takes"
	case strings.HasPrefix(challenge, "bearer"):
		return "the server asks for a bearer token: set MCP_BEARER_TOKEN (or pass --bearer-token) to the token it takes"
	}
	if u.Status == http.StatusForbidden {
		// Without a challenge a 403 may be about anything: a policy, the
		// client's address, a Host the server does not serve.
		return "if the server wants credentials, set MCP_BEARER_TOKEN (or --bearer-token, or -H 'Authorization: …')"
	}
	return "set MCP_BEARER_TOKEN (or --bearer-token, or -H 'Authorization: …') to the credentials the server takes"
}

// remedy says what the user can do about a request that failed for a
// setting of the relay's (see pipeline.RelayConfig.Remedy), or "".
func (f *relayFlags) remedy(err error) string {
	var redirect *transport.RedirectError
	switch {
	case errors.As(err, &redirect) && redirect.Downgrade:
		return "no flag follows a redirect from https to plain http: tell the server's operator, or, if plain http is meant, give the relay the http:// URL yourself"
	case errors.As(err, &redirect):
		return "if that server is to be trusted, pass --follow-redirects (it is then sent no Authorization, Cookie, -H header or OAuth token)"
	case certificateAdvice(err, len(f.caFiles) > 0) != "":
		return certificateAdvice(err, len(f.caFiles) > 0)
	case errors.Is(err, frame.ErrOverBudget):
		return "if the server's messages are meant to be this large, or this many at once, raise --max-buffered (now " + f.maxBuffered.String() + ")"
	}
	return ""
}
