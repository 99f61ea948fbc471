package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"golang.org/x/crypto/bcrypt"
)

func TestASMetadata(t *testing.T) {
	is := is.New(t)
	ta := newTestAS(t, nil)
	w := ta.do(http.MethodGet, "/.well-known/oauth-authorization-server", "", "")
	is.Equal(w.Code, http.StatusOK)
	var m map[string]any
	is.NoErr(json.Unmarshal(w.Body.Bytes(), &m))
	is.Equal(m["issuer"], testIssuer)
	is.Equal(m["authorization_endpoint"], testIssuer+"/authorize")
	is.Equal(m["token_endpoint"], testIssuer+"/token")
	is.Equal(m["registration_endpoint"], testIssuer+"/register")
	is.Equal(m["revocation_endpoint"], testIssuer+"/revoke")
	is.Equal(m["code_challenge_methods_supported"], []any{"S256"})
	is.Equal(m["token_endpoint_auth_methods_supported"], []any{"none"})
	is.Equal(m["response_types_supported"], []any{"code"})
	is.Equal(m["grant_types_supported"], []any{"authorization_code", "refresh_token"})
	is.Equal(m["authorization_response_iss_parameter_supported"], true)
	is.Equal(m["scopes_supported"], []any{"mcp"})
	_, cimd := m["client_id_metadata_document_supported"]
	is.True(!cimd) // never advertised (row 185)
}

func TestASConfigChecked(t *testing.T) {
	for _, cfg := range []AuthorizationServerConfig{
		{Issuer: "https://as.test/path", Resource: testResource, SignInCode: func(string) {}},
		{Issuer: "ftp://as.test", Resource: testResource, SignInCode: func(string) {}},
		{Issuer: testIssuer, Resource: "/mcp", SignInCode: func(string) {}},
		{Issuer: testIssuer, Resource: testResource}, // the code goes nowhere
		{Issuer: testIssuer, Resource: testResource, SignInCode: func(string) {}, AllowRedirectURIs: []string{"https://x.test/cb#frag"}},
	} {
		_, err := NewAuthorizationServer(cfg)
		if err == nil {
			t.Errorf("%+v: accepted", cfg)
		}
	}
}

// The whole flow: register, consent with the one-time code, exchange, the
// token verifies with the owner as subject, the one-time code is spent.
func TestASSignInWithOneTimeCode(t *testing.T) {
	is := is.New(t)
	ta := newTestAS(t, nil)
	first := ta.code()
	is.Equal(len(first), 14) // XXXX-XXXX-XXXX
	client := ta.register(t)
	p := ta.consentPage(t, authQuery(client))
	is.True(strings.Contains(p.body, "Test Client"))
	is.True(strings.Contains(p.body, "127.0.0.1:9999"))
	is.True(!strings.Contains(strings.ToLower(p.body), "<script"))
	w := ta.answer(p, url.Values{"code": {strings.ToLower(first)}}) // typed in lower case
	q := redirected(t, w)
	is.Equal(q.Get("state"), "st-123")
	is.Equal(q.Get("iss"), testIssuer)
	is.True(ta.code() != first) // spent: a new one is announced

	status, tok := ta.exchange(client, q.Get("code"))
	is.Equal(status, http.StatusOK)
	is.Equal(tok["token_type"], "Bearer")
	is.Equal(tok["expires_in"], float64(3600))
	is.Equal(tok["scope"], "mcp")
	pr, err := ta.Verify(context.Background(), tok["access_token"].(string))
	is.NoErr(err)
	is.Equal(pr.Issuer, testIssuer)
	is.Equal(pr.Subject, OwnerSubject)
	is.Equal(pr.ClientID, client)
	is.Equal(pr.Scopes, []string{"mcp"})
	is.Equal(pr.Key(), testIssuer+" owner")

	// The spent code signs no one in again.
	p = ta.consentPage(t, authQuery(client))
	is.Equal(ta.answer(p, url.Values{"code": {first}}).Code, http.StatusForbidden)
}

