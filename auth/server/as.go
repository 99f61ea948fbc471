// The embedded authorization server of `serve --enable-oauth`: an OAuth
// 2.1 authorization server for one machine, in front of one protected
// resource (serve's MCP endpoint).
//
// Its endpoints hang off the issuer, which is an origin:
//
//	/.well-known/oauth-authorization-server  RFC 8414 metadata (as.go)
//	/authorize                               code + PKCE S256, consent page (as_authorize.go, as_consent.go)
//	/token                                   authorization_code, refresh_token (as_token.go)
//	/register                                dynamic client registration, RFC 7591 (as_register.go)
//	/revoke                                  revocation, RFC 7009 (as_revoke.go)
//
// Clients are public (token_endpoint_auth_method "none"): what proves a
// client is its exact redirect URI and its PKCE verifier. The person
// signing in proves who they are on the consent page (as_signin.go): with
// the one-time code serve prints on stderr, or with a user name and
// password from a bcrypt file. Access tokens are opaque random strings,
// stored only as their SHA-256; the server is the [Verifier] of its own
// tokens. Refresh tokens rotate on every use, and the use of a rotated one
// revokes the whole grant. What lasts — clients, grants, hashed tokens — is
// kept in memory and, with a store path, in a 0600 file written atomically
// (as_store.go); pending authorizations and codes live in memory only.
//
// One read-write mutex guards the state. Nothing slow runs under it: the
// store is written outside it (as_store.go), from a snapshot taken under
// the read lock, which token checks share; a client-ID-URL fetch (part C)
// runs outside it (row 186).
//
// What a stranger can make the server hold or do is bounded per source
// (as_source.go: the peer's address, or the client's behind a trusted
// proxy) and in total, and a limit reached refuses the newcomer with
// when to retry, never someone else's sign-in in progress: registrations
// (a rate per source; a full client table makes room from the oldest
// client not in use), consent pages waiting (per source, per client) and
// wrong sign-in answers (a rate per source, a budget per one-time code).

package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of [AuthorizationServerConfig].
const (
	// DefaultAccessTokenLifetime is how long an access token lasts.
	DefaultAccessTokenLifetime = time.Hour
	// DefaultRefreshTokenLifetime is how long a grant lasts unused: each
	// refresh starts it again.
	DefaultRefreshTokenLifetime = 30 * 24 * time.Hour
	// DefaultMaxClients bounds the registered clients. When the table is
	// full, a registration takes the place of the oldest client not in
	// use: none of its sign-ins in progress (a consent page or a code not
	// yet exchanged), no grant, registered over clientGrace ago. When
	// every client is in use or that new, it is refused (503, with
	// Retry-After saying when one may make room).
	DefaultMaxClients = 1000
	// DefaultMaxGrants bounds the grants (sign-ins) alive at once.
	DefaultMaxGrants = 1000
	// DefaultScope is the one scope advertised when none is configured.
	DefaultScope = "mcp"
)

// Fixed bounds of the embedded authorization server.
const (
	codeLifetime     = time.Minute      // an authorization code
	pendingLifetime  = 10 * time.Minute // a consent page waiting for its person
	maxUsedCodes     = 1024             // spent codes remembered until they expire (reuse detection)
	maxRetired       = 8                // rotated refresh tokens remembered per grant
	maxTokensByGrant = 16               // live access tokens per grant
	maxFormBody      = 16 << 10         // /token, /revoke and the consent form
	maxRegisterBody  = 16 << 10         // /register
)

