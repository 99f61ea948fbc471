package server

// Resource-server mode (issue 13 item 4): serve trusts the access tokens of
// an external authorization server (an IdP: Keycloak, Auth0, Entra, Okta,
// Dex, …) named by its issuer identifier. NewIssuerVerifier discovers the
// issuer's metadata once, at start; from then on a JWT access token is
// checked locally against the issuer's published keys (JWKS), and any other
// token is handed to the issuer's RFC 7662 introspection endpoint.
//
// JOSE parsing and signature checks are go-jose's, never ours: this file
// and its siblings decide only which algorithms, keys and claims to accept.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcp-stdio/mcp-stdio/auth"
)

// Defaults of [IssuerConfig].
const (
	// DefaultIssuerTimeout bounds each request to the issuer: a metadata,
	// JWKS or introspection fetch.
	DefaultIssuerTimeout = 10 * time.Second
	// DefaultJWKSRefreshInterval is the least time between two JWKS
	// fetches that tokens naming an unknown key can cause: a rotated key
	// is picked up at once, but a stream of made-up key ids costs the
	// issuer at most one request per interval.
	DefaultJWKSRefreshInterval = 30 * time.Second
	// DefaultIntrospectionCacheTTL is how long an active introspection
	// answer is reused (never beyond the token's exp): a revoked opaque
	// token is refused at most this long after its revocation.
	DefaultIntrospectionCacheTTL = time.Minute
	// DefaultIntrospectionNegativeTTL is how long a token the issuer
	// found not active (or not valid here) is refused without asking
	// again: a client retrying a dead token costs the issuer one request
	// per interval.
	DefaultIntrospectionNegativeTTL = 10 * time.Second
	// DefaultIntrospectionRate bounds the introspection requests sent to
	// each issuer: this many a second, as many at once. Tokens checked
	// already are answered from the caches and do not count; a check
	// beyond the rate cannot decide (503 with Retry-After), so a spray of
	// made-up tokens costs the issuer at most this many requests a
	// second, and good tokens are told to retry, not to sign in again.
	DefaultIntrospectionRate = 50
	// ClockSkew is the tolerance applied to exp, nbf and iat.
	ClockSkew = 60 * time.Second
)

// Limits on what the issuer or a caller can make us hold.
const (
	maxMetadataBytes      = 256 << 10 // a metadata document
	maxJWKSBytes          = 256 << 10 // a key set
	maxJWKSKeys           = 64        // keys kept from one key set
	maxIntrospectionBytes = 64 << 10  // an introspection answer
	maxTokenBytes         = 16 << 10  // a presented access token
	maxIntrospectionCache = 4096      // cached introspection answers
	maxIntrospectInFlight = 16        // introspection requests at once
	maxIntrospectionRate  = 1_000_000 // a second: the most IntrospectionRate means
	jwksMaxAge            = time.Hour // a key set older than this is fetched again
)

// IssuerConfig configures [NewIssuerVerifier] for one issuer.
type IssuerConfig struct {
	// Issuer is the authorization server's issuer identifier, exactly as
	// its metadata and its tokens' iss spell it (no normalisation: a
	// trailing slash matters). It must be https, or plain http on a
	// loopback host (localhost, 127.0.0.0/8, ::1), for tests and for an
	// IdP on the same machine. Its metadata is looked for at the RFC 8414
	// and OpenID Connect well-known URLs, path-aware, in the order of the
	// MCP authorization spec; the document must name the same issuer.
	Issuer string
	// Resource is this server's canonical URI (--public-url + the MCP
	// path), the RFC 8707 resource clients ask tokens for: every token's
	// audience must contain it (compared after canonicalisation, a
	// trailing slash ignored). Required: audience validation is never off.
	Resource string
	// IntrospectionClientID and IntrospectionSecret are this server's
	// client credentials at the issuer's introspection endpoint (RFC 7662,
	// HTTP Basic, or the form when the issuer supports only that). Without
	// a client ID, tokens that are not JWTs are refused.
	IntrospectionClientID string
	IntrospectionSecret   string
	// HTTPClient sends the requests to the issuer; nil is a plain client.
	// Redirects are never followed, and each request is bounded by
	// DefaultIssuerTimeout either way.
	HTTPClient *http.Client
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// JWKSRefreshInterval overrides DefaultJWKSRefreshInterval when > 0.
	JWKSRefreshInterval time.Duration
	// IntrospectionCacheTTL overrides DefaultIntrospectionCacheTTL when > 0.
	IntrospectionCacheTTL time.Duration
	// IntrospectionRate overrides DefaultIntrospectionRate when > 0.
	IntrospectionRate int
	// Logger receives debug lines (key set fetches), and warnings about
	// the issuer's faults and the rate limit, at most one a minute of
	// each kind; nil discards them. Tokens are never logged.
	Logger *slog.Logger
}

