package auth

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/auth/authtest"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// last returns the last recorded request to path.
func last(t *testing.T, srv *authtest.Server, path string) authtest.Request {
	t.Helper()
	reqs := srv.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Path == path {
			return reqs[i]
		}
	}
	t.Fatalf("no request to %s", path)
	return authtest.Request{}
}

func TestSignInWithDynamicRegistration(t *testing.T) {
	is := is.New(t)
	// The registration endpoint sits under a path; it must be used as
	// advertised, not guessed (mcp-remote#241).
	srv := authtest.NewServer(t, authtest.Options{IssuerPath: "/s2/oauth", TokenTTL: time.Hour})
	h := newHarness(t, srv, nil)
	is.NoErr(h.c.SignIn(context.Background()))

	reg := last(t, srv, "/s2/oauth/register")
	is.Equal(reg.JSON["client_name"], "mcp-stdio")
	is.Equal(reg.JSON["application_type"], "native") // SEP-837
	is.Equal(reg.JSON["token_endpoint_auth_method"], "none")
	is.Equal(fmt.Sprint(reg.JSON["grant_types"]), "[authorization_code refresh_token]")
	is.Equal(fmt.Sprint(reg.JSON["response_types"]), "[code]")
	redirects := reg.JSON["redirect_uris"].([]any)
	is.Equal(len(redirects), 1)
	redirect := redirects[0].(string)
	is.True(strings.HasPrefix(redirect, "http://127.0.0.1:"))
	is.True(strings.HasSuffix(redirect, "/callback"))

	az := last(t, srv, "/s2/oauth/authorize").Query
	is.Equal(az.Get("response_type"), "code")
	is.Equal(az.Get("code_challenge_method"), "S256")
	is.Equal(len(az.Get("code_challenge")), 43)
	is.Equal(len(az.Get("state")), 43) // 32 random bytes
	is.Equal(az.Get("redirect_uri"), redirect)
	is.Equal(az.Get("resource"), srv.MCPURL()) // RFC 8707
	is.True(!az.Has("prompt"))                 // claude-code#49722
	is.True(!az.Has("scope"))                  // nothing to ask for: omitted

	tok := last(t, srv, "/s2/oauth/token").Form
	is.Equal(tok.Get("grant_type"), "authorization_code")
	is.Equal(tok.Get("redirect_uri"), redirect)
	is.Equal(tok.Get("resource"), srv.MCPURL())
	verifier := tok.Get("code_verifier")
	is.True(len(verifier) >= 43 && len(verifier) <= 128)

	e, err := h.c.store.load(h.c.resource)
	is.NoErr(err)
	is.True(srv.ValidAccessToken(e.AccessToken))
	is.Equal(e.Issuer, srv.Issuer())
	is.Equal(e.ClientID, reg.JSON["client_name"].(string)[:0]+e.ClientID)
	raw, err := os.ReadFile(h.store)
	is.NoErr(err)
	is.True(!strings.Contains(string(raw), verifier)) // the PKCE verifier never touches disk (mcp-remote#251)

	is.True(strings.Contains(h.stderr.String(), az.Get("state"))) // the URL is always printed
	got, _ := h.c.BearerToken(context.Background())
	is.Equal(got, e.AccessToken)
}

func TestSignInReusesTheRegistrationOfTheSameIssuer(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{})
	h := newHarness(t, srv, nil)
	ctx := context.Background()
	is.NoErr(h.c.SignIn(ctx))
	is.NoErr(h.c.SignIn(ctx))
	is.Equal(srv.Count("/register", ""), 1) // registered once
	is.Equal(srv.Count("/token", "authorization_code"), 2)
}

