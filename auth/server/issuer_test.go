package server_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
)

// newVerifier returns a verifier of idp's tokens for testResource.
func newVerifier(t testing.TB, idp *fakeIdP, c *clock, mod ...func(*server.IssuerConfig)) server.Verifier {
	t.Helper()
	cfg := server.IssuerConfig{
		Issuer:                idp.issuer,
		Resource:              testResource,
		IntrospectionClientID: idp.clientID,
		IntrospectionSecret:   idp.secret,
		Now:                   c.Now,
	}
	for _, m := range mod {
		m(&cfg)
	}
	v, err := server.NewIssuerVerifier(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// refused asserts that err is a refusal that does not repeat the token.
func refused(t testing.TB, err error, token string) {
	t.Helper()
	if !errors.Is(err, server.ErrInvalidToken) {
		t.Fatalf("want ErrInvalidToken, got %v", err)
	}
	if token != "" && strings.Contains(err.Error(), token) {
		t.Fatalf("the error repeats the token: %v", err)
	}
}

func TestIssuerAcceptsAGoodToken(t *testing.T) {
	for _, alg := range []jose.SignatureAlgorithm{jose.RS256, jose.PS256, jose.ES256, jose.EdDSA} {
		t.Run(string(alg), func(t *testing.T) {
			is := is.New(t)
			c := newClock()
			k := newKey(t, "k1", alg)
			idp := newIdP(t, "", k)
			v := newVerifier(t, idp, c)
			p, err := v.Verify(context.Background(), k.sign(t, idp.claims(c), "at+jwt"))
			is.NoErr(err)
			is.Equal(p.Issuer, idp.issuer)
			is.Equal(p.Subject, "alice")
			is.Equal(p.ClientID, "claude")
			is.Equal(p.Scopes, []string{"mcp:tools", "mcp:read"})
			is.True(p.Expiry.Equal(c.Now().Add(time.Hour)))
			is.Equal(p.Key(), idp.issuer+" alice")
		})
	}
}

func TestIssuerTokenShapes(t *testing.T) {
	c := newClock()
	k := newKey(t, "k1", jose.ES256)
	idp := newIdP(t, "", k)
	v := newVerifier(t, idp, c)
	for _, tc := range []struct {
		name   string
		edit   func(map[string]any)
		typ    string
		scopes []string
	}{
		{"typ JWT", nil, "JWT", []string{"mcp:tools", "mcp:read"}},
		{"no typ", nil, "", []string{"mcp:tools", "mcp:read"}},
		{"application/at+jwt", nil, "application/at+jwt", []string{"mcp:tools", "mcp:read"}},
		{"aud array", func(m map[string]any) { m["aud"] = []string{"other", testResource} }, "at+jwt", []string{"mcp:tools", "mcp:read"}},
		{"aud trailing slash", func(m map[string]any) { m["aud"] = testResource + "/" }, "at+jwt", []string{"mcp:tools", "mcp:read"}},
		{"aud upper-case host", func(m map[string]any) { m["aud"] = "HTTPS://MCP.Example.com:443/mcp" }, "at+jwt", []string{"mcp:tools", "mcp:read"}},
		{"scp array", func(m map[string]any) { delete(m, "scope"); m["scp"] = []string{"a", "b"} }, "at+jwt", []string{"a", "b"}},
		{"scope and scp", func(m map[string]any) { m["scp"] = []string{"mcp:read", "c"} }, "at+jwt", []string{"mcp:tools", "mcp:read", "c"}},
		{"no scope", func(m map[string]any) { delete(m, "scope") }, "at+jwt", nil},
		{"exp within skew", func(m map[string]any) { m["exp"] = c.Now().Unix() - 30 }, "at+jwt", []string{"mcp:tools", "mcp:read"}},
		{"nbf within skew", func(m map[string]any) { m["nbf"] = c.Now().Unix() + 30 }, "at+jwt", []string{"mcp:tools", "mcp:read"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			claims := idp.claims(c)
			if tc.edit != nil {
				tc.edit(claims)
			}
			p, err := v.Verify(context.Background(), k.sign(t, claims, tc.typ))
			is.NoErr(err)
			is.Equal(p.Subject, "alice")
			is.Equal(p.Scopes, tc.scopes)
		})
	}
}

// hs256 signs claims with HMAC-SHA256 under secret, by hand: go-jose
// would not let a test make the confused token any other way.
func hs256(t testing.TB, kid string, secret []byte, claims map[string]any) string {
	t.Helper()
	h, _ := json.Marshal(map[string]any{"alg": "HS256", "typ": "at+jwt", "kid": kid})
	p, _ := json.Marshal(claims)
	in := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(p)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(in))
	return in + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// unsigned returns an alg "none" token of claims.
func unsigned(claims map[string]any) string {
	h, _ := json.Marshal(map[string]any{"alg": "none", "kid": "k1"})
	p, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(p) + "."
}

func TestIssuerRefusesBadTokens(t *testing.T) {
	c := newClock()
	k := newKey(t, "k1", jose.RS256)
	idp := newIdP(t, "", k)
	v := newVerifier(t, idp, c)
	other := newKey(t, "k1", jose.RS256) // same kid, another key
	unknown := newKey(t, "k9", jose.RS256)
	pubDER, err := x509.MarshalPKIXPublicKey(k.priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	pubJWK, _ := json.Marshal(k.public())
	good := func(edit func(map[string]any)) map[string]any {
		m := idp.claims(c)
		if edit != nil {
			edit(m)
		}
		return m
	}
	for _, tc := range []struct {
		name, token, reason string
	}{
		{"wrong iss", k.sign(t, good(func(m map[string]any) { m["iss"] = "https://evil.example" }), "at+jwt"), "issued by"},
		{"iss with trailing slash", k.sign(t, good(func(m map[string]any) { m["iss"] = idp.issuer + "/" }), "at+jwt"), "issued by"},
		{"no iss", k.sign(t, good(func(m map[string]any) { delete(m, "iss") }), "at+jwt"), "issued by"},
		{"wrong aud", k.sign(t, good(func(m map[string]any) { m["aud"] = "https://other.example.com/mcp" }), "at+jwt"), "audience"},
		{"aud parent path", k.sign(t, good(func(m map[string]any) { m["aud"] = "https://mcp.example.com" }), "at+jwt"), "audience"},
		{"no aud", k.sign(t, good(func(m map[string]any) { delete(m, "aud") }), "at+jwt"), "audience"},
		{"an ID token", k.sign(t, good(func(m map[string]any) { m["aud"] = "claude"; m["nonce"] = "n"; delete(m, "scope") }), "JWT"), "audience"},
		{"expired", k.sign(t, good(func(m map[string]any) { m["exp"] = c.Now().Unix() - 61 }), "at+jwt"), "expired"},
		{"no exp", k.sign(t, good(func(m map[string]any) { delete(m, "exp") }), "at+jwt"), "no exp"},
		{"nbf in the future", k.sign(t, good(func(m map[string]any) { m["nbf"] = c.Now().Unix() + 120 }), "at+jwt"), "not valid before"},
		{"iat in the future", k.sign(t, good(func(m map[string]any) { m["iat"] = c.Now().Unix() + 120 }), "at+jwt"), "issued in the future"},
		{"no sub", k.sign(t, good(func(m map[string]any) { delete(m, "sub") }), "at+jwt"), "no sub"},
		{"scope a number", k.sign(t, good(func(m map[string]any) { m["scope"] = 7 }), "at+jwt"), "scope"},
		{"typ of another token", k.sign(t, good(nil), "logout+jwt"), "typ"},
		{"alg none", unsigned(good(nil)), "not a JWT signed"},
		{"HS256 with the public key (DER) as secret", hs256(t, "k1", pubDER, good(nil)), "not a JWT signed"},
		{"HS256 with the public JWK as secret", hs256(t, "k1", pubJWK, good(nil)), "not a JWT signed"},
		{"signed by another key with the same kid", other.sign(t, good(nil), "at+jwt"), "signature"},
		{"unknown kid", unknown.sign(t, good(nil), "at+jwt"), "unknown signing key"},
		{"garbage with two dots", "a.b.c", "not a JWT"},
		{"opaque, not active", "opaque-token-1", "not active"},
		{"empty", "", "no token"},
		{"too long", strings.Repeat("a", 20000), "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Verify(context.Background(), tc.token)
			refused(t, err, tc.token)
			if !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("reason: want %q in %v", tc.reason, err)
			}
		})
	}
}

func TestIssuerKeyRotation(t *testing.T) {
	is := is.New(t)
	c := newClock()
	old := newKey(t, "2026-07", jose.RS256)
	idp := newIdP(t, "", old)
	v := newVerifier(t, idp, c)
	ctx := context.Background()
	_, err := v.Verify(ctx, old.sign(t, idp.claims(c), "at+jwt"))
	is.NoErr(err)
	is.Equal(idp.jwksHits.Load(), int32(1)) // the key set is fetched once, at start

	// The IdP rotates: the new key signs, the old one is withdrawn.
	fresh := newKey(t, "2026-08", jose.ES256)
	idp.setKeys(fresh)
	p, err := v.Verify(ctx, fresh.sign(t, idp.claims(c), "at+jwt"))
	is.NoErr(err) // accepted after one refresh, even right after the start
	is.Equal(p.Subject, "alice")
	is.Equal(idp.jwksHits.Load(), int32(2))
	_, err = v.Verify(ctx, fresh.sign(t, idp.claims(c), "at+jwt"))
	is.NoErr(err)
	is.Equal(idp.jwksHits.Load(), int32(2)) // a known key costs nothing
	_, err = v.Verify(ctx, old.sign(t, idp.claims(c), "at+jwt"))
	refused(t, err, "") // the withdrawn key is gone with the refresh
}

func TestIssuerRefreshRateLimit(t *testing.T) {
	is := is.New(t)
	c := newClock()
	k := newKey(t, "k1", jose.ES256)
	idp := newIdP(t, "", k)
	v := newVerifier(t, idp, c)
	ctx := context.Background()
	c.Advance(server.DefaultJWKSRefreshInterval)

	// A burst of tokens naming made-up keys, all at once.
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		bogus := newKey(t, fmt.Sprintf("bogus-%d", i), jose.ES256)
		tok := bogus.sign(t, idp.claims(c), "at+jwt")
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := v.Verify(ctx, tok)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		is.True(errors.Is(err, server.ErrInvalidToken))
	}
	is.Equal(idp.jwksHits.Load(), int32(2)) // the start, and one refresh for the whole burst

	// Within the interval, a rotated key waits for the next one.
	fresh := newKey(t, "k2", jose.ES256)
	idp.setKeys(k, fresh)
	_, err := v.Verify(ctx, fresh.sign(t, idp.claims(c), "at+jwt"))
	refused(t, err, "")
	is.True(strings.Contains(err.Error(), "fetched less than"))
	is.Equal(idp.jwksHits.Load(), int32(2))
	c.Advance(server.DefaultJWKSRefreshInterval)
	_, err = v.Verify(ctx, fresh.sign(t, idp.claims(c), "at+jwt"))
	is.NoErr(err)
	is.Equal(idp.jwksHits.Load(), int32(3))
}