// issuerMetadata is what we read of an RFC 8414 / OpenID Connect
// discovery document.
type issuerMetadata struct {
	Issuer                   string   `json:"issuer"`
	JWKSURI                  string   `json:"jwks_uri"`
	IntrospectionEndpoint    string   `json:"introspection_endpoint"`
	IntrospectionAuthMethods []string `json:"introspection_endpoint_auth_methods_supported"`
}

// issuerVerifier is the Verifier NewIssuerVerifier returns.
type issuerVerifier struct {
	issuer    string
	resource  string // canonical, without a trailing slash
	client    *http.Client
	now       func() time.Time
	log       *slog.Logger
	keys      *keyring      // nil: the issuer publishes no jwks_uri
	intro     *introspector // nil: no introspection endpoint or no client ID
	jwtIntros bool          // no keys: JWTs go to introspection too
}

// NewIssuerVerifier discovers cfg.Issuer's metadata, fetches its key set
// when it publishes one, and returns a [Verifier] of the access tokens it
// issues for cfg.Resource. ctx bounds the discovery only.
//
// Verify accepts a JWT access token (JWS compact serialization) only when:
// its algorithm is RS256, PS256, ES256 or EdDSA (never none, never an HMAC:
// the issuer's public key must not double as a shared secret); its typ, if
// any, is JWT or at+jwt; its signature verifies with a key of the issuer's
// key set, looked up by kid (an unknown kid fetches the set again, at most
// once per JWKSRefreshInterval); iss equals Issuer exactly; aud contains
// Resource; exp is present and not past; nbf and iat are not in the future
// (all with ClockSkew); sub is present. An ID token is refused by the
// audience check: its aud is the client's id, not this resource. Scopes
// come from scope (space-separated) or scp (an array, or a string).
//
// Any other token (opaque, or a JWT when the issuer publishes no keys)
// is introspected (RFC 7662) with IntrospectionClientID and
// IntrospectionSecret, and accepted only when active (the JSON boolean
// true: anything else is refused, and logged as the issuer's fault) with
// the same checks: iss (when given) equal, aud containing Resource, exp
// present and not past, sub present. Active answers are cached, keyed by a
// hash of the token, until the sooner of the token's exp and
// IntrospectionCacheTTL; refusals for DefaultIntrospectionNegativeTTL.
// Concurrent checks of one token share one request, and requests beyond
// IntrospectionRate are not sent: the check cannot decide, wrapping
// [ErrIntrospectionRateLimited].
//
// A refusal wraps [ErrInvalidToken] with a reason that never contains the
// token; any other error means the issuer could not be asked (the gate
// answers 503 rather than 401).
func NewIssuerVerifier(ctx context.Context, cfg IssuerConfig) (Verifier, error) {
	iu, err := secureURL("issuer", cfg.Issuer)
	if err != nil {
		return nil, err
	}
	if iu.RawQuery != "" || iu.Fragment != "" {
		return nil, fmt.Errorf("issuer %s: an issuer identifier has no query or fragment", cfg.Issuer)
	}
	if cfg.Resource == "" {
		return nil, errors.New("issuer " + cfg.Issuer + ": no resource to validate audiences against (set --public-url)")
	}
	resource, err := auth.CanonicalResource(cfg.Resource)
	if err != nil {
		return nil, fmt.Errorf("resource: %w", err)
	}
	v := &issuerVerifier{
		issuer:   cfg.Issuer,
		resource: strings.TrimSuffix(resource, "/"),
		client:   noRedirects(cfg.HTTPClient),
		now:      cfg.Now,
		log:      cfg.Logger,
	}
	if v.now == nil {
		v.now = time.Now
	}
	if v.log == nil {
		v.log = slog.New(slog.DiscardHandler)
	}
	md, err := v.discover(ctx, iu)
	if err != nil {
		return nil, err
	}
	if md.JWKSURI == "" && md.IntrospectionEndpoint == "" {
		return nil, fmt.Errorf("issuer %s publishes neither jwks_uri nor introspection_endpoint: its tokens cannot be checked", cfg.Issuer)
	}
	if md.JWKSURI != "" {
		if _, err := secureURL("jwks_uri", md.JWKSURI); err != nil {
			return nil, fmt.Errorf("issuer %s: %w", cfg.Issuer, err)
		}
		interval := cfg.JWKSRefreshInterval
		if interval <= 0 {
			interval = DefaultJWKSRefreshInterval
		}
		v.keys = &keyring{v: v, uri: md.JWKSURI, interval: interval}
		if err := v.keys.load(ctx); err != nil {
			return nil, err
		}
	}
	if md.IntrospectionEndpoint != "" && cfg.IntrospectionClientID != "" {
		if _, err := secureURL("introspection_endpoint", md.IntrospectionEndpoint); err != nil {
			return nil, fmt.Errorf("issuer %s: %w", cfg.Issuer, err)
		}
		ttl := cfg.IntrospectionCacheTTL
		if ttl <= 0 {
			ttl = DefaultIntrospectionCacheTTL
		}
		rate := cfg.IntrospectionRate
		if rate <= 0 {
			rate = DefaultIntrospectionRate
		}
		rate = min(rate, maxIntrospectionRate)
		v.intro = &introspector{
			v:        v,
			endpoint: md.IntrospectionEndpoint,
			id:       cfg.IntrospectionClientID,
			secret:   cfg.IntrospectionSecret,
			post:     postOnly(md.IntrospectionAuthMethods),
			ttl:      ttl,
			negTTL:   DefaultIntrospectionNegativeTTL,
			rate:     rate,
			every:    time.Second / time.Duration(rate),
			faults:   newQuietLog(v.log),
			cache:    make(map[[sha256.Size]byte]cached),
			neg:      make(map[[sha256.Size]byte]time.Time),
			flights:  make(map[[sha256.Size]byte]*flight),
			slots:    make(chan struct{}, maxIntrospectInFlight),
		}
	}
	if v.keys == nil && v.intro == nil {
		return nil, fmt.Errorf("issuer %s publishes no jwks_uri, only introspection: set --oauth-introspection-client-id (and its secret) to check its tokens", cfg.Issuer)
	}
	v.jwtIntros = v.keys == nil
	return v, nil
}