func TestSignInReregistersWhenTheIssuerChanges(t *testing.T) {
	is := is.New(t)
	as1 := authtest.NewServer(t, authtest.Options{})
	as2 := authtest.NewServer(t, authtest.Options{})
	h := newHarness(t, as1, nil)
	ctx := context.Background()
	is.NoErr(h.c.SignIn(ctx))
	e, _ := h.c.store.load(h.c.resource)
	firstClient := e.ClientID

	as1.Update(func(o *authtest.Options) { o.PRMServers = []string{as2.Issuer()} }) // SEP-2352
	is.NoErr(h.c.SignIn(ctx))
	is.Equal(as2.Count("/register", ""), 1) // a new registration with the new issuer
	for _, r := range as2.Requests() {
		is.True(r.Query.Get("client_id") != firstClient) // the old client never shows up there
		is.True(r.Form.Get("client_id") != firstClient)
	}
	e, _ = h.c.store.load(h.c.resource)
	is.Equal(e.Issuer, as2.Issuer())
}

func TestSignInRegistersAgainWhenTheSecretExpired(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{})
	h := newHarness(t, srv, nil)
	past := float64(h.clock.Now().Add(-time.Minute).Unix())
	put(t, h.c.store, h.c.resource, &storeEntry{ClientID: "old", ClientSecret: "s", ClientSecretExpiresAt: &past, Issuer: srv.Issuer()})
	is.NoErr(h.c.SignIn(context.Background()))
	is.Equal(srv.Count("/register", ""), 1)
	is.True(last(t, srv, "/authorize").Query.Get("client_id") != "old")
}

func TestSignInPreRegisteredClient(t *testing.T) {
	for _, method := range []string{"client_secret_basic", "client_secret_post", "none"} {
		t.Run(method, func(t *testing.T) {
			is := is.New(t)
			secret := "pre-registered-secret"
			if method == "none" {
				secret = ""
			}
			srv := authtest.NewServer(t, authtest.Options{
				NoRegistration: true, // claude-code#3273: --client-id skips DCR
				AuthMethods:    []string{method},
				PreRegistered:  map[string]string{"pre-registered-client": secret},
			})
			h := newHarness(t, srv, func(o *Options) { o.ClientID, o.ClientSecret = "pre-registered-client", secret })
			is.NoErr(h.c.SignIn(context.Background()))
			is.Equal(srv.Count("/register", ""), 0)
			tok := last(t, srv, "/token")
			switch method {
			case "client_secret_basic":
				is.True(strings.HasPrefix(tok.Authorization, "Basic "))
				is.True(!tok.Form.Has("client_secret"))
			case "client_secret_post":
				is.Equal(tok.Authorization, "")
				is.Equal(tok.Form.Get("client_secret"), secret)
			case "none":
				is.Equal(tok.Authorization, "")
				is.Equal(tok.Form.Get("client_id"), "pre-registered-client")
			}
			raw, _ := os.ReadFile(h.store)
			if secret != "" {
				is.True(!strings.Contains(string(raw), secret)) // the secret stays where the user keeps it
			}
			// And it refreshes with the same credentials.
			srv.RevokeAccessTokens()
			_, gen := h.c.BearerToken(context.Background())
			retry, err := h.c.Unauthorized(context.Background(), gen, challenge(srv))
			is.NoErr(err)
			is.True(retry)
		})
	}
}

func TestSignInClientIDMetadataDocument(t *testing.T) {
	const cimd = "https://client.example/mcp-stdio.json"
	t.Run("advertised", func(t *testing.T) {
		is := is.New(t)
		srv := authtest.NewServer(t, authtest.Options{CIMD: true})
		h := newHarness(t, srv, func(o *Options) { o.ClientMetadataURL = cimd })
		is.NoErr(h.c.SignIn(context.Background()))
		is.Equal(srv.Count("/register", ""), 0)
		is.Equal(last(t, srv, "/authorize").Query.Get("client_id"), cimd)
	})
	t.Run("not advertised: DCR", func(t *testing.T) {
		is := is.New(t)
		srv := authtest.NewServer(t, authtest.Options{})
		h := newHarness(t, srv, func(o *Options) { o.ClientMetadataURL = cimd })
		is.NoErr(h.c.SignIn(context.Background()))
		is.Equal(srv.Count("/register", ""), 1)
	})
	t.Run("must be an https URL with a path", func(t *testing.T) {
		_, err := New(Options{ServerURL: "https://h/mcp", ClientMetadataURL: "https://client.example/"})
		is.New(t).True(err != nil)
	})
}