// Limits on what strangers can make the server hold, per source and in
// all. Each refusal says when to retry.
const (
	// registerBurst registrations are taken at once from one source, and
	// one more each registerEvery; beyond, 429 with Retry-After. A client
	// registers once, and again only when it lost its registration.
	registerBurst = 20
	registerEvery = time.Minute
	// clientGrace is how long a new client is kept out of the eviction
	// of a full client table although not in use: it is about to open
	// its consent page.
	clientGrace = time.Minute
	// maxPendingPerSource consent pages may wait at once for one source,
	// and maxPendingPerClient for one client; beyond, the authorization
	// request is refused (temporarily_unavailable, saying when the oldest
	// page expires). Nobody else's pages are touched.
	maxPendingPerSource = 16
	maxPendingPerClient = 64
	// maxPending bounds the consent pages waiting in all (their memory):
	// at it, a new page takes the place of the oldest page of the source
	// holding the most, so that it is a flooder's page that goes.
	maxPending = 4096
	// maxSources bounds the sources each per-source rate remembers.
	maxSources = 4096
	// storeFlushInterval is the least time between two writes of the
	// store that registrations cause: a flood of them is written in
	// batches, at most once per interval. A sign-in, a refresh and a
	// revocation are written before they are answered (with whatever
	// else changed: concurrent ones share a write).
	storeFlushInterval = time.Second
)

// AuthorizationServerConfig configures [NewAuthorizationServer].
type AuthorizationServerConfig struct {
	// Issuer is the server's issuer identifier: an origin,
	// http(s)://host[:port], without path, query or fragment. The
	// endpoints are under it. Required.
	Issuer string
	// Resource is the protected resource the tokens are for (RFC 8707):
	// serve's MCP endpoint URL. Every authorization request must name it,
	// and every token is bound to it. Required.
	Resource string
	// Scopes are the scopes advertised and granted; nil means
	// [DefaultScope]. A request naming none gets them all.
	Scopes []string
	// Passwords, when not nil, signs people in by user name and password
	// (see [ParsePasswordFile]); nil signs the owner in with one-time codes
	// given to SignInCode.
	Passwords *Passwords
	// SignInCode receives each one-time sign-in code: one at start, and a
	// new one each time one is used. It is required without Passwords (the
	// serve command prints the code on stderr), and called with the
	// server's lock not held.
	SignInCode func(code string)
	// AllowRedirectURIs are redirect URIs clients may register besides
	// loopback ones, compared exactly.
	AllowRedirectURIs []string
	// URLClients, when set, resolves a client_id that is a URL (a client
	// ID metadata document); nil refuses such client_ids. It is called
	// without the server's lock held.
	URLClients URLClients
	// StorePath, when set, is the file the state persists in (0600,
	// written atomically, loaded at start); "" keeps it in memory only.
	StorePath string
	// AccessTokenLifetime and RefreshTokenLifetime: 0 means the defaults.
	AccessTokenLifetime  time.Duration
	RefreshTokenLifetime time.Duration
	// MaxClients and MaxGrants bound the state; 0 means the defaults.
	MaxClients int
	MaxGrants  int
	// TrustedProxies are the addresses of proxies in front of the server
	// (a tunnel, a reverse proxy) whose X-Forwarded-For names the client:
	// the per-source limits count the address they forwarded for. Without
	// them, every request is counted by its peer address, and behind a
	// proxy every client shares the proxy's.
	TrustedProxies []netip.Prefix
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// After is the timer of the store's batched writes, on the clock of
	// Now; nil means time.After.
	After func(time.Duration) <-chan time.Time
	// Logger receives diagnostics (never a token, code or password); nil
	// discards them.
	Logger *slog.Logger
}

// URLClients resolves a client_id that is a URL (a Client ID Metadata
// Document, allowlisted by the caller) into the client's name and redirect
// URIs. An error refuses the authorization request; its text is shown to
// the person on the error page, so it must not carry secrets.
type URLClients interface {
	// Allowed reports whether clientID is a URL this server may fetch.
	Allowed(clientID string) bool
	// Client returns the client's display name and its redirect URIs.
	Client(ctx context.Context, clientID string) (name string, redirectURIs []string, err error)
}

