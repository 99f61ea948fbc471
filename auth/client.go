package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"golang.org/x/oauth2"
)

// Defaults of [Options].
const (
	// DefaultTimeout bounds one interactive sign-in (--oauth-timeout).
	DefaultTimeout = 120 * time.Second
	// DefaultCooldown is how long automatic sign-ins pause after one failed.
	DefaultCooldown = 60 * time.Second
	// DefaultStepUpLimit is how many step-up sign-ins one scope set gets.
	DefaultStepUpLimit = 2
	// refreshMargin: a token this close to expiry is refreshed, and the
	// background refresh fires at least this long before expiry.
	refreshMargin = 60 * time.Second
	// refreshRetry is the pause after a background refresh failed for a
	// reason that may pass.
	refreshRetry = 30 * time.Second
	// storeLockWait bounds the wait for the token store lock.
	storeLockWait = 30 * time.Second
)

// Options configures a [Client]. Only ServerURL is required.
type Options struct {
	// ServerURL is the MCP server's URL (the relay's positional argument).
	ServerURL string
	// ClientID and ClientSecret are a pre-registered client
	// (--client-id/MCP_OAUTH_CLIENT_ID, --client-secret/
	// MCP_OAUTH_CLIENT_SECRET). The secret is never written to the store.
	ClientID     string
	ClientSecret string
	// ClientMetadataURL is an https URL of a Client ID Metadata Document
	// (--client-metadata-url), used as client_id with servers that advertise
	// client_id_metadata_document_supported.
	ClientMetadataURL string
	// Scope, space-separated, replaces the discovered scope of sign-ins
	// (--oauth-scope).
	Scope string
	// Device selects the device authorization grant instead of the browser
	// (--oauth-device).
	Device bool
	// Timeout bounds one interactive sign-in; 0 means [DefaultTimeout]
	// (--oauth-timeout).
	Timeout time.Duration
	// CallbackPort is the loopback port the browser sign-in's redirect
	// comes to (redirect_uri http://127.0.0.1:PORT/callback), for
	// authorization servers that only accept a redirect URI registered
	// beforehand (--oauth-callback-port); 0 means a fresh ephemeral port
	// for every sign-in.
	CallbackPort int
	// Eager makes [Client.Run] sign in at once when no usable token is
	// stored, instead of at the first 401 (--oauth-eager).
	Eager bool
	// NoReauth turns off the background sign-in after a dead grant; the
	// request then fails with "authentication failed" (--no-oauth-reauth).
	NoReauth bool
	// AuthParams are added to the authorization request (and to the
	// device authorization request), for identity providers that want
	// more than OAuth asks: Google's access_type=offline, Auth0's
	// audience, prompt=consent (--oauth-param). The parameters the flow
	// sets itself (response_type, client_id, redirect_uri,
	// state, code_challenge, code_challenge_method, scope, resource), and
	// response_mode, are refused by [New].
	AuthParams url.Values
	// NoResource leaves RFC 8707's resource parameter out of the
	// authorization, token and refresh requests, for authorization
	// servers that refuse it (Microsoft Entra ID answers AADSTS9010010)
	// (--no-oauth-resource).
	NoResource bool
	// StorePath is the token file; "" means [DefaultStorePath].
	StorePath string
	// HTTPClient carries the OAuth traffic (metadata, registration, token
	// requests). It must not be a client that authorizes with this Client.
	// nil means a client with a 30 s timeout and the environment's proxy.
	// Whatever its CheckRedirect, a request carrying credentials (a token
	// request, a registration) is not redirected to another origin, and
	// no request from https to plain http.
	HTTPClient *http.Client
	// Getenv reads $BROWSER, XDG_CONFIG_HOME and HOME; nil means os.Getenv.
	Getenv func(string) string
	// Stderr receives what the user must see: the sign-in URL, the device
	// code. nil means os.Stderr.
	Stderr io.Writer
	// Logger receives diagnostics, never credentials; nil discards.
	Logger *slog.Logger
	// Clock is the time source; nil means the wall clock.
	Clock Clock
	// OpenURL opens the sign-in URL for the user; nil runs $BROWSER or the
	// platform's opener (see the package documentation). The URL is
	// printed on Stderr either way.
	OpenURL func(ctx context.Context, url string) error
	// Cooldown pauses automatic sign-ins after a failed one; 0 means
	// [DefaultCooldown].
	Cooldown time.Duration
	// StepUpLimit bounds the step-up sign-ins for one set of scopes, so a
	// server that keeps answering 403 insufficient_scope cannot loop the
	// user through the browser; 0 means [DefaultStepUpLimit].
	StepUpLimit int
	// Advice, when set, says what the user can do about a sign-in that
	// failed with err (a certificate that no authority the program trusts
	// signed, say), or "" for nothing: the warning logged for the failure
	// ends with it. The error the sign-in returns carries none, so that
	// whoever reports it to the user adds their own advice once.
	Advice func(err error) string
}