func TestIssuerKeySetAgesOut(t *testing.T) {
	is := is.New(t)
	c := newClock()
	k := newKey(t, "k1", jose.ES256)
	idp := newIdP(t, "", k)
	v := newVerifier(t, idp, c)
	ctx := context.Background()
	c.Advance(2 * time.Hour)
	idp.setDown(true)
	// The issuer is down: the old set still serves a known key.
	_, err := v.Verify(ctx, k.sign(t, idp.claims(c), "at+jwt"))
	is.NoErr(err)
	is.Equal(idp.jwksHits.Load(), int32(1))
	// Back up, an hour on: the set is fetched again and the key withdrawn
	// there is no longer trusted.
	idp.setDown(false)
	idp.setKeys(newKey(t, "k2", jose.ES256))
	c.Advance(time.Hour)
	_, err = v.Verify(ctx, k.sign(t, idp.claims(c), "at+jwt"))
	refused(t, err, "")
}

func TestIssuerDownIsNotARefusal(t *testing.T) {
	c := newClock()
	k := newKey(t, "k1", jose.ES256)
	idp := newIdP(t, "", k)
	v := newVerifier(t, idp, c)
	ctx := context.Background()
	idp.setDown(true)
	for name, tok := range map[string]string{
		"a JWT with a new kid": newKey(t, "k2", jose.ES256).sign(t, idp.claims(c), "at+jwt"),
		"an opaque token":      "opaque-token",
	} {
		t.Run(name, func(t *testing.T) {
			c.Advance(server.DefaultJWKSRefreshInterval)
			_, err := v.Verify(ctx, tok)
			if err == nil || errors.Is(err, server.ErrInvalidToken) {
				t.Fatalf("want an error that is not ErrInvalidToken, got %v", err)
			}
			if strings.Contains(err.Error(), tok) {
				t.Fatalf("the error repeats the token: %v", err)
			}
		})
	}
	// Closed altogether: the same.
	idp.srv.Close()
	c.Advance(server.DefaultJWKSRefreshInterval)
	_, err := v.Verify(ctx, "another-opaque-token")
	if err == nil || errors.Is(err, server.ErrInvalidToken) {
		t.Fatalf("want an error that is not ErrInvalidToken, got %v", err)
	}
}