func TestASConsentPageHeaders(t *testing.T) {
	is := is.New(t)
	ta := newTestAS(t, nil)
	client := ta.register(t)
	w := ta.do(http.MethodGet, "/authorize?"+authQuery(client).Encode(), "", "")
	is.Equal(w.Code, http.StatusOK)
	h := w.Header()
	is.Equal(h.Get("X-Frame-Options"), "DENY")
	is.True(strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'"))
	is.True(strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'")) // no script
	is.Equal(h.Get("Cache-Control"), "no-store")
	c := w.Result().Cookies()[0]
	is.True(c.HttpOnly)
	is.Equal(c.SameSite, http.SameSiteStrictMode)
	is.True(c.Secure) // an https issuer
}

// Errors before the client and redirect URI are vouched for are shown, not
// redirected; errors after go to the redirect URI with state and iss.
func TestASAuthorizeErrors(t *testing.T) {
	ta := newTestAS(t, nil)
	client := ta.register(t)
	shown := []struct {
		name string
		edit func(url.Values)
	}{
		{"unknown client", func(q url.Values) { q.Set("client_id", "nope") }},
		{"no client", func(q url.Values) { q.Del("client_id") }},
		{"no redirect", func(q url.Values) { q.Del("redirect_uri") }},
		{"other redirect", func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:9999/other") }},
		{"other host", func(q url.Values) { q.Set("redirect_uri", "http://evil.test:9999/callback") }},
		{"redirect with a query", func(q url.Values) { q.Set("redirect_uri", testRedirect+"?x=1") }},
		{"repeated parameter", func(q url.Values) { q.Add("state", "again") }},
	}
	for _, c := range shown {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			q := authQuery(client)
			c.edit(q)
			w := ta.do(http.MethodGet, "/authorize?"+q.Encode(), "", "")
			is.Equal(w.Code, http.StatusBadRequest)
			is.Equal(w.Header().Get("Location"), "")
			is.Equal(w.Header().Get("X-Frame-Options"), "DENY")
		})
	}
	redirectedErrs := []struct {
		name, code string
		edit       func(url.Values)
	}{
		{"no PKCE", "invalid_request", func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") }},
		{"plain PKCE", "invalid_request", func(q url.Values) { q.Set("code_challenge_method", "plain") }},
		{"no PKCE method", "invalid_request", func(q url.Values) { q.Del("code_challenge_method") }},
		{"bad challenge", "invalid_request", func(q url.Values) { q.Set("code_challenge", "short") }},
		{"token response", "unsupported_response_type", func(q url.Values) { q.Set("response_type", "token") }},
		{"no resource", "invalid_target", func(q url.Values) { q.Del("resource") }},
		{"other resource", "invalid_target", func(q url.Values) { q.Set("resource", "https://other.test/mcp") }},
		{"unknown scope", "invalid_scope", func(q url.Values) { q.Set("scope", "mcp admin") }},
	}
	for _, c := range redirectedErrs {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			q := authQuery(client)
			c.edit(q)
			got := redirected(t, ta.do(http.MethodGet, "/authorize?"+q.Encode(), "", ""))
			is.Equal(got.Get("error"), c.code)
			is.Equal(got.Get("state"), "st-123")
			is.Equal(got.Get("iss"), testIssuer) // RFC 9207, errors too
		})
	}
}

func TestASResourceCanonicalAndScopes(t *testing.T) {
	is := is.New(t)
	ta := newTestAS(t, func(c *AuthorizationServerConfig) { c.Scopes = []string{"mcp", "read"} })
	client := ta.register(t)
	q := authQuery(client)
	q.Set("resource", "HTTPS://AS.test/mcp/") // same resource, other spelling
	q.Set("scope", "read offline_access")
	p := ta.consentPage(t, q)
	code := redirected(t, ta.answer(p, url.Values{"code": {ta.code()}})).Get("code")
	status, tok := ta.exchange(client, code)
	is.Equal(status, http.StatusOK)
	is.Equal(tok["scope"], "read") // offline_access is implied, not a scope here
}

