package auth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/auth/authtest"
)

// signedIn returns a harness that has signed in, with Run running.
func signedIn(t *testing.T, o authtest.Options, mod func(*Options)) (*harness, *authtest.Server) {
	t.Helper()
	srv := authtest.NewServer(t, o)
	h := newHarness(t, srv, mod)
	if err := h.c.SignIn(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.run(t)
	return h, srv
}

// post sends a JSON-RPC request to the server's MCP endpoint through a
// Transport on c.
func post(t *testing.T, c *Client, srv *authtest.Server, method string, staticAuth string) *http.Response {
	t.Helper()
	hc := &http.Client{Transport: &Transport{Source: c}}
	req, _ := http.NewRequest(http.MethodPost, srv.MCPURL(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`"}`))
	req.Header.Set("Content-Type", "application/json")
	if staticAuth != "" {
		req.Header.Set("Authorization", staticAuth)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	t.Cleanup(hc.CloseIdleConnections)
	return resp
}

func TestTransportAuthorizesEveryRequest(t *testing.T) {
	is := is.New(t)
	h, srv := signedIn(t, authtest.Options{}, nil)
	tok, gen := h.c.BearerToken(context.Background())

	resp := post(t, h.c, srv, "tools/call", "Bearer static-header-loses")
	is.Equal(resp.StatusCode, http.StatusOK)
	is.Equal(last(t, srv, "/mcp").Authorization, "Bearer "+tok) // OAuth overrides -H Authorization

	hc := &http.Client{Transport: &Transport{Source: h.c}}
	defer hc.CloseIdleConnections()
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(m, srv.MCPURL(), nil)
		resp, err := hc.Do(req)
		is.NoErr(err)
		resp.Body.Close()
		is.Equal(last(t, srv, "/mcp").Authorization, "Bearer "+tok) // GET stream and DELETE too
	}

	srv.RevokeAccessTokens()
	resp = post(t, h.c, srv, "tools/list", "")
	is.Equal(resp.StatusCode, http.StatusUnauthorized)
	g, ok := stampedGeneration(resp.Header)
	is.True(ok)
	is.Equal(g, gen) // the rejected token's generation rides on the 401
}

func TestUnauthorizedRefreshesOnce(t *testing.T) {
	is := is.New(t)
	h, srv := signedIn(t, authtest.Options{TokenTTL: time.Hour}, nil)
	srv.RevokeAccessTokens() // the server forgot the token; the refresh token still works
	resp := post(t, h.c, srv, "tools/call", "")
	is.Equal(resp.StatusCode, http.StatusUnauthorized)

	retry, err := h.c.Unauthorized(context.Background(), 0, resp.Header)
	is.NoErr(err)
	is.True(retry)
	is.Equal(srv.Count("/token", "refresh_token"), 1)
	is.Equal(last(t, srv, "/token").Form.Get("resource"), srv.MCPURL()) // RFC 8707 on refresh
	is.Equal(post(t, h.c, srv, "tools/call", "").StatusCode, http.StatusOK)
}

func TestUnauthorizedStaleRejectionJustRetries(t *testing.T) {
	is := is.New(t)
	h, srv := signedIn(t, authtest.Options{TokenTTL: time.Hour}, nil)
	old := h.c.Generation()
	srv.RevokeAccessTokens()
	retry, err := h.c.Unauthorized(context.Background(), old, challenge(srv))
	is.NoErr(err)
	is.True(retry)
	n := len(srv.Requests())
	// Another request, sent with the old token, comes back 401 after the
	// refresh: nothing is spent, it is just sent again.
	retry, err = h.c.Unauthorized(context.Background(), old, challenge(srv))
	is.NoErr(err)
	is.True(retry)
	is.Equal(len(srv.Requests()), n) // no network at all
}

func TestUnauthorizedAdoptsASiblingsToken(t *testing.T) {
	is := is.New(t)
	h, srv := signedIn(t, authtest.Options{TokenTTL: time.Hour}, nil)
	// A sibling process sharing the store refreshes (and rotates) first.
	sib := newHarness(t, srv, func(o *Options) { o.StorePath = h.store; o.Clock = h.clock })
	_, sgen := sib.c.BearerToken(context.Background())
	srv.RevokeAccessTokens()
	retry, err := sib.c.Unauthorized(context.Background(), sgen, challenge(srv))
	is.NoErr(err)
	is.True(retry)
	is.Equal(srv.Count("/token", "refresh_token"), 1)

	// This process still holds the old token, whose refresh token is now
	// spent: it must adopt the sibling's token, not refresh or sign in.
	_, gen := h.c.BearerToken(context.Background())
	retry, err = h.c.Unauthorized(context.Background(), gen, challenge(srv))
	is.NoErr(err)
	is.True(retry)
	is.Equal(srv.Count("/token", "refresh_token"), 1) // nothing spent
	is.Equal(srv.Count("/authorize", ""), 1)          // no new sign-in
	tok, _ := h.c.BearerToken(context.Background())
	stok, _ := sib.c.BearerToken(context.Background())
	is.Equal(tok, stok)
}

func TestFirstUnauthorizedSignsInInTheForeground(t *testing.T) {
	is := is.New(t)
	// The server answers even initialize with 401, with a Negotiate
	// challenge only (typescript-sdk#1946): discovery still runs.
	srv := authtest.NewServer(t, authtest.Options{ChallengeScheme: "Negotiate"})
	h := newHarness(t, srv, nil)
	resp := post(t, h.c, srv, "initialize", "")
	is.Equal(resp.StatusCode, http.StatusUnauthorized)
	retry, err := h.c.Unauthorized(context.Background(), h.c.Generation(), resp.Header)
	is.NoErr(err)
	is.True(retry)
	is.Equal(post(t, h.c, srv, "initialize", "").StatusCode, http.StatusOK)
}

func TestDeadGrantSignsInInTheBackground(t *testing.T) {
	is := is.New(t)
	release := make(chan struct{})
	h, srv := signedIn(t, authtest.Options{TokenTTL: time.Hour}, nil)
	h.c.openURL = func(_ context.Context, u string) error {
		go func() { // the user takes their time
			<-release
			authtest.Visit(u)
		}()
		return nil
	}
	srv.RevokeAccessTokens()
	srv.RevokeRefreshTokens()
	first, _ := h.c.store.load(h.c.resource)

	_, gen := h.c.BearerToken(context.Background())
	retry, err := h.c.Unauthorized(context.Background(), gen, challenge(srv))
	is.True(!retry)
	var ra *ReauthorizingError
	is.True(errors.As(err, &ra)) // answered at once, -32002
	is.Equal(err.Error(), "authorization required: sign-in started in the browser; retry")
	e, _ := h.c.store.load(h.c.resource)
	is.Equal(e.AccessToken, "")              // the dead grant is gone from the store
	is.Equal(e.ClientID, first.ClientID)     // but not the registration
	is.Equal(srv.Count("/register", ""), 1)  // which the new sign-in reuses
	is.Equal(srv.Count("/authorize", ""), 1) // the background one has not reached the server yet
	is.Equal(srv.Count("/token", "refresh_token"), 1)

	// While it runs, further 401s say so without starting another.
	_, gen = h.c.BearerToken(context.Background())
	retry, err = h.c.Unauthorized(context.Background(), gen, challenge(srv))
	is.True(!retry)
	is.True(errors.As(err, &ra))
	is.True(strings.Contains(err.Error(), "in progress"))

	close(release)
	is.NoErr(h.waitFlight(t))
	tok, err := h.c.Token(context.Background())
	is.NoErr(err)
	is.True(srv.ValidAccessToken(tok))
	is.Equal(srv.Count("/register", ""), 1)
	is.Equal(srv.Count("/token", "authorization_code"), 2)
}

// A token the server stops accepting, from a server that issued no refresh
// token: the background sign-in must not take the refused token back from
// the store as if a sibling process had put it there.
func TestRejectedTokenWithoutRefreshTokenSignsInAgain(t *testing.T) {
	is := is.New(t)
	h, srv := signedIn(t, authtest.Options{TokenTTL: time.Hour, NoRefreshTokens: true}, nil)
	rejected, err := h.c.Token(context.Background())
	is.NoErr(err)
	srv.RevokeAccessTokens()

	_, gen := h.c.BearerToken(context.Background())
	retry, err := h.c.Unauthorized(context.Background(), gen, challenge(srv))
	is.True(!retry)
	var ra *ReauthorizingError
	is.True(errors.As(err, &ra)) // -32002, sign-in under way
	e, _ := h.c.store.load(h.c.resource)
	is.Equal(e.AccessToken, "") // the refused token is gone from the store

	is.NoErr(h.waitFlight(t))
	tok, err := h.c.Token(context.Background())
	is.NoErr(err)
	is.True(tok != rejected)
	is.True(srv.ValidAccessToken(tok))
}

func TestDeadGrantCooldown(t *testing.T) {
	is := is.New(t)
	h, srv := signedIn(t, authtest.Options{}, nil)
	srv.RevokeAccessTokens()
	srv.RevokeRefreshTokens()
	srv.Update(func(o *authtest.Options) { o.Iss = authtest.IssWrong }) // the next sign-in fails at once

	_, gen := h.c.BearerToken(context.Background())
	_, err := h.c.Unauthorized(context.Background(), gen, challenge(srv))
	var ra *ReauthorizingError
	is.True(errors.As(err, &ra))
	// The sign-in fails at once: it may have ended before waitFlight looks
	// (WaitSignIn then has no flight to report), so its failure shows in
	// the cooldown below, which only a failed sign-in starts.
	_ = h.waitFlight(t)

	_, err = h.c.Unauthorized(context.Background(), h.c.Generation(), challenge(srv))
	is.True(err != nil)
	is.True(!errors.As(err, &ra)) // cooling down: nothing started
	is.True(strings.Contains(err.Error(), "next one may start in 1m0s"))
	is.Equal(srv.Count("/authorize", ""), 2)

	h.clock.Advance(DefaultCooldown)
	srv.Update(func(o *authtest.Options) { o.Iss = authtest.IssCorrect })
	_, err = h.c.Unauthorized(context.Background(), h.c.Generation(), challenge(srv))
	is.True(errors.As(err, &ra)) // after the cooldown, a new one
	is.NoErr(h.waitFlight(t))
	_, err = h.c.Token(context.Background())
	is.NoErr(err)
}

func TestDeadGrantWithoutReauth(t *testing.T) {
	is := is.New(t)
	h, srv := signedIn(t, authtest.Options{}, func(o *Options) { o.NoReauth = true })
	srv.RevokeAccessTokens()
	srv.RevokeRefreshTokens()
	_, gen := h.c.BearerToken(context.Background())
	retry, err := h.c.Unauthorized(context.Background(), gen, challenge(srv))
	is.True(!retry)
	var ra *ReauthorizingError
	is.True(err != nil && !errors.As(err, &ra))
	is.Equal(srv.Count("/authorize", ""), 1) // no sign-in
}

func TestRefreshedTokenRejectedAgainIsADeadGrant(t *testing.T) {
	is := is.New(t)
	// The server rejects every token of this grant (its authorization
	// server changed, SEP-2352), yet refreshing still "works".
	h, srv := signedIn(t, authtest.Options{}, nil)
	h.c.openURL = func(context.Context, string) error { return nil } // the user is away
	_, gen := h.c.BearerToken(context.Background())
	retry, err := h.c.Unauthorized(context.Background(), gen, challenge(srv))
	is.NoErr(err)
	is.True(retry) // refreshed
	_, gen = h.c.BearerToken(context.Background())
	retry, err = h.c.Unauthorized(context.Background(), gen, challenge(srv))
	is.True(!retry)
	var ra *ReauthorizingError
	is.True(errors.As(err, &ra))                      // not a second refresh: a sign-in
	is.Equal(srv.Count("/token", "refresh_token"), 1) // refreshed once only
}

// SEP-2352: the server's protected resource metadata comes to name
// another authorization server. The 401 that follows is not a dead grant
// to refresh at the old one: the relay signs in at the new one while the
// request waits, registering there, and presents nothing of the old one
// (its client id, its refresh token) anywhere.
func TestAuthorizationServerMigrationSignsInAnew(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	h, srv := signedIn(t, authtest.Options{TokenTTL: time.Hour}, nil)
	as2 := authtest.NewServer(t, authtest.Options{})
	old, _ := h.c.store.load(h.c.resource)
	is.Equal(old.Issuer, srv.Issuer())
	srv.Update(func(o *authtest.Options) { o.PRMServers = []string{as2.Issuer()} })

	_, gen := h.c.BearerToken(ctx)
	retry, err := h.c.Unauthorized(ctx, gen, challenge(srv))
	is.NoErr(err)
	is.True(retry)                                    // signed in while the request waited: no -32002
	is.Equal(srv.Count("/token", "refresh_token"), 0) // nothing spent at the old one
	is.Equal(srv.Count("/register", ""), 1)           // the first sign-in's only
	is.Equal(as2.Count("/register", ""), 1)           // a registration of its own
	for _, r := range as2.Requests() {
		is.True(r.Query.Get("client_id") != old.ClientID) // the old client is not presented
		is.True(r.Form.Get("client_id") != old.ClientID)
		is.True(r.Form.Get("refresh_token") == "" || r.Form.Get("refresh_token") != old.RefreshToken)
	}
	e, _ := h.c.store.load(h.c.resource)
	is.Equal(e.Issuer, as2.Issuer())
	is.True(e.ClientID != old.ClientID)
	is.Equal(e.TokenEndpoint, as2.Issuer()+"/token")
	tok, err := h.c.Token(ctx)
	is.NoErr(err)
	is.True(as2.ValidAccessToken(tok))
	is.True(strings.Contains(h.log.String(), "names another authorization server"))

	// The next 401 (the new token refused, say) is an ordinary one again:
	// no migration, a refresh at the new authorization server.
	as2.RevokeAccessTokens()
	_, gen = h.c.BearerToken(ctx)
	retry, err = h.c.Unauthorized(ctx, gen, challenge(srv))
	is.NoErr(err)
	is.True(retry)
	is.Equal(as2.Count("/token", "refresh_token"), 1)
	is.Equal(as2.Count("/register", ""), 1)
}

// A pre-registered client belongs to the authorization server it was
// registered with: it is not taken to another one.
func TestAuthorizationServerMigrationWithAPreRegisteredClient(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	h, srv := signedIn(t, authtest.Options{PreRegistered: map[string]string{"pre-1": ""}}, func(o *Options) { o.ClientID = "pre-1" })
	as2 := authtest.NewServer(t, authtest.Options{PreRegistered: map[string]string{"pre-1": ""}})
	srv.Update(func(o *authtest.Options) { o.PRMServers = []string{as2.Issuer()} })
	_, gen := h.c.BearerToken(ctx)
	retry, err := h.c.Unauthorized(ctx, gen, challenge(srv))
	is.True(!retry)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "the pre-registered client (--client-id) is "+srv.Issuer()+"'s: register a client with "+as2.Issuer()))
	is.Equal(len(as2.Requests()), 0) // nothing sent there
}