// AuthorizationServer is the embedded OAuth 2.1 authorization server. It
// is an http.Handler of its endpoints ([AuthorizationServer.Handler]) and
// the [Verifier] of the access tokens it issues. Safe for concurrent use.
type AuthorizationServer struct {
	cfg      AuthorizationServerConfig
	issuer   string
	resource string // canonical form
	log      *slog.Logger
	now      func() time.Time
	mux      *http.ServeMux
	redirect []string

	store    *storeWriter  // nil without a store path
	proxied  atomic.Bool   // X-Forwarded-For from an untrusted peer was logged
	checks   chan struct{} // password checks running at once
	refusals *quietLog     // limits reached, logged once a minute per kind

	mu        sync.RWMutex
	gen       uint64                  // counts changes to what persists
	pending   map[string]*pendingAuth // by request id
	bySource  map[string]int          // pending, by source
	byClient  map[string]int          // pending, by client id
	registers *buckets                // registrations, by source
	failures  *buckets                // wrong sign-in answers, by source
	wrong     int                     // wrong answers to the current one-time code
	noRoom    time.Time               // before it, no client can make room (cleared when one may)
	codes     map[string]*codeEntry   // by code hash
	access    map[string]*accessEntry // by token hash (persisted)
	refresh   map[string]refreshEntry // by token hash
	grants    map[string]*grantEntry  // by id (persisted)
	clients   map[string]*clientEntry // by id (persisted)
	signIn    string                  // the current one-time code; "" with passwords
}