func TestASConsentDenied(t *testing.T) {
	is := is.New(t)
	ta := newTestAS(t, nil)
	client := ta.register(t)
	p := ta.consentPage(t, authQuery(client))
	q := redirected(t, ta.answer(p, url.Values{"action": {"deny"}}))
	is.Equal(q.Get("error"), "access_denied")
	is.Equal(q.Get("iss"), testIssuer)
	is.Equal(q.Get("state"), "st-123")
	// The page is spent.
	is.Equal(ta.answer(p, url.Values{"code": {ta.code()}}).Code, http.StatusBadRequest)
}

// The consent form needs the page's CSRF token in the form and the cookie
// set with the page.
func TestASConsentCSRF(t *testing.T) {
	ta := newTestAS(t, nil)
	client := ta.register(t)
	for name, spoil := range map[string]func(*page){
		"wrong form token": func(p *page) { p.csrf = newSecret() },
		"no cookie":        func(p *page) { p.cookie = &http.Cookie{Name: "other", Value: "x"} },
		"wrong cookie":     func(p *page) { p.cookie.Value = newSecret() },
		"other page's": func(p *page) {
			other := ta.consentPage(t, authQuery(client))
			p.csrf, p.cookie = other.csrf, other.cookie
		},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			p := ta.consentPage(t, authQuery(client))
			spoil(&p)
			w := ta.answer(p, url.Values{"code": {ta.code()}})
			is.Equal(w.Code, http.StatusForbidden)
			is.Equal(w.Header().Get("Location"), "")
		})
	}
}

// Wrong answers: the page says so; five void the page; ten from one
// source stop that source's checking (429, Retry-After) until its bucket
// has a token again.
func TestASSignInRateLimited(t *testing.T) {
	is := is.New(t)
	ta := newTestAS(t, nil)
	client := ta.register(t)
	wrong := url.Values{"code": {"AAAA-AAAA-AAAA"}}
	p := ta.consentPage(t, authQuery(client))
	for range maxAttemptsPerPage - 1 {
		w := ta.answer(p, wrong)
		is.Equal(w.Code, http.StatusForbidden)
		is.True(strings.Contains(w.Body.String(), "not right"))
	}
	w := ta.answer(p, wrong) // the fifth voids the page
	is.Equal(w.Code, http.StatusForbidden)
	is.Equal(ta.answer(p, url.Values{"code": {ta.code()}}).Code, http.StatusBadRequest)

	p = ta.consentPage(t, authQuery(client))
	for range failureBurst - maxAttemptsPerPage {
		is.Equal(ta.answer(p, wrong).Code, http.StatusForbidden)
	}
	p = ta.consentPage(t, authQuery(client)) // a fresh page, the same source
	w = ta.answer(p, url.Values{"code": {ta.code()}})
	is.Equal(w.Code, http.StatusTooManyRequests) // even the right code waits
	is.Equal(w.Header().Get("Retry-After"), "6")
	is.True(strings.Contains(w.Body.String(), "Wait 6 seconds"))
	ta.clock.Advance(failureEvery)
	q := redirected(t, ta.answer(p, url.Values{"code": {ta.code()}}))
	is.True(q.Get("code") != "")
}

func TestASPasswordFile(t *testing.T) {
	is := is.New(t)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	is.NoErr(err)
	pw, err := ParsePasswordFile(strings.NewReader("# users\nalice:" + string(hash) + "\n\n"))
	is.NoErr(err)
	ta := newTestAS(t, func(c *AuthorizationServerConfig) { c.Passwords = pw; c.SignInCode = nil })
	is.Equal(len(ta.codes), 0) // no one-time code with passwords
	client := ta.register(t)
	p := ta.consentPage(t, authQuery(client))
	is.True(strings.Contains(p.body, `name="password"`))
	for _, bad := range []url.Values{
		{"username": {"alice"}, "password": {"wrong"}},
		{"username": {"bob"}, "password": {"s3cret"}},
		{"username": {""}, "password": {""}},
		{"code": {"anything"}},
	} {
		is.Equal(ta.answer(p, bad).Code, http.StatusForbidden)
	}
	q := redirected(t, ta.answer(p, url.Values{"username": {"alice"}, "password": {"s3cret"}}))
	status, tok := ta.exchange(client, q.Get("code"))
	is.Equal(status, http.StatusOK)
	pr, err := ta.Verify(context.Background(), tok["access_token"].(string))
	is.NoErr(err)
	is.Equal(pr.Subject, "alice")
}