// ReservedAuthParam says why an authorization request parameter the
// sign-in sets itself may not be given in [Options.AuthParams], and what
// to do instead; ok is false for the others.
func ReservedAuthParam(name string) (why string, ok bool) {
	switch name {
	case "response_type":
		return "the sign-in sets it (code)", true
	case "response_mode":
		return "the loopback listener takes the response in the query of a GET, the default", true
	case "client_id":
		return "use --client-id", true
	case "redirect_uri":
		return "the loopback listener sets it; fix its port with --oauth-callback-port", true
	case "state":
		return "the sign-in sets it (CSRF protection)", true
	case "code_challenge", "code_challenge_method":
		return "the sign-in sets it (PKCE S256)", true
	case "scope":
		return "use --oauth-scope", true
	case "resource":
		return "the sign-in sets it to the server's URI; leave it out with --no-oauth-resource", true
	}
	return "", false
}

// ErrSignInRequired means there is no usable token and getting one needs an
// interactive sign-in.
var ErrSignInRequired = errors.New("sign-in required")

// ReauthorizingError is what [Client.Unauthorized] returns when it has
// started a sign-in in the background: the request that met the 401 should
// be answered at once with JSON-RPC error -32002 and this message, and the
// MCP client retries it once the user has signed in. mw.Reauth recognises
// it by its Reauthorizing method.
type ReauthorizingError struct{ msg string }

// Error returns the message for the client.
func (e *ReauthorizingError) Error() string { return e.msg }

// Reauthorizing reports true: a sign-in is under way.
func (e *ReauthorizingError) Reauthorizing() bool { return true }

// GenerationHeader is the response header [Transport] adds to a 401 or 403
// response: the generation of the token the request carried. It lets
// [Client.Unauthorized] tell a stale rejection (the token was replaced
// meanwhile) from a current one exactly.
const GenerationHeader = "Mcp-Stdio-Token-Generation"

// Client is the OAuth 2.1 client of one MCP server: it finds the
// authorization server, registers, signs the user in, keeps the token fresh
// and shares it with sibling processes through the token store. It is safe
// for concurrent use.
//
// Wiring: [Transport] puts [Client.BearerToken] on every request; the
// relay's reauth stage (mw.Reauth) calls [Client.Unauthorized] and
// [Client.Forbidden] on 401 and 403; [Client.Run] keeps the token fresh and
// owns background sign-ins, so it must run for the relay's lifetime.
type Client struct {
	opts     Options
	server   *url.URL
	resource string // canonical server URI: store key and default resource
	http     *http.Client
	clock    Clock
	log      *slog.Logger
	stderr   io.Writer
	openURL  func(ctx context.Context, url string) error
	store    *tokenStore

	mu sync.Mutex
	// tok is the current token, gen its generation (bumped on every change).
	tok Token
	gen uint64
	// sess is the current grant's store entry: endpoints, issuer, client.
	sess storeEntry
	// loaded: the store has been consulted once.
	loaded bool
	// hadGrant: a token has existed in this process (or the store); a
	// failing grant then is a dead grant, not a first sign-in.
	hadGrant bool
	// hints of the last challenge, for sign-ins that start without one.
	hints challengeHints
	// from401 is the generation a 401-driven refresh produced; a 401 on it
	// means refreshing does not help.
	from401 uint64
	// stepUps counts step-up sign-ins per scope set.
	stepUps map[string]int
	// flight is the sign-in under way, if any.
	flight *flight
	// lastFailure is when an automatic sign-in last failed.
	lastFailure time.Time
	// retryAt delays the background refresh after a failure.
	retryAt time.Time
	// runCtx is Run's context while Run runs; background sign-ins use it.
	runCtx context.Context
	// wg counts sign-in goroutines.
	wg sync.WaitGroup
	// launchers counts browser launcher processes not yet reaped.
	launchers sync.WaitGroup
	// changed wakes Run when the token changes.
	changed chan struct{}
	// runHook, when set (by tests), is called once Run has started.
	runHook func()
}