// Verify implements [Verifier].
func (v *issuerVerifier) Verify(ctx context.Context, token string) (Principal, error) {
	switch {
	case token == "":
		return Principal{}, invalid("no token")
	case len(token) > maxTokenBytes:
		return Principal{}, invalid("token longer than %d bytes", maxTokenBytes)
	}
	if strings.Count(token, ".") == 2 && !v.jwtIntros {
		return v.verifyJWT(ctx, token)
	}
	if v.intro == nil {
		return Principal{}, invalid("not a JWT, and no introspection is configured for issuer %s", v.issuer)
	}
	return v.intro.verify(ctx, token)
}

// invalid returns ErrInvalidToken wrapped with a reason.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidToken, fmt.Sprintf(format, args...))
}

// tokenFacts are the claims of a token, from a JWT or an introspection
// answer, that decide whether it is valid here.
type tokenFacts struct {
	iss           string
	issOptional   bool // introspection: the answer comes from the issuer itself
	aud           []string
	exp, nbf, iat *time.Time
	sub, clientID string
	scopes        []string
}

// check applies the claim rules of [NewIssuerVerifier] to f.
func (v *issuerVerifier) check(f tokenFacts) (Principal, error) {
	now := v.now()
	switch {
	case f.iss == "" && !f.issOptional:
		return Principal{}, invalid("no iss")
	case f.iss != "" && f.iss != v.issuer:
		return Principal{}, invalid("issued by %q, not %q", f.iss, v.issuer)
	case !v.audienceOK(f.aud):
		return Principal{}, invalid("audience %q does not name this resource %s", f.aud, v.resource)
	case f.exp == nil:
		return Principal{}, invalid("no exp")
	case now.After(f.exp.Add(ClockSkew)):
		return Principal{}, invalid("expired at %s", f.exp.UTC().Format(time.RFC3339))
	case f.nbf != nil && f.nbf.After(now.Add(ClockSkew)):
		return Principal{}, invalid("not valid before %s", f.nbf.UTC().Format(time.RFC3339))
	case f.iat != nil && f.iat.After(now.Add(ClockSkew)):
		return Principal{}, invalid("issued in the future, at %s", f.iat.UTC().Format(time.RFC3339))
	case f.sub == "":
		return Principal{}, invalid("no sub")
	}
	return Principal{
		Issuer:   v.issuer,
		Subject:  f.sub,
		ClientID: f.clientID,
		Scopes:   f.scopes,
		Expiry:   *f.exp,
	}, nil
}