func TestParsePasswordFileErrors(t *testing.T) {
	for _, in := range []string{
		"",
		"# only a comment\n",
		"alice\n",
		"alice:plaintext\n",
		":$2a$04$abcdefghijklmnopqrstuuJ2eyhN5vS4Pq9D7pEKoGk7Lr1qGNt9K\n",
		"al ice:$2a$04$abcdefghijklmnopqrstuuJ2eyhN5vS4Pq9D7pEKoGk7Lr1qGNt9K\n",
	} {
		if _, err := ParsePasswordFile(strings.NewReader(in)); err == nil {
			t.Errorf("%q: accepted", in)
		}
	}
}

func TestASTokenErrors(t *testing.T) {
	ta := newTestAS(t, nil)
	client := ta.register(t)
	for _, c := range []struct {
		name, code string
		status     int
		edit       func(url.Values)
	}{
		{"wrong verifier", "invalid_grant", 400, func(f url.Values) { f.Set("code_verifier", strings.Repeat("a", 43)) }},
		{"malformed verifier", "invalid_grant", 400, func(f url.Values) { f.Set("code_verifier", "short") }},
		{"no verifier", "invalid_request", 400, func(f url.Values) { f.Del("code_verifier") }},
		{"other redirect", "invalid_grant", 400, func(f url.Values) { f.Set("redirect_uri", "http://127.0.0.1:9999/other") }},
		{"other client", "invalid_grant", 400, func(f url.Values) { f.Set("client_id", ta.register(t)) }},
		{"no client", "invalid_client", 401, func(f url.Values) { f.Del("client_id") }},
		{"other resource", "invalid_target", 400, func(f url.Values) { f.Set("resource", "https://other.test/mcp") }},
		{"unknown code", "invalid_grant", 400, func(f url.Values) { f.Set("code", "nope") }},
		{"bad grant type", "unsupported_grant_type", 400, func(f url.Values) { f.Set("grant_type", "password") }},
		{"no grant type", "invalid_request", 400, func(f url.Values) { f.Del("grant_type") }},
		{"repeated", "invalid_request", 400, func(f url.Values) { f.Add("code", "x") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			code := ta.approvedCode(t, client)
			form := url.Values{
				"grant_type": {"authorization_code"}, "client_id": {client}, "code": {code},
				"redirect_uri": {testRedirect}, "code_verifier": {testVerifier}, "resource": {testResource},
			}
			c.edit(form)
			w := ta.post("/token", form)
			is.Equal(w.Code, c.status)
			is.Equal(w.Header().Get("Content-Type"), "application/json")
			is.Equal(w.Header().Get("Cache-Control"), "no-store")
			is.Equal(decode(w)["error"], c.code)
			// A failed attempt does not spend the code.
			if c.name != "unknown code" && c.name != "repeated" {
				status, _ := ta.exchange(client, code)
				is.Equal(status, http.StatusOK)
			}
		})
	}
	t.Run("expired code", func(t *testing.T) {
		is := is.New(t)
		code := ta.approvedCode(t, client)
		ta.clock.Advance(codeLifetime)
		status, tok := ta.exchange(client, code)
		is.Equal(status, http.StatusBadRequest)
		is.Equal(tok["error"], "invalid_grant")
	})
	t.Run("not a form", func(t *testing.T) {
		is := is.New(t)
		w := ta.do(http.MethodPost, "/token", "application/json", `{}`)
		is.Equal(decode(w)["error"], "invalid_request")
		w = ta.do(http.MethodGet, "/token", "", "")
		is.Equal(w.Code, http.StatusMethodNotAllowed)
		w = ta.do(http.MethodPost, "/token", "application/x-www-form-urlencoded", strings.Repeat("a", maxFormBody+1))
		is.Equal(decode(w)["error"], "invalid_request")
	})
}