func TestForbiddenStepsUpWithTheUnionOfScopes(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{
		ChallengeScope: "mcp:basic",
		RequiredScopes: map[string][]string{"tools/list": {"mcp:basic"}, "tools/call": {"mcp:write"}},
	})
	h := newHarness(t, srv, nil)
	resp := post(t, h.c, srv, "tools/list", "")
	retry, err := h.c.Unauthorized(context.Background(), 0, resp.Header)
	is.NoErr(err)
	is.True(retry)
	is.Equal(post(t, h.c, srv, "tools/list", "").StatusCode, http.StatusOK)

	resp = post(t, h.c, srv, "tools/call", "")
	is.Equal(resp.StatusCode, http.StatusForbidden)
	retry, err = h.c.Forbidden(context.Background(), 0, resp.Header)
	is.NoErr(err)
	is.True(retry)
	is.Equal(last(t, srv, "/authorize").Query.Get("scope"), "mcp:basic mcp:write") // the union (claude-code#44652, SEP-2350)
	is.Equal(srv.Count("/register", ""), 1)                                        // same client
	is.Equal(post(t, h.c, srv, "tools/call", "").StatusCode, http.StatusOK)
	is.Equal(post(t, h.c, srv, "tools/list", "").StatusCode, http.StatusOK) // nothing lost
}