// NewAuthorizationServer checks cfg, loads the store when there is one,
// and makes the first one-time code (given to cfg.SignInCode before it
// returns).
func NewAuthorizationServer(cfg AuthorizationServerConfig) (*AuthorizationServer, error) {
	iss, err := url.Parse(cfg.Issuer)
	if err != nil || (iss.Scheme != "http" && iss.Scheme != "https") || iss.Host == "" || (iss.Path != "" && iss.Path != "/") || iss.RawQuery != "" || iss.Fragment != "" || iss.User != nil {
		return nil, fmt.Errorf("oauth: issuer %q must be an origin, http(s)://host[:port]", cfg.Issuer)
	}
	resource, ok := canonicalResource(cfg.Resource)
	if !ok {
		return nil, fmt.Errorf("oauth: resource %q must be an absolute http(s) URL", cfg.Resource)
	}
	if cfg.Passwords == nil && cfg.SignInCode == nil {
		return nil, errors.New("oauth: without a password file the one-time sign-in code must go somewhere")
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = []string{DefaultScope}
	}
	for _, s := range cfg.Scopes {
		if !ValidScope(s) {
			return nil, fmt.Errorf("oauth: scope %q is not a valid scope token", s)
		}
	}
	for _, u := range cfg.AllowRedirectURIs {
		if err := checkRedirectShape(u); err != nil {
			return nil, fmt.Errorf("oauth: --allow-redirect-uri %q: %v", u, err)
		}
	}
	if cfg.AccessTokenLifetime <= 0 {
		cfg.AccessTokenLifetime = DefaultAccessTokenLifetime
	}
	if cfg.RefreshTokenLifetime <= 0 {
		cfg.RefreshTokenLifetime = DefaultRefreshTokenLifetime
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	if cfg.MaxGrants <= 0 {
		cfg.MaxGrants = DefaultMaxGrants
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	a := &AuthorizationServer{
		cfg:       cfg,
		issuer:    iss.Scheme + "://" + strings.ToLower(iss.Host),
		resource:  resource,
		log:       cfg.Logger,
		now:       cfg.Now,
		redirect:  slices.Clone(cfg.AllowRedirectURIs),
		checks:    make(chan struct{}, maxPasswordChecks),
		refusals:  newQuietLog(cfg.Logger),
		pending:   map[string]*pendingAuth{},
		bySource:  map[string]int{},
		byClient:  map[string]int{},
		registers: newBuckets(registerBurst, registerEvery, maxSources),
		failures:  newBuckets(failureBurst, failureEvery, maxSources),
		codes:     map[string]*codeEntry{},
		access:    map[string]*accessEntry{},
		refresh:   map[string]refreshEntry{},
		grants:    map[string]*grantEntry{},
		clients:   map[string]*clientEntry{},
	}
	if cfg.StorePath != "" {
		st, err := loadState(cfg.StorePath)
		if err != nil {
			return nil, err
		}
		a.adopt(st)
		after := cfg.After
		if after == nil {
			after = time.After
		}
		a.store = newStoreWriter(a, cfg.StorePath, after)
	}
	if cfg.Passwords == nil {
		a.signIn = newSignInCode()
		cfg.SignInCode(a.signIn)
	}
	a.mux = http.NewServeMux()
	a.mux.HandleFunc("/.well-known/oauth-authorization-server", a.serveMetadata)
	a.mux.HandleFunc("/authorize", a.serveAuthorize)
	a.mux.HandleFunc("/token", a.serveToken)
	a.mux.HandleFunc("/register", a.serveRegister)
	a.mux.HandleFunc("/revoke", a.serveRevoke)
	return a, nil
}

// Close writes what the store has not yet been given, and stops the
// batched writes: call it when the server stops serving. Changes after it
// are written at once. Without a store it does nothing.
func (a *AuthorizationServer) Close() error {
	if a.store == nil {
		return nil
	}
	return a.store.close()
}

// Issuer returns the issuer identifier.
func (a *AuthorizationServer) Issuer() string { return a.issuer }

// Paths lists the paths [AuthorizationServer.Handler] serves.
func (a *AuthorizationServer) Paths() []string {
	return []string{"/.well-known/oauth-authorization-server", "/authorize", "/token", "/register", "/revoke"}
}

// Handler returns the handler of the server's endpoints, at the paths
// [AuthorizationServer.Paths] lists (anything else gets 404). It reads
// nothing but what the endpoint needs, each body capped.
func (a *AuthorizationServer) Handler() http.Handler { return a.mux }

// Metadata is the authorization server's RFC 8414 document.
type Metadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	RevocationEndpoint                string   `json:"revocation_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	ResponseModesSupported            []string `json:"response_modes_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethods     []string `json:"revocation_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	AuthorizationResponseIssParameter bool     `json:"authorization_response_iss_parameter_supported"`
	// client_id_metadata_document_supported is never advertised (row
	// 185): it would move every client able to use one off DCR onto its
	// own URL, which is fetched only when allowlisted.
}

// Metadata returns the server's metadata document.
func (a *AuthorizationServer) Metadata() Metadata {
	return Metadata{
		Issuer:                            a.issuer,
		AuthorizationEndpoint:             a.issuer + "/authorize",
		TokenEndpoint:                     a.issuer + "/token",
		RegistrationEndpoint:              a.issuer + "/register",
		RevocationEndpoint:                a.issuer + "/revoke",
		ScopesSupported:                   slices.Clone(a.cfg.Scopes),
		ResponseTypesSupported:            []string{"code"},
		ResponseModesSupported:            []string{"query"},
		GrantTypesSupported:               []string{"authorization_code", "refresh_token"},
		TokenEndpointAuthMethodsSupported: []string{"none"},
		RevocationEndpointAuthMethods:     []string{"none"},
		CodeChallengeMethodsSupported:     []string{"S256"},
		AuthorizationResponseIssParameter: true,
	}
}

func (a *AuthorizationServer) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Cache-Control", "max-age=3600")
	writeJSON(w, http.StatusOK, a.Metadata())
}

// Verify accepts an access token this server issued for its resource that
// has neither expired nor been revoked, and returns who it names: the
// issuer, the user ("owner" for the one-time code), the client and the
// granted scopes. Any other token is ErrInvalidToken.
func (a *AuthorizationServer) Verify(_ context.Context, token string) (Principal, error) {
	h := hashToken(token)
	now := a.now()
	a.mu.RLock()
	defer a.mu.RUnlock()
	t, ok := a.access[h]
	if !ok {
		return Principal{}, fmt.Errorf("%w: unknown or revoked", ErrInvalidToken)
	}
	if !now.Before(t.Expires) {
		return Principal{}, fmt.Errorf("%w: expired", ErrInvalidToken)
	}
	g, ok := a.grants[t.Grant]
	if !ok {
		return Principal{}, fmt.Errorf("%w: its grant was revoked", ErrInvalidToken)
	}
	if g.Resource != a.resource {
		return Principal{}, fmt.Errorf("%w: issued for another resource", ErrInvalidToken)
	}
	return Principal{
		Issuer:   a.issuer,
		Subject:  g.Subject,
		ClientID: g.Client,
		Scopes:   slices.Clone(t.Scopes),
		Expiry:   t.Expires,
	}, nil
}