// A code used twice revokes the tokens the first use gave.
func TestASCodeReuseRevokesGrant(t *testing.T) {
	is := is.New(t)
	ta := newTestAS(t, nil)
	client := ta.register(t)
	code := ta.approvedCode(t, client)
	status, tok := ta.exchange(client, code)
	is.Equal(status, http.StatusOK)
	status, again := ta.exchange(client, code)
	is.Equal(status, http.StatusBadRequest)
	is.Equal(again["error"], "invalid_grant")
	_, err := ta.Verify(context.Background(), tok["access_token"].(string))
	is.True(errors.Is(err, ErrInvalidToken))
	status, _ = ta.refreshWith(client, tok["refresh_token"].(string))
	is.Equal(status, http.StatusBadRequest)
}

// Refresh rotates; the old refresh token used again revokes the grant,
// the new one included.
func TestASRefreshRotationAndReuse(t *testing.T) {
	is := is.New(t)
	ta := newTestAS(t, nil)
	client, access, refresh := ta.signIn(t)
	ta.clock.Advance(2 * time.Hour)
	_, err := ta.Verify(context.Background(), access)
	is.True(errors.Is(err, ErrInvalidToken)) // expired

	status, tok := ta.refreshWith(client, refresh)
	is.Equal(status, http.StatusOK)
	refresh2 := tok["refresh_token"].(string)
	is.True(refresh2 != refresh)
	_, err = ta.Verify(context.Background(), tok["access_token"].(string))
	is.NoErr(err)

	status, tok2 := ta.refreshWith(ta.register(t), refresh2) // another client
	is.Equal(status, http.StatusBadRequest)
	is.Equal(tok2["error"], "invalid_grant")

	status, reuse := ta.refreshWith(client, refresh) // the rotated one
	is.Equal(status, http.StatusBadRequest)
	is.Equal(reuse["error"], "invalid_grant")
	_, err = ta.Verify(context.Background(), tok["access_token"].(string))
	is.True(errors.Is(err, ErrInvalidToken)) // the grant is gone
	status, _ = ta.refreshWith(client, refresh2)
	is.Equal(status, http.StatusBadRequest)
}

func TestASRefreshNarrowsScope(t *testing.T) {
	is := is.New(t)
	ta := newTestAS(t, func(c *AuthorizationServerConfig) { c.Scopes = []string{"mcp", "read"} })
	client, _, refresh := ta.signIn(t)
	w := ta.post("/token", url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {refresh}, "scope": {"read"}})
	is.Equal(w.Code, http.StatusOK)
	tok := decode(w)
	is.Equal(tok["scope"], "read")
	pr, err := ta.Verify(context.Background(), tok["access_token"].(string))
	is.NoErr(err)
	is.Equal(pr.Scopes, []string{"read"})
	w = ta.post("/token", url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {tok["refresh_token"].(string)}, "scope": {"admin"}})
	is.Equal(decode(w)["error"], "invalid_scope")
}

func TestASRefreshExpires(t *testing.T) {
	is := is.New(t)
	ta := newTestAS(t, nil)
	client, _, refresh := ta.signIn(t)
	ta.clock.Advance(DefaultRefreshTokenLifetime)
	status, _ := ta.refreshWith(client, refresh)
	is.Equal(status, http.StatusBadRequest)
}

