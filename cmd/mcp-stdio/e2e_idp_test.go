package main_test

import (
	"net/url"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/auth/authtest"
	"github.com/mcp-stdio/mcp-stdio/frame"
)

// The authorization request the browser stand-in follows, for an
// identity provider that refuses RFC 8707's resource (as Entra ID does)
// and wants parameters of its own: every --oauth-param is on it, resource
// is on neither it nor the token request, and the sign-in succeeds.
func TestRelayOAuthParamsSeenByTheBrowser(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{RefuseResource: true})
	r := startOAuthRelay(t, srv, t.TempDir(),
		"--oauth-param", "access_type=offline", "--oauth-param", "audience=https://api.example.com",
		"--no-oauth-resource")
	is.Equal(r.call(t, 1, "tools/list").Kind(), frame.Result)
	var az, tok url.Values
	for _, req := range srv.Requests() {
		switch req.Path {
		case "/authorize":
			az = req.Query
		case "/token":
			tok = req.Form
		}
	}
	is.Equal(az.Get("access_type"), "offline")
	is.Equal(az.Get("audience"), "https://api.example.com")
	is.Equal(az.Get("response_type"), "code")
	is.True(!az.Has("resource"))
	is.True(tok != nil && !tok.Has("resource"))
}

// Two relays of one server, sharing a token store, that meet their first
// 401 at once (two hosts starting together) open one browser between
// them: one signs in, the other waits on the store's sign-in lock and
// takes its token.
func TestRelayOAuthTwoRelaysSignInAtOnce(t *testing.T) {
	is := is.New(t)
	srv := authtest.NewServer(t, authtest.Options{})
	store := t.TempDir()
	a := startOAuthRelay(t, srv, store)
	b := startOAuthRelay(t, srv, store)
	var wg sync.WaitGroup
	answers := make([]frame.Message, 2)
	for i, r := range []*oauthRelay{a, b} {
		wg.Go(func() { answers[i] = r.call(t, 1, "tools/list") })
	}
	wg.Wait()
	for _, m := range answers {
		is.Equal(m.Kind(), frame.Result)
	}
	is.Equal(srv.Count("/authorize", ""), 1) // one browser
	is.Equal(srv.Count("/token", "authorization_code"), 1)
}