// flight is one sign-in; waiters block on done.
type flight struct {
	done chan struct{}
	err  error
	// reauth marks the background sign-in after a dead grant: requests do
	// not wait for it but get -32002 at once.
	reauth bool
}

// New returns a Client for o.ServerURL. It checks the options and touches
// neither the network nor the store.
func New(o Options) (*Client, error) {
	u, err := parseHTTPURL(o.ServerURL)
	if err != nil {
		return nil, fmt.Errorf("oauth: server URL: %w", err)
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		return nil, errors.New("oauth: a client secret needs a client id")
	}
	if o.ClientMetadataURL != "" {
		mu, err := parseHTTPURL(o.ClientMetadataURL)
		if err != nil || !strings.EqualFold(mu.Scheme, "https") || strings.Trim(mu.Path, "/") == "" || mu.Fragment != "" {
			return nil, errors.New("oauth: the client metadata URL must be an https URL with a path")
		}
	}
	for name := range o.AuthParams {
		if why, ok := ReservedAuthParam(name); ok {
			return nil, fmt.Errorf("oauth: the authorization request parameter %q cannot be set: %s", name, why)
		}
		if name == "" {
			return nil, errors.New("oauth: an authorization request parameter needs a name")
		}
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Cooldown <= 0 {
		o.Cooldown = DefaultCooldown
	}
	if o.StepUpLimit <= 0 {
		o.StepUpLimit = DefaultStepUpLimit
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	c := &Client{
		opts:     o,
		server:   u,
		resource: canonical(u),
		http:     o.HTTPClient,
		clock:    o.Clock,
		log:      o.Logger,
		stderr:   o.Stderr,
		openURL:  o.OpenURL,
		stepUps:  make(map[string]int),
		changed:  make(chan struct{}, 1),
	}
	if c.http == nil {
		c.http = &http.Client{Timeout: 30 * time.Second}
	}
	c.http = guardRedirects(c.http)
	if c.clock == nil {
		c.clock = realClock{}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.stderr == nil {
		c.stderr = os.Stderr
	}
	if c.openURL == nil {
		getenv := o.Getenv
		c.openURL = func(_ context.Context, u string) error { return openBrowser(getenv, u, &c.launchers) }
	}
	path := o.StorePath
	if path == "" {
		if path, err = DefaultStorePath(o.Getenv); err != nil {
			return nil, fmt.Errorf("oauth: %w", err)
		}
	}
	c.store = &tokenStore{path: path, log: c.log, clock: c.clock, lockWait: storeLockWait}
	return c, nil
}

// withResource adds the resource parameter to a token request's form,
// unless [Options.NoResource] leaves it out.
func (c *Client) withResource(v url.Values, resource string) url.Values {
	if !c.opts.NoResource {
		v.Set("resource", resource)
	}
	return v
}

// authURLOptions are the extra parameters of an authorization (or device
// authorization) request: the resource unless left out, then
// [Options.AuthParams].
func (c *Client) authURLOptions(resource string) []oauth2.AuthCodeOption {
	var opts []oauth2.AuthCodeOption
	if !c.opts.NoResource {
		opts = append(opts, oauth2.SetAuthURLParam("resource", resource))
	}
	for _, name := range slices.Sorted(maps.Keys(c.opts.AuthParams)) {
		for _, v := range c.opts.AuthParams[name] {
			opts = append(opts, oauth2.SetAuthURLParam(name, v))
		}
	}
	return opts
}

// Resource returns the canonical URI of the server: the store key and the
// default resource parameter.
func (c *Client) Resource() string { return c.resource }

// Generation returns the generation of the current token. It changes
// whenever the token does.
func (c *Client) Generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loadLocked()
	return c.gen
}

// loadLocked consults the store once. c.mu is held.
func (c *Client) loadLocked() {
	if c.loaded {
		return
	}
	c.loaded = true
	e, err := c.store.load(c.resource)
	if err != nil {
		c.log.Error("oauth: "+err.Error()+"; starting without stored tokens", "path", c.store.path)
		return
	}
	if e == nil {
		return
	}
	c.sess = *e
	if e.AccessToken != "" {
		c.tok = e.token()
		c.gen++
		c.hadGrant = true
	}
}

// install makes t the current token; e, when not nil, is the store entry it
// belongs to. It returns the new generation.
func (c *Client) install(t Token, e *storeEntry, from401 bool) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loaded = true
	c.tok = t
	c.gen++
	c.hadGrant = true
	c.retryAt = time.Time{}
	if e != nil {
		c.sess = *e
	}
	if from401 {
		c.from401 = c.gen
	}
	select {
	case c.changed <- struct{}{}:
	default:
	}
	return c.gen
}

// credsFor returns the client that refreshes the grant of e.
func (c *Client) credsFor(e *storeEntry) clientCreds {
	if c.opts.ClientID != "" && (e.ClientID == "" || e.ClientID == c.opts.ClientID) {
		m := e.TokenEndpointAuthMethod
		if m == "" || (m != authNone) != (c.opts.ClientSecret != "") {
			m = chooseAuthMethod(c.opts.ClientSecret != "", nil)
		}
		return clientCreds{id: c.opts.ClientID, secret: c.opts.ClientSecret, method: m}
	}
	return e.clientCreds()
}

// BearerToken returns the access token to send on the next request and its
// generation; "" when there is none yet. It never starts a sign-in: with no
// token it waits (bounded by ctx) for a first or eager sign-in under way,
// but not for the background sign-in after a dead grant, whose requests are
// answered with -32002 instead; an expired token with a refresh token is
// refreshed first. It implements [TokenSource].
func (c *Client) BearerToken(ctx context.Context) (string, uint64) {
	c.mu.Lock()
	c.loadLocked()
	t, gen, fl, retryAt := c.tok, c.gen, c.flight, c.retryAt
	c.mu.Unlock()
	if t.AccessToken == "" && fl != nil && !fl.reauth {
		select {
		case <-fl.done:
		case <-ctx.Done():
		}
		c.mu.Lock()
		t, gen = c.tok, c.gen
		c.mu.Unlock()
	}
	if now := c.clock.Now(); t.AccessToken != "" && t.expired(now, 0) && t.RefreshToken != "" && !now.Before(retryAt) {
		if err := c.refresh(ctx, t.AccessToken, false); err != nil {
			c.log.Warn("oauth: refreshing the expired token failed", "err", err)
		}
		c.mu.Lock()
		t, gen = c.tok, c.gen
		c.mu.Unlock()
	}
	return t.AccessToken, gen
}

// Token returns a usable access token: the current one, one from the store,
// or a refreshed one. It returns [ErrSignInRequired] when only an
// interactive sign-in can help.
func (c *Client) Token(ctx context.Context) (string, error) {
	tok, _ := c.BearerToken(ctx)
	c.mu.Lock()
	expired := c.tok.expired(c.clock.Now(), 0)
	c.mu.Unlock()
	if tok == "" || expired {
		return "", ErrSignInRequired
	}
	return tok, nil
}

// EnsureToken makes sure a usable token exists, signing in interactively
// when [Client.Token] cannot find one. It is what --oauth-eager and a relay
// that wants a token before its first request call.
func (c *Client) EnsureToken(ctx context.Context) error {
	if _, err := c.Token(ctx); err == nil {
		return nil
	}
	return c.SignIn(ctx)
}

// SignIn runs an interactive sign-in now (joining one already under way)
// and waits for it, bounded by ctx and the sign-in timeout.
func (c *Client) SignIn(ctx context.Context) error {
	c.mu.Lock()
	hints := c.hints
	c.mu.Unlock()
	return c.signInWait(ctx, hints, nil, false)
}

// WaitSignIn waits for the sign-in under way, if any (a background one
// included), and returns its error; with none under way it returns nil at
// once.
func (c *Client) WaitSignIn(ctx context.Context) error {
	c.mu.Lock()
	fl := c.flight
	c.mu.Unlock()
	if fl == nil {
		return nil
	}
	select {
	case <-fl.done:
		return fl.err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// signInWait joins the sign-in under way or starts one, and waits for it.
// auto sign-ins (those the client starts by itself) honour the cooldown.
func (c *Client) signInWait(ctx context.Context, hints challengeHints, extra []string, auto bool) error {
	c.mu.Lock()
	fl := c.flight
	if fl == nil {
		if auto {
			if err := c.coolingDownLocked(); err != nil {
				c.mu.Unlock()
				return err
			}
		}
		base := c.runCtx
		if base == nil {
			base = ctx
		}
		fl = c.startFlightLocked(base, hints, extra, auto, false)
	}
	c.mu.Unlock()
	select {
	case <-fl.done:
		return fl.err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// coolingDownLocked returns an error while automatic sign-ins pause after a
// failure. c.mu is held.
func (c *Client) coolingDownLocked() error {
	if c.lastFailure.IsZero() {
		return nil
	}
	left := c.lastFailure.Add(c.opts.Cooldown).Sub(c.clock.Now())
	if left <= 0 {
		return nil
	}
	return fmt.Errorf("the last sign-in failed; the next one may start in %s", left.Round(time.Second))
}

// startFlightLocked starts a sign-in goroutine that ends with ctx. c.mu is
// held.
func (c *Client) startFlightLocked(ctx context.Context, hints challengeHints, extra []string, auto, reauth bool) *flight {
	fl := &flight{done: make(chan struct{}), reauth: reauth}
	c.flight = fl
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		err := c.signIn(ctx, hints, extra)
		c.mu.Lock()
		c.flight = nil
		switch {
		case err == nil:
			c.lastFailure = time.Time{}
		case auto:
			c.lastFailure = c.clock.Now()
		}
		c.mu.Unlock()
		if err != nil {
			c.log.Warn("oauth: "+c.advised(err), "server", frame.DisplayURLString(c.resource))
		}
		fl.err = err
		close(fl.done)
	}()
	return fl
}

// advised returns err's text followed by Options.Advice's, if any.
func (c *Client) advised(err error) string {
	if c.opts.Advice != nil {
		if advice := c.opts.Advice(err); advice != "" {
			return err.Error() + "; " + advice
		}
	}
	return err.Error()
}

// errNoRefreshToken means the grant has no refresh token to spend.
var errNoRefreshToken = errors.New("no refresh token")

// refresh replaces the token rejected (an access token value, "" for none)
// under the store's cross-process lock: if the store already holds another
// unexpired token (a sibling refreshed or signed in), that one is adopted
// and nothing is spent; else the stored refresh token (the newest, should a
// sibling have rotated it) is exchanged. A dead grant is forgotten in the
// store only if the store still holds the refresh token that failed
// (compare-and-delete); the client registration is kept.
func (c *Client) refresh(ctx context.Context, rejected string, from401 bool) error {
	c.mu.Lock()
	c.loadLocked()
	sess, mem := c.sess, c.tok
	c.mu.Unlock()
	var (
		got     Token
		gotE    *storeEntry
		adopted bool
	)
	err := c.store.update(ctx, c.resource, func(e *storeEntry) (*storeEntry, bool, error) {
		now := c.clock.Now()
		if e != nil && e.AccessToken != "" && e.AccessToken != rejected && !e.token().expired(now, refreshMargin) {
			got, gotE, adopted = e.token(), e, true
			return nil, false, nil
		}
		src := e
		if src == nil || src.RefreshToken == "" || src.TokenEndpoint == "" {
			// Nothing (usable) in the store: refresh what this process holds.
			s := sess
			s.setToken(mem)
			src = &s
		}
		rt := src.RefreshToken
		if rt == "" || src.TokenEndpoint == "" {
			if e != nil && rejected != "" && e.AccessToken == rejected {
				// The stored token is the one refused and cannot be
				// refreshed: forget it, or the sign-in that follows would
				// take it back from the store as a sibling's.
				e.clearToken()
				return e, true, errNoRefreshToken
			}
			return nil, false, errNoRefreshToken
		}
		resource := src.Resource
		if resource == "" {
			resource = c.resource
		}
		t, err := c.requestToken(ctx, src.TokenEndpoint, c.credsFor(src), c.withResource(url.Values{
			"grant_type":    {grantRefreshToken},
			"refresh_token": {rt},
		}, resource))
		if err != nil {
			if isDeadGrant(err) && e != nil && e.RefreshToken == rt {
				e.clearToken()
				return e, true, err
			}
			return nil, false, err
		}
		if t.RefreshToken == "" {
			t.RefreshToken = rt // python-sdk#2270: keep the old one
		}
		if t.Scope == "" {
			t.Scope = src.Scope
		}
		next := *src
		next.setToken(t)
		got, gotE = t, &next
		return &next, true, nil
	})
	if got.AccessToken != "" {
		c.install(got, gotE, from401 && !adopted)
		if adopted {
			c.log.Info("oauth: adopted a newer token from the store", "server", frame.DisplayURLString(c.resource))
		} else {
			c.log.Debug("oauth: token refreshed", "server", frame.DisplayURLString(c.resource))
			if err != nil {
				c.log.Error("oauth: cannot save the refreshed token; it is kept in memory only", "err", err)
			}
		}
		return nil
	}
	switch {
	case err == nil:
	case isDeadGrant(err) || errors.Is(err, errNoRefreshToken):
		c.dropGrant(rejected)
	case ctx.Err() == nil:
		c.mu.Lock()
		c.retryAt = c.clock.Now().Add(refreshRetry)
		c.mu.Unlock()
	}
	return err
}

// dropGrant forgets the in-memory token if it is still rejected.
func (c *Client) dropGrant(rejected string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tok.AccessToken == rejected && rejected != "" {
		c.tok = Token{}
		c.gen++
	}
}

// forgetGrant drops a grant whose refreshed token was rejected too: the
// store entry's tokens go only if they are still the ones rejected.
func (c *Client) forgetGrant(ctx context.Context, rejected Token) {
	err := c.store.update(ctx, c.resource, func(e *storeEntry) (*storeEntry, bool, error) {
		if e == nil || e.AccessToken != rejected.AccessToken || e.RefreshToken != rejected.RefreshToken {
			return nil, false, nil
		}
		e.clearToken()
		return e, true, nil
	})
	if err != nil {
		c.log.Error("oauth: cannot update the token store", "err", err)
	}
	c.dropGrant(rejected.AccessToken)
}

// Unauthorized handles a 401 for a request that carried the token of
// generation gen (a [GenerationHeader] in h, set by [Transport], takes
// precedence). h is the response header; its WWW-Authenticate challenge, of
// any scheme, feeds discovery. The answer:
//
//   - (true, nil): retry the request once; the current token may work. That
//     is the case when the rejection was stale (the token had already been
//     replaced), when the store held a newer token from a sibling process,
//     after a successful refresh, and after a first sign-in (one that found
//     no grant at all), which runs in the foreground. So does the sign-in
//     after the server's protected resource metadata came to name another
//     authorization server than the grant's (SEP-2352): nothing of the old
//     one is used again, neither its tokens nor its client, and the new
//     one gets a registration of its own.
//   - (false, *ReauthorizingError): the grant is dead (the refresh token was
//     refused, or a freshly refreshed token was rejected again); a sign-in
//     was started in the background (one at a time, paused for
//     Options.Cooldown after a failure). Answer the request with -32002.
//   - (false, error): nothing helps now (refresh failed for a transient
//     reason, re-authorization is off, a sign-in failed or is cooling
//     down); the request fails with "authentication failed".
func (c *Client) Unauthorized(ctx context.Context, gen uint64, h http.Header) (bool, error) {
	if g, ok := stampedGeneration(h); ok {
		gen = g
	}
	hints := hintsFrom(h)
	c.mu.Lock()
	c.loadLocked()
	c.hints = hints
	cur, curGen, from401, hadGrant := c.tok, c.gen, c.from401, c.hadGrant
	c.mu.Unlock()

	if gen != curGen && cur.AccessToken != "" && !cur.expired(c.clock.Now(), 0) {
		c.log.Debug("oauth: 401 for a replaced token; retrying with the current one")
		return true, nil
	}
	rejected := ""
	if gen == curGen {
		rejected = cur.AccessToken
	}
	if to, moved := c.authServerMoved(ctx, hints); moved {
		return c.migrate(ctx, to, cur, rejected, hints)
	}
	if rejected != "" && curGen == from401 {
		c.log.Info("oauth: the refreshed token was rejected too; the grant is dead", "server", frame.DisplayURLString(c.resource))
		c.forgetGrant(ctx, cur)
	} else {
		err := c.refresh(ctx, rejected, true)
		switch {
		case err == nil:
			return true, nil
		case isDeadGrant(err):
			c.log.Info("oauth: the refresh token is no longer valid", "server", frame.DisplayURLString(c.resource))
		case errors.Is(err, errNoRefreshToken):
		default:
			return false, fmt.Errorf("refreshing the token: %w", err)
		}
	}
	if !hadGrant {
		if err := c.signInWait(ctx, hints, nil, true); err != nil {
			return false, err
		}
		return true, nil
	}
	if c.opts.NoReauth {
		return false, errors.New("the grant is no longer valid and re-authorization is off")
	}
	return false, c.startBackground(hints)
}

// authServerMoved reports whether the server's protected resource
// metadata now names another authorization server than the one the
// current grant and client belong to (SEP-2352), and which: it is looked
// for as a sign-in would (the challenge's resource_metadata first). A
// grant whose issuer is not known, or metadata that cannot be had, is
// taken as not moved.
func (c *Client) authServerMoved(ctx context.Context, hints challengeHints) (string, bool) {
	c.mu.Lock()
	was := c.sess.Issuer
	c.mu.Unlock()
	if was == "" {
		return "", false
	}
	prm, _, _, err := findResourceMetadata(ctx, c.http, c.log, c.server, hints.resourceMetadata)
	if err != nil {
		c.log.Debug("oauth: cannot tell whether the authorization server changed", "err", err)
		return "", false
	}
	now, err := c.pickAuthServer(prm)
	if err != nil || sameIssuer(now, was) {
		return "", false
	}
	return now, true
}

// migrate answers a 401 after the server moved to the authorization server
// to (SEP-2352): nothing of the old one is used again — not its token,
// refresh token or client; the grant is forgotten (the store keeps the
// old client's registration, which a sign-in uses only with its own
// issuer), and a sign-in at the new one, with a registration of its own,
// runs while the request waits, as a first sign-in does, so that the
// host need not come back. A pre-registered client (--client-id) was
// registered with the old one: it is not taken to the new one.
func (c *Client) migrate(ctx context.Context, to string, cur Token, rejected string, hints challengeHints) (bool, error) {
	c.mu.Lock()
	was := c.sess.Issuer
	c.mu.Unlock()
	c.log.Info("oauth: the server names another authorization server; signing in there, as a new client", "server", frame.DisplayURLString(c.resource), "was", was, "now", to)
	if rejected != "" {
		c.forgetGrant(ctx, cur)
	}
	if c.opts.ClientID != "" {
		return false, fmt.Errorf("the server's authorization server changed from %s to %s; the pre-registered client (--client-id) is %s's: register a client with %s and pass its id", was, to, was, to)
	}
	if c.opts.NoReauth {
		return false, fmt.Errorf("the server's authorization server changed from %s to %s, and re-authorization is off", was, to)
	}
	if err := c.signInWait(ctx, hints, nil, true); err != nil {
		return false, err
	}
	return true, nil
}

// startBackground starts a sign-in that outlives the request (it runs on
// Run's context) and returns the error that tells the client so.
func (c *Client) startBackground(hints challengeHints) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	how := "in the browser"
	if c.opts.Device {
		how = "with a device code (see the relay's stderr)"
	}
	if c.flight != nil {
		return &ReauthorizingError{msg: "authorization required: sign-in in progress " + how + "; retry"}
	}
	if err := c.coolingDownLocked(); err != nil {
		return err
	}
	if c.runCtx == nil {
		return errors.New("the grant is no longer valid and no background sign-in can start (the OAuth client is not running)")
	}
	c.startFlightLocked(c.runCtx, hints, nil, true, true)
	return &ReauthorizingError{msg: "authorization required: sign-in started " + how + "; retry"}
}

// Forbidden handles a 403 for a request that carried the token of
// generation gen. Only a challenge with error="insufficient_scope" is an
// authorization matter: then the client signs in again, in the foreground,
// asking for the union of the scopes it holds and those the challenge
// names (RFC 6750 §3.1, MCP "Step-Up Authorization Flow"), at most
// Options.StepUpLimit times per scope set.
//
//   - (true, nil): retry the request once with the new token.
//   - (false, nil): not insufficient_scope; the 403 stands.
//   - (false, error): the step-up failed or was refused; the request fails
//     with "authorization failed".
func (c *Client) Forbidden(ctx context.Context, gen uint64, h http.Header) (bool, error) {
	hints := hintsFrom(h)
	if hints.err != "insufficient_scope" {
		return false, nil
	}
	if g, ok := stampedGeneration(h); ok {
		gen = g
	}
	c.mu.Lock()
	c.loadLocked()
	cur, curGen := c.tok, c.gen
	held := splitScopes(cur.Scope)
	c.mu.Unlock()
	if gen != curGen && cur.AccessToken != "" && !cur.expired(c.clock.Now(), 0) && scopesCover(held, hints.scopes) {
		return true, nil
	}
	want := unionScopes(held, hints.scopes)
	key := scopeKey(want)
	c.mu.Lock()
	n := c.stepUps[key]
	if n >= c.opts.StepUpLimit {
		c.mu.Unlock()
		return false, fmt.Errorf("step-up to scope %q already tried %d times", key, n)
	}
	c.stepUps[key] = n + 1
	c.hints.resourceMetadata = hints.resourceMetadata
	c.mu.Unlock()
	c.log.Info("oauth: the server wants more scope; signing in again", "scope", key)
	if err := c.signInWait(ctx, hints, want, true); err != nil {
		return false, err
	}
	return true, nil
}

// scopeKey is a scope set's canonical spelling.
func scopeKey(s []string) string {
	s = slices.Clone(s)
	slices.Sort(s)
	return strings.Join(s, " ")
}

// stampedGeneration reads the [GenerationHeader] a [Transport] set.
func stampedGeneration(h http.Header) (uint64, bool) {
	v := h.Get(GenerationHeader)
	if v == "" {
		return 0, false
	}
	g, err := strconv.ParseUint(v, 10, 64)
	return g, err == nil
}

// Run keeps the token fresh until ctx is done: it refreshes in the
// background before expiry (at 80% of the token's lifetime or 60 s before
// it expires, whichever comes first), and it is the home of background
// sign-ins, which end with ctx. With Options.Eager and no usable token it
// starts a sign-in at once. Run returns nil when ctx is done, after its
// goroutines have ended; it may run once at a time.
func (c *Client) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.runCtx != nil {
		c.mu.Unlock()
		return errors.New("oauth: Run is already running")
	}
	c.runCtx = ctx
	c.loadLocked()
	hook := c.runHook
	c.mu.Unlock()
	if hook != nil {
		hook()
	}
	defer func() {
		c.mu.Lock()
		c.runCtx = nil
		c.mu.Unlock()
		c.wg.Wait()
		c.waitLaunchers(launcherReapWait)
	}()
	if c.opts.Eager {
		if _, err := c.Token(ctx); err != nil {
			c.mu.Lock()
			if c.flight == nil {
				c.startFlightLocked(ctx, c.hints, nil, false, false)
			}
			c.mu.Unlock()
		}
	}
	// fire is armed for armedAt; a change of token that leaves the refresh
	// due at the same time keeps it rather than arming another.
	var (
		fire    <-chan time.Time
		armedAt time.Time
	)
	for {
		c.mu.Lock()
		t, retryAt := c.tok, c.retryAt
		c.mu.Unlock()
		at, ok := refreshTime(t)
		if ok && retryAt.After(at) {
			at = retryAt
		}
		switch {
		case !ok:
			fire = nil
		case fire == nil || !at.Equal(armedAt):
			fire, armedAt = c.clock.After(at.Sub(c.clock.Now())), at
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.changed:
			continue
		case <-fire:
			fire = nil
		}
		err := c.refresh(ctx, t.AccessToken, false)
		if err == nil || ctx.Err() != nil {
			continue
		}
		if isDeadGrant(err) || errors.Is(err, errNoRefreshToken) {
			c.log.Warn("oauth: the refresh token is no longer valid; the next request will sign in again", "server", frame.DisplayURLString(c.resource))
		} else {
			c.log.Warn("oauth: background refresh failed; will retry", "err", err, "in", refreshRetry)
		}
	}
}

// launcherReapWait bounds how long Run, as it ends, waits for browser
// launchers to exit so that their reaping goroutines end too. A launcher
// that runs the browser in the foreground may live for hours; it is then
// left behind, to be reaped when the process exits.
const launcherReapWait = 2 * time.Second

// waitLaunchers waits up to d for every browser launcher to exit.
func (c *Client) waitLaunchers(d time.Duration) {
	done := make(chan struct{})
	go func() { c.launchers.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// refreshTime returns when the background refresh of t is due: at 80% of
// its lifetime or refreshMargin before expiry, whichever is earlier. A
// token without expiry or refresh token has none.
func refreshTime(t Token) (time.Time, bool) {
	if t.AccessToken == "" || t.RefreshToken == "" || t.Expiry.IsZero() {
		return time.Time{}, false
	}
	at := t.Expiry.Add(-refreshMargin)
	if !t.Obtained.IsZero() && t.Obtained.Before(t.Expiry) {
		if at80 := t.Obtained.Add(t.Expiry.Sub(t.Obtained) * 4 / 5); at80.Before(at) {
			at = at80
		}
	}
	return at, true
}
