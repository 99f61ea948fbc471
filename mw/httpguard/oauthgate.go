package httpguard

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// TokenVerifier checks an OAuth access token presented to serve; package
// pipeline adapts the verifiers of package auth/server to it. VerifyToken
// returns who the token names (a non-empty principal: issuer and subject)
// and the scopes it grants; an error matching [ErrInvalidToken] when the
// token is not valid here (unknown, expired, revoked, for another
// resource), and any other error when it cannot decide (the identity
// provider unreachable). Errors never hold the token.
type TokenVerifier interface {
	VerifyToken(ctx context.Context, token string) (principal string, scopes []string, err error)
}

// ErrInvalidToken is what a [TokenVerifier]'s error matches when it
// refuses a token.
var ErrInvalidToken = errors.New("invalid token")

// Challenger builds the WWW-Authenticate challenges of [RequireOAuth]'s
// refusals; auth/server's ProtectedResource is one. Challenge returns the
// header's value for an error code of RFC 6750 — "" (no token),
// "invalid_token", "invalid_request" or "insufficient_scope" — and the
// scopes the resource requires.
type Challenger interface {
	Challenge(code string, scopes []string) string
}

// OAuthOptions configures [RequireOAuth].
type OAuthOptions struct {
	// Verifier checks the tokens; required.
	Verifier TokenVerifier
	// Challenges builds the refusals' WWW-Authenticate; required.
	Challenges Challenger
	// RequiredScopes are the scopes every token must grant (403
	// insufficient_scope without them); they are named in every
	// challenge.
	RequiredScopes []string
	// ChallengeScopes are the scopes a 401 or 400 challenge names, for a
	// client to ask for when it signs in; nil means RequiredScopes.
	ChallengeScopes []string
	// Logger receives diagnostics (the principal at debug, never a
	// token); nil discards them.
	Logger *slog.Logger
}

// OAuthRetryAfter is the Retry-After, in seconds, of [RequireOAuth]'s 503.
const OAuthRetryAfter = "5"

// RequireOAuth returns the guard of serve's OAuth 2.1 protected resource.
// It takes the access token from the one Authorization header of the
// request ("Bearer" in any case, RFC 6750 §2.1) — never from the query —
// and asks o.Verifier about it, without reading the body:
//
//   - a request with more than one Authorization header, or an
//     access_token query parameter, gets 400 (error="invalid_request");
//   - a request without a bearer token gets 401 and the challenge naming
//     the resource's metadata (and the required scopes);
//   - a malformed token or one the verifier refuses gets 401 with
//     error="invalid_token";
//   - a token without every required scope gets 403 with
//     error="insufficient_scope";
//   - when the verifier cannot decide, 503 with Retry-After.
//
// Refusals carry a JSON-RPC error body (id null, as [RequireBearer]'s) and
// close the connection. A request that passes reaches next with its
// principal in the context ([mw.WithPrincipal]: it keys the 2026-07-28 pool
// and owns the sessions it opens) and without its Authorization header:
// the token goes no further. It sits where [RequireBearer] would (see the
// package documentation), behind CORS, whose preflights carry no credentials, and before everything that
// tells the eras apart, so it holds for both, and for POST, GET and DELETE
// alike.
func RequireOAuth(o OAuthOptions) Guard {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var outages frame.QuietLog // a verifier that cannot decide, logged once a minute
	outages.Every = time.Minute
	required := slices.Clone(o.RequiredScopes)
	asked := slices.Clone(o.ChallengeScopes)
	if asked == nil {
		asked = required
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			refuse := func(status int, code, msg string) {
				scopes := asked
				if code == "insufficient_scope" {
					scopes = required
				}
				h := w.Header()
				h.Set("WWW-Authenticate", o.Challenges.Challenge(code, scopes))
				h.Set("Connection", "close")
				writeRefusal(w, status, frame.CodeGateway, msg)
			}
			values := r.Header.Values("Authorization")
			if len(values) > 1 || r.URL.Query().Has("access_token") {
				refuse(http.StatusBadRequest, "invalid_request", "Bad Request: send the access token in one Authorization header, never in the URL")
				return
			}
			token, presented := bearerToken(values)
			if !presented {
				refuse(http.StatusUnauthorized, "", "Unauthorized: an OAuth access token is required")
				return
			}
			if token == "" {
				log.Debug("refused a malformed bearer token")
				refuse(http.StatusUnauthorized, "invalid_token", "Unauthorized: the access token is not valid here")
				return
			}
			principal, scopes, err := o.Verifier.VerifyToken(r.Context(), token)
			switch {
			case err == nil && principal == "":
				log.Error("the token verifier named no principal; refusing the token")
				refuse(http.StatusUnauthorized, "invalid_token", "Unauthorized: the access token is not valid here")
				return
			case errors.Is(err, ErrInvalidToken):
				log.Debug("refused a bearer token", "reason", err)
				refuse(http.StatusUnauthorized, "invalid_token", "Unauthorized: the access token is not valid here")
				return
			case err != nil:
				if ok, unlogged := outages.Allow(time.Now(), ""); ok {
					log.Warn("cannot verify bearer tokens now; their requests get 503", "err", err, "refused_since_last_line", unlogged+1)
				}
				h := w.Header()
				h.Set("Retry-After", OAuthRetryAfter)
				h.Set("Connection", "close")
				writeRefusal(w, http.StatusServiceUnavailable, frame.CodeGateway, "Service Unavailable: the access token cannot be verified now; try again later")
				return
			}
			if missing := missingScopes(required, scopes); len(missing) > 0 {
				log.Debug("refused a token without the required scopes", "principal", principal, "missing", strings.Join(missing, " "))
				refuse(http.StatusForbidden, "insufficient_scope", "Forbidden: the access token lacks the scope "+strings.Join(missing, " "))
				return
			}
			log.Debug("authorized", "principal", principal, "method", r.Method)
			r = r.Clone(mw.WithPrincipal(r.Context(), principal))
			r.Header.Del("Authorization")
			next.ServeHTTP(w, r)
		})
	}
}

// bearerToken returns the token of the Authorization header values (at
// most one) and whether they present a bearer token at all: "Bearer"
// (any case), one or more spaces, the token. The token is "" when it is
// not the b64token of RFC 6750 §2.1.
func bearerToken(values []string) (token string, presented bool) {
	if len(values) != 1 {
		return "", false
	}
	v := values[0]
	const scheme = "bearer"
	if len(v) < len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return "", false
	}
	rest := v[len(scheme):]
	if rest != "" && rest[0] != ' ' {
		return "", false // another scheme, "Bearerish"
	}
	token = strings.TrimLeft(rest, " ")
	if !isB64Token(token) {
		return "", true
	}
	return token, true
}

// isB64Token reports whether s is a b64token: 1*( ALPHA / DIGIT / "-" /
// "." / "_" / "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/", c) >= 0) {
			return false
		}
	}
	return true
}

// missingScopes returns the scopes of required that granted lacks.
func missingScopes(required, granted []string) []string {
	var missing []string
	for _, s := range required {
		if !slices.Contains(granted, s) {
			missing = append(missing, s)
		}
	}
	return missing
}