func TestForbiddenStepUpLimit(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{ChallengeScope: "mcp:admin"})
	h := newHarness(t, srv, nil)
	_, err := h.c.Unauthorized(context.Background(), 0, challenge(srv))
	is.NoErr(err)
	forbidden := http.Header{}
	forbidden.Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="mcp:admin", error_description="never enough"`)
	for i := 0; i < DefaultStepUpLimit; i++ {
		retry, err := h.c.Forbidden(context.Background(), h.c.Generation(), forbidden)
		is.NoErr(err)
		is.True(retry)
	}
	retry, err := h.c.Forbidden(context.Background(), h.c.Generation(), forbidden)
	is.True(!retry)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "already tried"))
	is.Equal(srv.Count("/authorize", ""), 1+DefaultStepUpLimit) // bounded (conformance auth/scope-retry-limit: ≤ 3)

	plain := http.Header{}
	plain.Set("WWW-Authenticate", `Bearer error="invalid_request"`)
	retry, err = h.c.Forbidden(context.Background(), h.c.Generation(), plain)
	is.NoErr(err)
	is.True(!retry) // not insufficient_scope: the 403 stands
}

func TestBackgroundRefreshBeforeExpiry(t *testing.T) {
	for _, tt := range []struct {
		ttl, at time.Duration
	}{
		{ttl: 1000 * time.Second, at: 800 * time.Second}, // 80% of the lifetime comes first
		{ttl: 200 * time.Second, at: 140 * time.Second},  // 60 s before expiry comes first
	} {
		t.Run(tt.ttl.String(), func(t *testing.T) {
			is := is.New(t)
			h, srv := signedIn(t, authtest.Options{TokenTTL: tt.ttl}, nil)
			start := h.clock.Now()
			h.clock.WaitForWaiter(t, start.Add(tt.at))
			h.clock.Advance(tt.at - time.Second)
			is.Equal(srv.Count("/token", "refresh_token"), 0) // not yet
			h.clock.Advance(time.Second)
			// The next refresh being scheduled means this one is done.
			h.clock.WaitForWaiter(t, start.Add(2*tt.at))
			is.Equal(srv.Count("/token", "refresh_token"), 1)
			tok, err := h.c.Token(context.Background())
			is.NoErr(err)
			is.True(srv.ValidAccessToken(tok))
		})
	}
}

func TestBackgroundRefreshRetriesAfterAFailure(t *testing.T) {
	is := is.New(t)
	h, srv := signedIn(t, authtest.Options{TokenTTL: 1000 * time.Second}, nil)
	start := h.clock.Now()
	h.c.http = &http.Client{Transport: failingTransport{}}
	h.clock.AdvanceWhenWaiting(t, 800*time.Second)
	h.clock.WaitForWaiter(t, start.Add(800*time.Second+refreshRetry)) // a retry, not a tight loop
	h.c.http = &http.Client{}
	h.clock.Advance(refreshRetry)
	h.clock.WaitForWaiter(t, start.Add(800*time.Second+refreshRetry+800*time.Second))
	is.Equal(srv.Count("/token", "refresh_token"), 1)
}

type failingTransport struct{}

func (failingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, &url.Error{Op: "Post", URL: "x", Err: errors.New("connection refused")}
}

func TestExpiredTokenIsRefreshedBeforeUse(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{TokenTTL: time.Minute})
	h := newHarness(t, srv, nil)
	is.NoErr(h.c.SignIn(context.Background()))
	old, _ := h.c.BearerToken(context.Background())
	h.clock.Advance(2 * time.Minute)
	tok, err := h.c.Token(context.Background())
	is.NoErr(err)
	is.True(tok != old)
	is.True(srv.ValidAccessToken(tok))
}

func TestEagerRunSignsInAtOnce(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{})
	opened, hold := make(chan struct{}), make(chan struct{})
	h := newHarness(t, srv, func(o *Options) {
		o.Eager = true
		o.OpenURL = func(_ context.Context, u string) error {
			close(opened)
			<-hold
			return authtest.Visit(u)
		}
	})
	h.run(t)
	<-opened // the sign-in started on its own, before anything asked for a token
	got := make(chan string, 1)
	go func() { tok, _ := h.c.BearerToken(context.Background()); got <- tok }() // waits for the sign-in
	close(hold)
	tok := <-got
	is.True(srv.ValidAccessToken(tok))
	is.Equal(srv.Count("/mcp", ""), 0) // no request was needed to start it
}

func TestTokenWithoutAnySignIn(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{})
	h := newHarness(t, srv, nil)
	_, err := h.c.Token(context.Background())
	is.True(errors.Is(err, ErrSignInRequired))
	is.Equal(len(srv.Requests()), 0) // a stored token is looked for; the network is not touched
	is.NoErr(h.c.EnsureToken(context.Background()))
	_, err = h.c.Token(context.Background())
	is.NoErr(err)
}

func TestNewRejectsBadOptions(t *testing.T) {
	for name, o := range map[string]Options{
		"no URL":            {},
		"not http":          {ServerURL: "ftp://h/x"},
		"secret without id": {ServerURL: "https://h/mcp", ClientSecret: "s"},
		"CIMD over http":    {ServerURL: "https://h/mcp", ClientMetadataURL: "http://c.example/x.json"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(o)
			is.New(t).True(err != nil)
		})
	}
}