func TestASRevocation(t *testing.T) {
	is := is.New(t)
	ta := newTestAS(t, nil)
	client, access, refresh := ta.signIn(t)
	other := ta.register(t)

	// An access token revokes itself only.
	w := ta.post("/revoke", url.Values{"token": {access}, "client_id": {other}})
	is.Equal(w.Code, http.StatusBadRequest) // not its client
	is.Equal(decode(w)["error"], "unauthorized_client")
	w = ta.post("/revoke", url.Values{"token": {access}, "client_id": {client}, "token_type_hint": {"access_token"}})
	is.Equal(w.Code, http.StatusOK)
	_, err := ta.Verify(context.Background(), access)
	is.True(errors.Is(err, ErrInvalidToken))
	status, tok := ta.refreshWith(client, refresh)
	is.Equal(status, http.StatusOK)

	// A refresh token revokes the grant.
	w = ta.post("/revoke", url.Values{"token": {tok["refresh_token"].(string)}, "client_id": {client}})
	is.Equal(w.Code, http.StatusOK)
	_, err = ta.Verify(context.Background(), tok["access_token"].(string))
	is.True(errors.Is(err, ErrInvalidToken))

	// Unknown tokens: 200 all the same. Malformed requests: errors.
	is.Equal(ta.post("/revoke", url.Values{"token": {"nope"}, "client_id": {client}}).Code, http.StatusOK)
	is.Equal(decode(ta.post("/revoke", url.Values{"client_id": {client}}))["error"], "invalid_request")
	is.Equal(decode(ta.post("/revoke", url.Values{"token": {"x"}}))["error"], "invalid_client")
	is.Equal(decode(ta.post("/revoke", url.Values{"token": {"x"}, "client_id": {client}, "token_type_hint": {"id_token"}}))["error"], "unsupported_token_type")
}

func TestASVerifyRejects(t *testing.T) {
	is := is.New(t)
	ta := newTestAS(t, nil)
	for _, tok := range []string{"", "nope", strings.Repeat("x", 100)} {
		_, err := ta.Verify(context.Background(), tok)
		is.True(errors.Is(err, ErrInvalidToken))
		if err != nil && tok != "" {
			is.True(!strings.Contains(err.Error(), tok)) // never the token
		}
	}
}

func TestASRegistration(t *testing.T) {
	ta := newTestAS(t, func(c *AuthorizationServerConfig) {
		c.AllowRedirectURIs = []string{"https://claude.ai/api/mcp/auth_callback"}
	})
	ok := []string{
		`{"redirect_uris":["http://127.0.0.1:33418/callback"]}`,
		`{"redirect_uris":["http://[::1]:5000/cb"],"client_name":"x","token_endpoint_auth_method":"none"}`,
		`{"redirect_uris":["http://localhost:8080/"],"grant_types":["authorization_code","refresh_token"],"response_types":["code"]}`,
		`{"redirect_uris":["http://127.0.0.1/callback"]}`,
		`{"redirect_uris":["https://claude.ai/api/mcp/auth_callback"],"client_name":"Claude"}`,
	}
	for _, body := range ok {
		is := is.New(t)
		w := ta.do(http.MethodPost, "/register", "application/json", body)
		is.Equal(w.Code, http.StatusCreated) // body
		m := decode(w)
		is.True(m["client_id"] != "")
		is.Equal(m["token_endpoint_auth_method"], "none")
	}
	bad := map[string]string{
		`{}`: "invalid_redirect_uri",
		`{"redirect_uris":["https://evil.test/cb"]}`:                                                   "invalid_redirect_uri",
		`{"redirect_uris":["https://claude.ai/api/mcp/auth_callback/x"]}`:                              "invalid_redirect_uri",
		`{"redirect_uris":["http://127.0.0.2:80/cb"]}`:                                                 "invalid_redirect_uri",
		`{"redirect_uris":["http://localhost.evil.test/cb"]}`:                                          "invalid_redirect_uri",
		`{"redirect_uris":["https://127.0.0.1/cb"]}`:                                                   "invalid_redirect_uri",
		`{"redirect_uris":["http://127.0.0.1:1/cb#frag"]}`:                                             "invalid_redirect_uri",
		`{"redirect_uris":["http://u@127.0.0.1:1/cb"]}`:                                                "invalid_redirect_uri",
		`{"redirect_uris":["http://127.0.0.1:1/cb"],"token_endpoint_auth_method":"private_key_jwt"}`:   "invalid_client_metadata",
		`{"redirect_uris":["http://127.0.0.1:1/cb"],"grant_types":["client_credentials"]}`:             "invalid_client_metadata",
		`{"redirect_uris":["http://127.0.0.1:1/cb"],"response_types":["token"]}`:                       "invalid_client_metadata",
		`{"redirect_uris":["http://127.0.0.1:1/cb"],"client_name":"` + strings.Repeat("n", 201) + `"}`: "invalid_client_metadata",
		`not json`: "invalid_client_metadata",
		`{"redirect_uris":["http://127.0.0.1:1/cb"]} {}`: "invalid_client_metadata",
	}
	for body, code := range bad {
		is := is.New(t)
		w := ta.do(http.MethodPost, "/register", "application/json", body)
		is.Equal(w.Code, http.StatusBadRequest) // body
		is.Equal(decode(w)["error"], code)      // body
	}
	is := is.New(t)
	w := ta.do(http.MethodPost, "/register", "application/json", `{"redirect_uris":["http://127.0.0.1:1/cb"],"client_name":"`+strings.Repeat("n", maxRegisterBody)+`"}`)
	is.Equal(w.Code, http.StatusBadRequest)
	is.Equal(decode(w)["error"], "invalid_request")
}