// audienceOK reports whether one of aud names this resource: equal after
// canonicalisation, a trailing slash ignored.
func (v *issuerVerifier) audienceOK(aud []string) bool {
	for _, a := range aud {
		if a == v.resource {
			return true
		}
		c, err := auth.CanonicalResource(a)
		if err == nil && strings.TrimSuffix(c, "/") == v.resource {
			return true
		}
	}
	return false
}

// discover fetches the issuer's metadata from the well-known URLs in order.
// A 404 (or another status that is not 200) moves on to the next URL; a
// document naming another issuer is an error, never a reason to go on.
func (v *issuerVerifier) discover(ctx context.Context, iu *url.URL) (*issuerMetadata, error) {
	var tried []string
	for _, u := range metadataURLs(iu) {
		body, status, err := v.get(ctx, u, maxMetadataBytes)
		if err != nil {
			return nil, fmt.Errorf("issuer %s: discovery: %w", v.issuer, err)
		}
		if status != http.StatusOK {
			tried = append(tried, fmt.Sprintf("%s (%d)", u, status))
			continue
		}
		var md issuerMetadata
		if err := json.Unmarshal(body, &md); err != nil {
			tried = append(tried, u+" (not JSON)")
			continue
		}
		if md.Issuer != v.issuer {
			return nil, fmt.Errorf("issuer %s: the metadata at %s names issuer %q: set --oauth-issuer to exactly the issuer the server names", v.issuer, u, md.Issuer)
		}
		return &md, nil
	}
	return nil, fmt.Errorf("issuer %s: no authorization server metadata found (tried %s): check --oauth-issuer", v.issuer, strings.Join(tried, ", "))
}

// metadataURLs returns where the metadata of issuer u is looked for, in the
// order of the MCP authorization spec: RFC 8414 path insertion, then
// OpenID Connect path insertion, then OpenID Connect path appending.
//
//	https://as/t1 → https://as/.well-known/oauth-authorization-server/t1,
//	                https://as/.well-known/openid-configuration/t1,
//	                https://as/t1/.well-known/openid-configuration
func metadataURLs(u *url.URL) []string {
	o := u.Scheme + "://" + u.Host
	path := strings.TrimRight(u.EscapedPath(), "/")
	const as, oidc = "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"
	if path == "" {
		return []string{o + as, o + oidc}
	}
	return []string{o + as + path, o + oidc + path, o + path + oidc}
}

// get fetches u and returns at most limit bytes of its body (more is an
// error) with its status. An error means no answer was had.
func (v *issuerVerifier) get(ctx context.Context, u string, limit int64) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/json")
	return v.do(req, limit)
}

// do sends req bounded by DefaultIssuerTimeout and reads at most limit
// bytes of the answer.
func (v *issuerVerifier) do(req *http.Request, limit int64) ([]byte, int, error) {
	ctx, cancel := context.WithTimeout(req.Context(), DefaultIssuerTimeout)
	defer cancel()
	resp, err := v.client.Do(req.WithContext(ctx))
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, 0, fmt.Errorf("reading %s: %w", req.URL.Redacted(), err)
	}
	if int64(len(body)) > limit {
		return nil, 0, fmt.Errorf("%s: answer larger than %d bytes", req.URL.Redacted(), limit)
	}
	return body, resp.StatusCode, nil
}

// noRedirects returns a copy of c (nil: a plain client) that follows no
// redirect: an issuer's endpoints are where its metadata says.
func noRedirects(c *http.Client) *http.Client {
	var cc http.Client
	if c != nil {
		cc = *c
	}
	cc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cc
}

// secureURL parses raw, an absolute URL that must be https or plain http
// on a loopback host; what names it in errors.
func secureURL(what, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: invalid URL: %w", what, errors.Unwrap(err))
	}
	if u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("%s %q: an absolute URL without userinfo is needed", what, raw)
	}
	switch u.Scheme {
	case "https":
		return u, nil
	case "http":
		if auth.IsLoopbackHost(u.Hostname()) {
			return u, nil
		}
		return nil, fmt.Errorf("%s %s is not https (plain http is allowed only on loopback)", what, raw)
	}
	return nil, fmt.Errorf("%s %q: scheme must be https", what, raw)
}

// tokenHash is the key under which a token's introspection is cached, and
// the prefix of it is how a token may be named in a log line.
func tokenHash(token string) [sha256.Size]byte { return sha256.Sum256([]byte(token)) }

// tokenRef names a token in a log line by a hash prefix.
func tokenRef(token string) string {
	h := tokenHash(token)
	return hex.EncodeToString(h[:4])
}
