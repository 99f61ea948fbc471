package auth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/auth/authtest"
)

// TestCredentialsNeverLeak drives sign-ins, refreshes, a dead grant, a
// failed sign-in and token endpoints that echo what they were sent, with
// debug logging on, and then searches every log line, everything printed
// for the user and every error for any credential: access and refresh
// tokens, codes, device codes, client secrets and PKCE verifiers.
func TestCredentialsNeverLeak(t *testing.T) {
	is := is.New(t)
	var errs []error
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	srv := authtest.NewServer(t, authtest.Options{TokenTTL: time.Hour, AuthMethods: []string{"client_secret_post"}})
	h := newHarness(t, srv, nil)
	h.run(t)
	ctx := context.Background()
	note(h.c.SignIn(ctx))
	_, gen := h.c.BearerToken(ctx)
	srv.RevokeAccessTokens()
	_, err := h.c.Unauthorized(ctx, gen, challenge(srv))
	note(err)
	srv.RevokeAccessTokens()
	srv.RevokeRefreshTokens()
	srv.Update(func(o *authtest.Options) { o.Iss = authtest.IssWrong })
	_, gen = h.c.BearerToken(ctx)
	_, err = h.c.Unauthorized(ctx, gen, challenge(srv))
	note(err)
	note(h.waitFlight(t))
	h.clock.Advance(DefaultCooldown)
	srv.Update(func(o *authtest.Options) { o.Iss = authtest.IssCorrect })
	_, err = h.c.Unauthorized(ctx, h.c.Generation(), challenge(srv))
	note(err)
	note(h.waitFlight(t))
	note(h.c.SignIn(ctx))

	secrets := srv.Secrets()
	for _, r := range srv.Requests() {
		if v := r.Form.Get("code_verifier"); v != "" {
			secrets = append(secrets, v)
		}
	}
	is.True(len(secrets) > 8) // the scenario really minted credentials

	// A token endpoint that echoes the refresh token and the secret back.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":"invalid_grant","error_description":"refresh token ` + r.Form.Get("refresh_token") + ` of ` + r.Form.Get("client_secret") + ` is revoked"}`))
	}))
	defer echo.Close()
	_, err = h.c.requestToken(ctx, echo.URL, clientCreds{id: "c", secret: "very-secret-value", method: authSecretPost},
		url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"rt-echoed-secret"}})
	is.True(err != nil)
	note(err)
	secrets = append(secrets, "very-secret-value", "rt-echoed-secret")

	haystacks := map[string]string{"log": h.log.String(), "stderr": h.stderr.String()}
	for i, err := range errs {
		haystacks["error "+string(rune('A'+i))] = err.Error()
	}
	for name, text := range haystacks {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s contains the credential %q:\n%s", name, s, text)
			}
		}
	}
	is.True(strings.Contains(h.log.String(), "level=DEBUG")) // debug logging was on
	is.True(len(errs) >= 3)
}