func TestSignInRegistrationFollowsAdvertisedAuthMethod(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{AuthMethods: []string{"client_secret_basic"}})
	h := newHarness(t, srv, nil)
	is.NoErr(h.c.SignIn(context.Background()))
	is.Equal(last(t, srv, "/register").JSON["token_endpoint_auth_method"], "client_secret_basic")
	is.True(strings.HasPrefix(last(t, srv, "/token").Authorization, "Basic "))
}

func TestSignInNoRegistrationEndpoint(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{NoRegistration: true})
	h := newHarness(t, srv, nil)
	err := h.c.SignIn(context.Background())
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "pre-registered client")) // says what to do
	is.Equal(srv.Count("/register", ""), 0)                         // never a guessed path
}

func TestSignInAuthorizationResponseChecks(t *testing.T) {
	tamperState := func(u string) string {
		pu, _ := url.Parse(u)
		q := pu.Query()
		q.Set("state", "forged-"+q.Get("state")[7:])
		pu.RawQuery = q.Encode()
		return pu.String()
	}
	tests := []struct {
		name   string
		o      authtest.Options
		tamper func(string) string
		want   string // "" = success
	}{
		{name: "iss advertised and correct", o: authtest.Options{IssSupported: true}},
		{name: "iss neither advertised nor sent", o: authtest.Options{Iss: authtest.IssOmit}},
		{name: "wrong state", tamper: tamperState, want: "state mismatch"},
		{name: "wrong iss", o: authtest.Options{IssSupported: true, Iss: authtest.IssWrong}, want: "RFC 9207"},
		{name: "unadvertised wrong iss", o: authtest.Options{Iss: authtest.IssWrong}, want: "RFC 9207"},
		{name: "iss with a trailing slash is not normalised", o: authtest.Options{IssSupported: true, Iss: authtest.IssTrailingSlash}, want: "RFC 9207"},
		{name: "iss missing although advertised", o: authtest.Options{IssSupported: true, Iss: authtest.IssOmit}, want: "no iss"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			srv := authtest.NewServer(t, tt.o)
			h := newHarness(t, srv, func(o *Options) {
				if tt.tamper != nil {
					o.OpenURL = func(_ context.Context, u string) error { return authtest.Visit(tt.tamper(u)) }
				}
			})
			err := h.c.SignIn(context.Background())
			if tt.want == "" {
				is.NoErr(err)
				return
			}
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), tt.want))        // one clear message
			is.Equal(srv.Count("/token", "authorization_code"), 0) // the code was never exchanged
		})
	}
}

func TestSignInAuthorizationError(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{})
	h := newHarness(t, srv, func(o *Options) {
		o.OpenURL = func(_ context.Context, u string) error {
			pu, _ := url.Parse(u)
			q := pu.Query()
			back := q.Get("redirect_uri") + "?" + url.Values{"state": {q.Get("state")}, "error": {"access_denied"}, "error_description": {"the user said no"}}.Encode()
			return authtest.Visit(back)
		}
	})
	err := h.c.SignIn(context.Background())
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "access_denied: the user said no"))
}

func TestCallbackListener(t *testing.T) {
	is := is.New(t)
	cb, err := startCallback(0, "st", "https://as", false)
	is.NoErr(err)
	defer cb.close()
	base := strings.TrimSuffix(cb.redirectURI(), "/callback")
	for _, p := range []string{"/", "/favicon.ico", "/callback/extra", "/CALLBACK", "/callback%2F"} {
		resp, err := http.Get(base + p)
		is.NoErr(err)
		resp.Body.Close()
		is.Equal(resp.StatusCode, http.StatusNotFound) // only the exact path
	}
	resp, err := http.Post(cb.redirectURI(), "text/plain", nil)
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusMethodNotAllowed)
	select {
	case <-cb.results:
		t.Fatal("a wrong request was taken as the answer")
	default:
	}
	resp, err = http.Get(cb.redirectURI() + "?state=st&code=c")
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusOK)
	is.Equal(resp.Header.Get("Content-Type"), "text/html; charset=utf-8")
	res := <-cb.results
	is.NoErr(res.err)
	is.Equal(res.code, "c")
	resp, err = http.Get(cb.redirectURI() + "?state=st&code=again")
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusConflict) // the first answer ends the flow
}