func TestIssuerIntrospection(t *testing.T) {
	c := newClock()
	k := newKey(t, "k1", jose.ES256)
	idp := newIdP(t, "", k)
	v := newVerifier(t, idp, c)
	ctx := context.Background()
	answer := func(edit func(map[string]any)) map[string]any {
		m := idp.claims(c)
		m["active"] = true
		m["token_type"] = "Bearer"
		if edit != nil {
			edit(m)
		}
		return m
	}
	idp.addOpaque("opq-good-7f3a", answer(nil))
	idp.addOpaque("opq-good-no-iss-7f3a", answer(func(m map[string]any) { delete(m, "iss") }))
	idp.addOpaque("opq-inactive-7f3a", map[string]any{"active": false, "sub": "alice"})
	idp.addOpaque("opq-wrong-aud-7f3a", answer(func(m map[string]any) { m["aud"] = "https://other.example.com/mcp" }))
	idp.addOpaque("opq-no-aud-7f3a", answer(func(m map[string]any) { delete(m, "aud") }))
	idp.addOpaque("opq-wrong-iss-7f3a", answer(func(m map[string]any) { m["iss"] = "https://evil.example" }))
	idp.addOpaque("opq-expired-7f3a", answer(func(m map[string]any) { m["exp"] = c.Now().Unix() - 3600 }))
	idp.addOpaque("opq-no-exp-7f3a", answer(func(m map[string]any) { delete(m, "exp") }))
	idp.addOpaque("opq-no-sub-7f3a", answer(func(m map[string]any) { delete(m, "sub") }))
	idp.addOpaque("opq-short-7f3a", answer(func(m map[string]any) { m["exp"] = c.Now().Unix() + 10 }))

	t.Run("active", func(t *testing.T) {
		is := is.New(t)
		for _, tok := range []string{"opq-good-7f3a", "opq-good-no-iss-7f3a"} {
			p, err := v.Verify(ctx, tok)
			is.NoErr(err)
			is.Equal(p.Subject, "alice")
			is.Equal(p.Issuer, idp.issuer)
			is.Equal(p.ClientID, "claude")
			is.Equal(p.Scopes, []string{"mcp:tools", "mcp:read"})
		}
	})
	t.Run("cached", func(t *testing.T) {
		is := is.New(t)
		before := idp.introHits.Load()
		_, err := v.Verify(ctx, "opq-good-7f3a")
		is.NoErr(err)
		is.Equal(idp.introHits.Load(), before) // answered from the cache
		c.Advance(server.DefaultIntrospectionCacheTTL)
		_, err = v.Verify(ctx, "opq-good-7f3a")
		is.NoErr(err)
		is.Equal(idp.introHits.Load(), before+1) // asked again after the TTL
	})
	t.Run("cached no longer than exp", func(t *testing.T) {
		is := is.New(t)
		idp.addOpaque("opq-short-7f3a", answer(func(m map[string]any) { m["exp"] = c.Now().Unix() + 10 }))
		_, err := v.Verify(ctx, "opq-short-7f3a")
		is.NoErr(err)
		before := idp.introHits.Load()
		c.Advance(11 * time.Second)
		idp.addOpaque("opq-short-7f3a", map[string]any{"active": false})
		_, err = v.Verify(ctx, "opq-short-7f3a")
		refused(t, err, "opq-short-7f3a")
		is.Equal(idp.introHits.Load(), before+1)
	})
	for tok, reason := range map[string]string{
		"opq-inactive-7f3a":  "not active",
		"opq-unknown-7f3a":   "not active",
		"opq-wrong-aud-7f3a": "audience",
		"opq-no-aud-7f3a":    "audience",
		"opq-wrong-iss-7f3a": "issued by",
		"opq-expired-7f3a":   "expired",
		"opq-no-exp-7f3a":    "no exp",
		"opq-no-sub-7f3a":    "no sub",
	} {
		t.Run(tok, func(t *testing.T) {
			_, err := v.Verify(ctx, tok)
			refused(t, err, tok)
			if !strings.Contains(err.Error(), reason) {
				t.Fatalf("reason: want %q in %v", reason, err)
			}
		})
	}
	t.Run("our credentials refused", func(t *testing.T) {
		bad := newVerifier(t, idp, c, func(cfg *server.IssuerConfig) { cfg.IntrospectionSecret = "wrong" })
		_, err := bad.Verify(ctx, "opq-good-7f3a")
		if err == nil || errors.Is(err, server.ErrInvalidToken) || !strings.Contains(err.Error(), server.IntrospectionSecretEnv) {
			t.Fatalf("want a cannot-decide error naming the secret's variable, got %v", err)
		}
	})
	t.Run("no client id: opaque tokens refused", func(t *testing.T) {
		none := newVerifier(t, idp, c, func(cfg *server.IssuerConfig) { cfg.IntrospectionClientID = "" })
		before := idp.introHits.Load()
		_, err := none.Verify(ctx, "opq-good-7f3a")
		refused(t, err, "opq-good-7f3a")
		is.New(t).Equal(idp.introHits.Load(), before)
	})
}

