package auth

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/auth/authtest"
)

// An identity provider that refuses RFC 8707's resource (Entra ID's
// AADSTS9010010): without NoResource the sign-in fails with the
// provider's words; with it, resource is in none of the authorization,
// token and refresh requests, and AuthParams ride on the authorization
// request as given.
func TestSignInWithAuthParamsAndWithoutResource(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{TokenTTL: time.Hour, RefuseResource: true})

	h := newHarness(t, srv, nil)
	err := h.c.SignIn(context.Background())
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "AADSTS9010010")) // the provider's error reaches the user

	params := url.Values{"access_type": {"offline"}, "audience": {"https://api.example.com"}, "prompt": {"consent"}}
	h = newHarness(t, srv, func(o *Options) { o.AuthParams = params; o.NoResource = true })
	is.NoErr(h.c.SignIn(context.Background()))
	az := last(t, srv, "/authorize").Query
	is.True(!az.Has("resource"))
	is.Equal(az.Get("access_type"), "offline")
	is.Equal(az.Get("audience"), "https://api.example.com")
	is.Equal(az.Get("prompt"), "consent")
	is.Equal(az.Get("response_type"), "code") // the flow's own parameters untouched
	is.Equal(az.Get("code_challenge_method"), "S256")
	tok := last(t, srv, "/token").Form
	is.Equal(tok.Get("grant_type"), "authorization_code")
	is.True(!tok.Has("resource"))

	h.run(t)
	srv.RevokeAccessTokens()
	resp := post(t, h.c, srv, "tools/call", "")
	is.Equal(resp.StatusCode, http.StatusUnauthorized)
	retry, err := h.c.Unauthorized(context.Background(), 0, resp.Header)
	is.NoErr(err)
	is.True(retry)
	tok = last(t, srv, "/token").Form
	is.Equal(tok.Get("grant_type"), "refresh_token")
	is.True(!tok.Has("resource")) // nor on refresh
	is.Equal(post(t, h.c, srv, "tools/call", "").StatusCode, http.StatusOK)
}

// The device grant carries AuthParams and leaves resource out too.
func TestDeviceGrantWithAuthParamsAndWithoutResource(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{TokenTTL: time.Hour, Device: true, DeviceInterval: 1})
	h := newHarness(t, srv, func(o *Options) {
		o.Device = true
		o.NoResource = true
		o.AuthParams = url.Values{"audience": {"aud-1"}}
	})
	done := make(chan error, 1)
	go func() { done <- h.c.SignIn(context.Background()) }()
	h.clock.AdvanceWhenWaiting(t, time.Second)
	is.NoErr(<-done)
	da := last(t, srv, "/device").Form
	is.Equal(da.Get("audience"), "aud-1")
	is.True(!da.Has("resource"))
	is.True(!last(t, srv, "/token").Form.Has("resource"))
}

// The parameters the flow sets itself cannot be given, and each refusal
// says what to use instead.
func TestNewRefusesReservedAuthParams(t *testing.T) {
	is := is.New(t)
	for name, hint := range map[string]string{
		"response_type": "sets it", "response_mode": "query of a GET", "client_id": "--client-id", "redirect_uri": "--oauth-callback-port",
		"state": "sets it", "code_challenge": "PKCE", "code_challenge_method": "PKCE",
		"scope": "--oauth-scope", "resource": "--no-oauth-resource",
	} {
		_, err := New(Options{ServerURL: "https://mcp.example.com/mcp", StorePath: t.TempDir() + "/t.json", AuthParams: url.Values{name: {"x"}}})
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), fmt.Sprintf("%q", name)))
		is.True(strings.Contains(err.Error(), hint))
	}
}

// A fixed callback port that another process holds: the error names the
// port and, on Linux, the process listening there (here, this test).
func TestCallbackPortTakenNamesTheProcess(t *testing.T) {
	is := is.New(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	_, err = startCallback(port, "st", "https://as", false)
	is.True(err != nil)
	msg := err.Error()
	is.True(strings.Contains(msg, fmt.Sprintf("on port %d", port)))
	is.True(strings.Contains(msg, "--oauth-callback-port"))
	if runtime.GOOS == "linux" {
		is.True(strings.Contains(msg, fmt.Sprintf("pid %d (", os.Getpid())))
	}

	// Without a fixed port the system picks a free one, whatever is taken.
	cb, err := startCallback(0, "st", "https://as", false)
	is.NoErr(err)
	defer cb.close()
	is.True(!strings.HasSuffix(cb.redirectURI(), fmt.Sprintf(":%d/callback", port)))
}

// Two clients of one server sharing a token store (two relays) signing
// in at once open one browser between them: the second waits on the
// store's per-server sign-in lock and takes the first one's token.
func TestConcurrentSignInsOpenOneBrowser(t *testing.T) {
	if !fileLocking {
		t.Skip("no file locks on this platform")
	}
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{TokenTTL: time.Hour})
	var mu sync.Mutex
	opened := 0
	open := func(_ context.Context, u string) error {
		mu.Lock()
		opened++
		mu.Unlock()
		return authtest.Visit(u)
	}
	a := newHarness(t, srv, func(o *Options) { o.OpenURL = open })
	b := newHarness(t, srv, func(o *Options) { o.OpenURL = open; o.StorePath = a.store })
	errs := make(chan error, 2)
	for _, h := range []*harness{a, b} {
		go func() { errs <- h.c.SignIn(context.Background()) }()
	}
	is.NoErr(<-errs)
	is.NoErr(<-errs)
	is.Equal(opened, 1)
	is.Equal(srv.Count("/token", "authorization_code"), 1)
	ta, _ := a.c.BearerToken(context.Background())
	tb, _ := b.c.BearerToken(context.Background())
	is.Equal(ta, tb)
}