func TestConcurrentFlowsAreIsolated(t *testing.T) {
	// mcp-remote#251/#253: two processes (here: clients with their own
	// stores) sign in at once; each has its own port and verifier.
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{})
	a := newHarness(t, srv, nil)
	b := newHarness(t, srv, nil)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, h := range []*harness{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = h.c.SignIn(context.Background())
		}()
	}
	wg.Wait()
	is.NoErr(errs[0])
	is.NoErr(errs[1])
	var redirects []string
	for _, r := range srv.Requests() {
		if r.Path == "/authorize" {
			redirects = append(redirects, r.Query.Get("redirect_uri"))
		}
	}
	is.Equal(len(redirects), 2)
	is.True(redirects[0] != redirects[1]) // a fresh ephemeral port per flow
}

func TestSignInScopeSelection(t *testing.T) {
	tests := []struct {
		name      string
		o         authtest.Options
		flag      string
		challenge bool
		want      string // "" = no scope parameter
	}{
		{name: "challenge scope (claude-code#4540)", o: authtest.Options{ChallengeScope: "mcp:basic", PRMScopes: []string{"mcp:profile"}}, challenge: true, want: "mcp:basic"},
		{name: "PRM scopes_supported", o: authtest.Options{PRMScopes: []string{"mcp:basic", "mcp:read", "mcp:write"}}, challenge: true, want: "mcp:basic mcp:read mcp:write"},
		{name: "omitted when nothing says", challenge: true, want: ""},
		{name: "flag wins", o: authtest.Options{ChallengeScope: "mcp:basic"}, flag: "custom:a custom:b", challenge: true, want: "custom:a custom:b"},
		{name: "offline_access when the AS lists it (SEP-2207)", o: authtest.Options{PRMScopes: []string{"mcp:basic"}, ScopesSupported: []string{"mcp:basic", "offline_access"}}, want: "mcp:basic offline_access"},
		{name: "no offline_access when not listed", o: authtest.Options{PRMScopes: []string{"mcp:basic", "mcp:read"}, ScopesSupported: []string{"mcp:basic", "mcp:read"}}, want: "mcp:basic mcp:read"},
		{name: "no lone offline_access", o: authtest.Options{ScopesSupported: []string{"offline_access"}}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			srv := authtest.NewServer(t, tt.o)
			h := newHarness(t, srv, func(o *Options) { o.Scope = tt.flag })
			if tt.challenge {
				// The first 401 signs in in the foreground with its hints.
				retry, err := h.c.Unauthorized(context.Background(), 0, challenge(srv))
				is.NoErr(err)
				is.True(retry)
			} else {
				is.NoErr(h.c.SignIn(context.Background()))
			}
			q := last(t, srv, "/authorize").Query
			is.Equal(q.Has("scope"), tt.want != "")
			is.Equal(q.Get("scope"), tt.want)
		})
	}
}

func TestSignInFormEncodedTokenResponses(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{FormResponses: true, TokenTTL: time.Hour})
	h := newHarness(t, srv, nil)
	is.NoErr(h.c.SignIn(context.Background()))
	tok, err := h.c.Token(context.Background())
	is.NoErr(err)
	is.True(srv.ValidAccessToken(tok))
}

func TestSignInDeviceGrantWithSlowDown(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{Device: true, DevicePending: 1, DeviceSlowDown: 1, DeviceInterval: 5})
	h := newHarness(t, srv, func(o *Options) {
		o.Device = true
		o.OpenURL = func(context.Context, string) error { t.Error("the device grant opened a browser"); return nil }
	})
	done := make(chan error, 1)
	go func() { done <- h.c.SignIn(context.Background()) }()
	h.clock.AdvanceWhenWaiting(t, 5*time.Second)  // poll 1: authorization_pending
	h.clock.AdvanceWhenWaiting(t, 5*time.Second)  // poll 2: slow_down
	h.clock.AdvanceWhenWaiting(t, 10*time.Second) // poll 3, 5 s slower: the token
	is.NoErr(<-done)
	is.Equal(srv.Count("/token", "urn:ietf:params:oauth:grant-type:device_code"), 3)
	is.True(strings.Contains(h.stderr.String(), "WDJB-MJHT"))      // the user code
	is.True(strings.Contains(h.stderr.String(), "/device/verify")) // and where to enter it
	reg := last(t, srv, "/register")
	is.Equal(fmt.Sprint(reg.JSON["grant_types"]), "[urn:ietf:params:oauth:grant-type:device_code refresh_token]")
	is.Equal(last(t, srv, "/device").Form.Get("resource"), srv.MCPURL())
	is.Equal(last(t, srv, "/token").Form.Get("resource"), srv.MCPURL())
	tok, err := h.c.Token(context.Background())
	is.NoErr(err)
	is.True(srv.ValidAccessToken(tok))
}

