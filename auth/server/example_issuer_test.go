package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
)

// An external IdP (here a stand-in on loopback, where plain http is
// allowed) signs access tokens for https://mcp.example.com/mcp; the
// verifier discovers its keys and checks what clients present.
func ExampleNewIssuerVerifier() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	var issuer string
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "jwks_uri": issuer + "/jwks"})
		case "/jwks":
			json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Use: "sig"}}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer idp.Close()
	issuer = idp.URL

	v, err := server.NewIssuerVerifier(context.Background(), server.IssuerConfig{
		Issuer:   issuer,
		Resource: "https://mcp.example.com/mcp",
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	sign := func(aud string) string {
		s, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}},
			(&jose.SignerOptions{}).WithType("at+jwt"))
		claims, _ := json.Marshal(map[string]any{
			"iss": issuer, "sub": "alice", "aud": aud, "scope": "mcp:tools",
			"exp": time.Now().Add(time.Hour).Unix(),
		})
		jws, _ := s.Sign(claims)
		tok, _ := jws.CompactSerialize()
		return tok
	}

	p, err := v.Verify(context.Background(), sign("https://mcp.example.com/mcp"))
	fmt.Println(p.Subject, p.Scopes, err)
	_, err = v.Verify(context.Background(), sign("https://elsewhere.example.com/mcp"))
	fmt.Println(errors.Is(err, server.ErrInvalidToken))
	// Output:
	// alice [mcp:tools] <nil>
	// true
}

// Opaque tokens are introspected at the IdP, at most IntrospectionRate
// requests a second: beyond, a check cannot decide (the gate answers 503
// with Retry-After) instead of refusing a token that may be good. A token
// the IdP found inactive is remembered, and costs no second request.
func ExampleIssuerConfig_introspectionRate() {
	var issuer string
	var asked atomic.Int32
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "introspection_endpoint": issuer + "/introspect"})
		case "/introspect":
			asked.Add(1)
			json.NewEncoder(w).Encode(map[string]any{"active": false})
		default:
			http.NotFound(w, r)
		}
	}))
	defer idp.Close()
	issuer = idp.URL
	now := time.Now()
	v, err := server.NewIssuerVerifier(context.Background(), server.IssuerConfig{
		Issuer:                issuer,
		Resource:              "https://mcp.example.com/mcp",
		IntrospectionClientID: "mcp-stdio",
		IntrospectionSecret:   "secret",
		IntrospectionRate:     2,
		Now:                   func() time.Time { return now }, // the clock stands still
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, tok := range []string{"made-up-1", "made-up-2", "made-up-3", "made-up-1"} {
		_, err := v.Verify(context.Background(), tok)
		fmt.Println(tok, errors.Is(err, server.ErrInvalidToken), errors.Is(err, server.ErrIntrospectionRateLimited))
	}
	fmt.Println("asked the IdP", asked.Load(), "times")
	// Output:
	// made-up-1 true false
	// made-up-2 true false
	// made-up-3 false true
	// made-up-1 true false
	// asked the IdP 2 times
}