func TestIssuerDiscovery(t *testing.T) {
	t.Run("path-aware, OpenID Connect", func(t *testing.T) {
		is := is.New(t)
		c := newClock()
		k := newKey(t, "k1", jose.ES256)
		idp := newIdP(t, "/tenant1", k)
		v := newVerifier(t, idp, c)
		is.Equal(idp.wellKnowns, []string{
			"/.well-known/oauth-authorization-server/tenant1",
			"/.well-known/openid-configuration/tenant1",
		})
		_, err := v.Verify(context.Background(), k.sign(t, idp.claims(c), "at+jwt"))
		is.NoErr(err)
	})
	t.Run("root, RFC 8414 first", func(t *testing.T) {
		is := is.New(t)
		idp := newIdP(t, "", newKey(t, "k1", jose.ES256))
		newVerifier(t, idp, newClock())
		is.Equal(idp.wellKnowns, []string{"/.well-known/oauth-authorization-server"})
	})
	for name, tc := range map[string]struct {
		issuer func(idp *fakeIdP) string
		want   string
	}{
		"issuer with a trailing slash": {func(idp *fakeIdP) string { return idp.issuer + "/" }, "names issuer"},
		"another path":                 {func(idp *fakeIdP) string { return idp.issuer + "/t2" }, "no authorization server metadata"},
		"plain http beyond loopback":   {func(*fakeIdP) string { return "http://idp.example.com" }, "not https"},
		"not a URL":                    {func(*fakeIdP) string { return "idp" }, "absolute URL"},
		"a query":                      {func(idp *fakeIdP) string { return idp.issuer + "?x=1" }, "no query"},
	} {
		t.Run(name, func(t *testing.T) {
			idp := newIdP(t, "", newKey(t, "k1", jose.ES256))
			_, err := server.NewIssuerVerifier(context.Background(), server.IssuerConfig{Issuer: tc.issuer(idp), Resource: testResource})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error with %q, got %v", tc.want, err)
			}
		})
	}
	t.Run("no resource", func(t *testing.T) {
		idp := newIdP(t, "", newKey(t, "k1", jose.ES256))
		_, err := server.NewIssuerVerifier(context.Background(), server.IssuerConfig{Issuer: idp.issuer})
		if err == nil || !strings.Contains(err.Error(), "--public-url") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("issuer down", func(t *testing.T) {
		idp := newIdP(t, "", newKey(t, "k1", jose.ES256))
		idp.srv.Close()
		_, err := server.NewIssuerVerifier(context.Background(), server.IssuerConfig{Issuer: idp.issuer, Resource: testResource})
		if err == nil {
			t.Fatal("want an error")
		}
	})
}

func TestIssuerSeveralIssuers(t *testing.T) {
	is := is.New(t)
	c := newClock()
	k1, k2 := newKey(t, "k1", jose.ES256), newKey(t, "k1", jose.RS256) // the same kid at both
	idp1, idp2 := newIdP(t, "", k1), newIdP(t, "", k2)
	v := server.Verifiers(newVerifier(t, idp1, c), newVerifier(t, idp2, c))
	ctx := context.Background()
	p, err := v.Verify(ctx, k2.sign(t, idp2.claims(c), "at+jwt"))
	is.NoErr(err)
	is.Equal(p.Issuer, idp2.issuer)
	p, err = v.Verify(ctx, k1.sign(t, idp1.claims(c), "at+jwt"))
	is.NoErr(err)
	is.Equal(p.Issuer, idp1.issuer)
	// Signed by idp2's key but claiming idp1: refused by both.
	_, err = v.Verify(ctx, k2.sign(t, idp1.claims(c), "at+jwt"))
	refused(t, err, "")
	is.Equal(idp2.jwksHits.Load(), int32(1)) // no fetch for a token naming another issuer
	is.Equal(idp1.jwksHits.Load(), int32(2)) // one for a key idp1 does not have
}