func TestSignInDeviceGrantUnsupported(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{})
	h := newHarness(t, srv, func(o *Options) { o.Device = true })
	err := h.c.SignIn(context.Background())
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "device grant"))
}

func TestSignInTimeout(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{})
	h := newHarness(t, srv, func(o *Options) {
		o.Timeout = 90 * time.Second
		o.OpenURL = func(context.Context, string) error { return nil } // the user never comes back
	})
	done := make(chan error, 1)
	go func() { done <- h.c.SignIn(context.Background()) }()
	h.clock.AdvanceWhenWaiting(t, 90*time.Second)
	err := <-done
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "timed out after 1m30s"))
}

func TestSignInThroughTheBROWSERVariable(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{})
	h := newHarness(t, srv, func(o *Options) {
		o.OpenURL = nil
		o.Getenv = func(k string) string {
			if k == "BROWSER" {
				// A command with arguments; the URL is appended.
				return os.Args[0] + " browser-helper"
			}
			return ""
		}
	})
	is.NoErr(h.c.SignIn(context.Background()))
	is.Equal(srv.Count("/token", "authorization_code"), 1)
}

func TestOpenBrowserFailsClearly(t *testing.T) {
	is := is.New(t)
	err := openBrowser(func(string) string { return "/nonexistent/browser-a:/nonexistent/browser-b %s" }, "https://as/authorize?x=1", new(sync.WaitGroup))
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "cannot open a browser"))
}

// With a fixed callback port (--oauth-callback-port) the redirect URI
// names it; a port in use is refused with a message that names it.
func TestCallbackOnAFixedPort(t *testing.T) {
	is := is.New(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	port := busy.Addr().(*net.TCPAddr).Port
	_, err = startCallback(port, "st", "https://as", false)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), fmt.Sprintf("on port %d", port)))
	busy.Close()

	cb, err := startCallback(port, "st", "https://as", false)
	is.NoErr(err)
	defer cb.close()
	is.Equal(cb.redirectURI(), fmt.Sprintf("http://127.0.0.1:%d/callback", port))
}

// A sign-in that fails says what to do (Options.Advice) in the warning it
// logs, and only there: the error it returns carries no advice, so that the
// relay, which reports it with a request's failure, adds its own once.
func TestSignInFailureAdvice(t *testing.T) {
	is := is.New(t)
	ca := transporttest.NewCA(t)
	srv := authtest.NewServer(t, authtest.Options{TLS: ca.ServerConfig(t, "127.0.0.1")})
	const advice = "trust the server's CA"
	var asked []error
	h := newHarness(t, srv, func(o *Options) {
		o.Advice = func(err error) string {
			asked = append(asked, err)
			var unknown x509.UnknownAuthorityError
			if errors.As(err, &unknown) {
				return advice
			}
			return ""
		}
	})
	err := h.c.SignIn(context.Background())
	is.True(err != nil)
	is.True(strings.HasPrefix(err.Error(), "sign-in failed: "))
	is.True(!strings.Contains(err.Error(), advice)) // the error carries none
	is.Equal(len(asked), 1)                         // asked once, about the error returned
	is.Equal(asked[0], err)
	line := ""
	for l := range strings.Lines(h.log.String()) {
		if strings.Contains(l, "oauth: sign-in failed") {
			line = l
		}
	}
	is.True(strings.Contains(line, "certificate signed by unknown authority; "+advice)) // the warning ends with it
}