// A loopback redirect URI may come back with another port (RFC 8252
// §7.3); everything else must be exact.
func TestASLoopbackRedirectPort(t *testing.T) {
	is := is.New(t)
	ta := newTestAS(t, nil)
	client := ta.register(t, "http://127.0.0.1:1111/callback")
	q := authQuery(client)
	q.Set("redirect_uri", testRedirect) // port 9999
	p := ta.consentPage(t, q)
	got := redirected(t, ta.answer(p, url.Values{"code": {ta.code()}}))
	is.True(got.Get("code") != "")
	is.True(redirectMatches([]string{"http://localhost/cb"}, "http://localhost:5/cb"))
	is.True(!redirectMatches([]string{"http://localhost/cb"}, "http://127.0.0.1:5/cb"))
	is.True(!redirectMatches([]string{"https://x.test:1/cb"}, "https://x.test:2/cb"))
}

// The client table is bounded: the oldest client not in use and past
// clientGrace makes room; when every client is in use or new, registration
// is refused with Retry-After.
func TestASClientTableBounded(t *testing.T) {
	is := is.New(t)
	ta := newTestAS(t, func(c *AuthorizationServerConfig) { c.MaxClients = 2 })
	first, _, _ := ta.signIn(t) // has a grant
	second := ta.register(t)
	ta.clock.Advance(time.Second)
	w := ta.do(http.MethodPost, "/register", "application/json", `{"redirect_uris":["http://127.0.0.1:1/cb"]}`)
	is.Equal(w.Code, http.StatusServiceUnavailable) // second is new: kept
	is.Equal(w.Header().Get("Retry-After"), "59")
	ta.clock.Advance(clientGrace)
	third := ta.register(t) // evicts second
	is.True(ta.clients[first] != nil)
	is.True(ta.clients[second] == nil)
	is.True(ta.clients[third] != nil)
	code := ta.approvedCode(t, third)
	status, _ := ta.exchange(third, code)
	is.Equal(status, http.StatusOK)
	w = ta.do(http.MethodPost, "/register", "application/json", `{"redirect_uris":["http://127.0.0.1:1/cb"]}`)
	is.Equal(w.Code, http.StatusServiceUnavailable)
	is.Equal(decode(w)["error"], "temporarily_unavailable")
	is.Equal(w.Header().Get("Retry-After"), "60") // the spent code expires: the soonest anything may change
}

func TestASGrantTableBounded(t *testing.T) {
	is := is.New(t)
	ta := newTestAS(t, func(c *AuthorizationServerConfig) { c.MaxGrants = 1 })
	ta.signIn(t)
	client := ta.register(t)
	status, tok := ta.exchange(client, ta.approvedCode(t, client))
	is.Equal(status, http.StatusServiceUnavailable)
	is.Equal(tok["error"], "temporarily_unavailable")
}