// newSecret returns 32 random bytes in base64url: tokens, codes, ids.
func newSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// hashToken is what the server keeps of a token or code: its SHA-256, hex.
func hashToken(t string) string {
	s := sha256.Sum256([]byte(t))
	return hex.EncodeToString(s[:])
}

// canonicalResource returns a resource URI in the form compared: scheme
// and host lower-cased, no fragment, no trailing slash on the path.
func canonicalResource(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" || u.User != nil {
		return "", false
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u.String(), true
}

// writeJSON answers v as JSON, never cached.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
		h.Set("Pragma", "no-cache")
	}
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// OAuthError is an error answer of RFC 6749 §5.2 (and RFC 7591 §3.2.2,
// RFC 7009 §2.2.1): the error code and a description safe to show, which
// never carries a token or code.
type OAuthError struct {
	status      int
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

func (e *OAuthError) Error() string { return e.Code + ": " + e.Description }

func errInvalidRequest(format string, args ...any) *OAuthError {
	return &OAuthError{http.StatusBadRequest, "invalid_request", fmt.Sprintf(format, args...)}
}

func errInvalidGrant(format string, args ...any) *OAuthError {
	return &OAuthError{http.StatusBadRequest, "invalid_grant", fmt.Sprintf(format, args...)}
}

func errInvalidClient(format string, args ...any) *OAuthError {
	return &OAuthError{http.StatusUnauthorized, "invalid_client", fmt.Sprintf(format, args...)}
}

func errServer(format string, args ...any) *OAuthError {
	return &OAuthError{http.StatusInternalServerError, "server_error", fmt.Sprintf(format, args...)}
}

// writeLimited answers err, a limit reached, with Retry-After: the
// seconds after which the same request may succeed.
func writeLimited(w http.ResponseWriter, err *OAuthError, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter(wait)))
	writeError(w, err)
}

// writeError answers err as RFC 6749 §5.2 JSON.
func writeError(w http.ResponseWriter, err *OAuthError) {
	switch err.status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Basic realm="mcp-stdio"`)
	case http.StatusServiceUnavailable: // temporarily_unavailable: a table is full
		if w.Header().Get("Retry-After") == "" { // a limit's own wait is exact
			w.Header().Set("Retry-After", unavailableRetryAfter)
		}
	}
	writeJSON(w, err.status, err)
}

// unavailableRetryAfter is the Retry-After, in seconds, of a 503
// temporarily_unavailable: the client may try again once sign-ins in
// progress have finished or expired.
const unavailableRetryAfter = "10"

// readForm reads a POST form body of at most maxFormBody bytes.
func readForm(w http.ResponseWriter, r *http.Request) (string, *OAuthError) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return "", &OAuthError{http.StatusMethodNotAllowed, "invalid_request", "use POST"}
	}
	ct := r.Header.Get("Content-Type")
	if mt, _, _ := strings.Cut(ct, ";"); !strings.EqualFold(strings.TrimSpace(mt), "application/x-www-form-urlencoded") {
		return "", errInvalidRequest("the body must be application/x-www-form-urlencoded")
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBody)
	b, err := readAll(r)
	if err != nil {
		return "", errInvalidRequest("the body could not be read or is larger than %d bytes", maxFormBody)
	}
	return string(b), nil
}

// parseForm parses an x-www-form-urlencoded body or query, refusing a
// repeated parameter.
func parseForm(s string) (url.Values, *OAuthError) {
	v, err := url.ParseQuery(s)
	if err != nil {
		return nil, errInvalidRequest("the parameters are not valid form encoding")
	}
	for k, vs := range v {
		if len(vs) > 1 {
			return nil, errInvalidRequest("the parameter %s is repeated", k)
		}
	}
	return v, nil
}