// The store: 0600, survives a restart (clients, grants, tokens), keeps no
// token in the clear; pending pages and codes do not survive.
func TestASStoreSurvivesRestart(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "oauth.json")
	withStore := func(c *AuthorizationServerConfig) { c.StorePath = path }
	ta := newTestAS(t, withStore)
	client, access, refresh := ta.signIn(t)
	pending := ta.consentPage(t, authQuery(client))
	fi, err := os.Stat(path)
	is.NoErr(err)
	is.Equal(fi.Mode().Perm(), os.FileMode(0o600))
	raw, err := os.ReadFile(path)
	is.NoErr(err)
	is.True(!strings.Contains(string(raw), access))
	is.True(!strings.Contains(string(raw), refresh))
	entries, err := os.ReadDir(filepath.Dir(path))
	is.NoErr(err)
	is.Equal(len(entries), 1) // no temporary file left

	tb := newTestAS(t, withStore) // the restart
	tb.clock.Advance(time.Minute)
	pr, err := tb.Verify(context.Background(), access)
	is.NoErr(err)
	is.Equal(pr.ClientID, client)
	is.Equal(tb.answer(pending, url.Values{"code": {tb.code()}}).Code, http.StatusBadRequest) // the page is gone
	status, tok := tb.refreshWith(client, refresh)
	is.Equal(status, http.StatusOK)
	status, _ = tb.refreshWith(client, refresh) // reuse is detected across restarts too
	is.Equal(status, http.StatusBadRequest)
	_, err = tb.Verify(context.Background(), tok["access_token"].(string))
	is.True(errors.Is(err, ErrInvalidToken))

	tc := newTestAS(t, withStore)
	_, err = tc.Verify(context.Background(), access)
	is.True(errors.Is(err, ErrInvalidToken)) // the revocation persisted
	is.True(tc.clients[client] != nil)
}

func TestASStoreRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		content string
		mode    os.FileMode
	}{
		"corrupt":  {"{", 0o600},
		"version":  {`{"version":9}`, 0o600},
		"readable": {`{"version":1}`, 0o644},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, []byte(c.content), c.mode); err != nil {
				t.Fatal(err)
			}
			_ = os.Chmod(path, c.mode)
			_, err := NewAuthorizationServer(AuthorizationServerConfig{Issuer: testIssuer, Resource: testResource, SignInCode: func(string) {}, StorePath: path})
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// A URL client_id is resolved through URLClients, only when allowed, and
// re-checked at the token endpoint.
type fakeURLClients struct {
	allowed map[string]bool
	calls   int
}

func (f *fakeURLClients) Allowed(id string) bool { return f.allowed[id] }
func (f *fakeURLClients) Client(_ context.Context, id string) (string, []string, error) {
	f.calls++
	return "URL Client", []string{testRedirect}, nil
}

func TestASURLClients(t *testing.T) {
	is := is.New(t)
	const id = "https://client.test/meta.json"
	fc := &fakeURLClients{allowed: map[string]bool{id: true}}
	ta := newTestAS(t, func(c *AuthorizationServerConfig) { c.URLClients = fc })
	p := ta.consentPage(t, authQuery(id))
	is.True(strings.Contains(p.body, "URL Client"))
	code := redirected(t, ta.answer(p, url.Values{"code": {ta.code()}})).Get("code")
	delete(fc.allowed, id) // withdrawn from the allowlist
	status, tok := ta.exchange(id, code)
	is.Equal(status, http.StatusBadRequest)
	is.Equal(tok["error"], "invalid_grant")
	w := ta.do(http.MethodGet, "/authorize?"+authQuery("https://other.test/meta.json").Encode(), "", "")
	is.Equal(w.Code, http.StatusBadRequest)
	is.Equal(fc.calls, 1) // not fetched when not allowed
}
