package server_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
)

// decodedParts returns the three decoded parts of a compact token, or nil.
func decodedParts(tok string) [][]byte {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil
	}
	var out [][]byte
	for _, p := range parts {
		b, err := base64.RawURLEncoding.DecodeString(p)
		if err != nil {
			return nil
		}
		out = append(out, b)
	}
	return out
}

// FuzzIssuerVerify feeds attacker bytes to a verifier whose issuer knows
// one key: whatever the bytes, Verify must not panic, must not reach the
// issuer again (the refresh interval outlasts the fuzzing), and must
// accept nothing but a header and claims the issuer signed (the seeds'
// good tokens, however base64 spells them).
func FuzzIssuerVerify(f *testing.F) {
	c := newClock()
	k := newKey(f, "k1", jose.ES256)
	idp := newIdP(f, "", k)
	idp.introspect = false
	v := newVerifier(f, idp, c, func(cfg *server.IssuerConfig) {
		cfg.JWKSRefreshInterval = 1000 * time.Hour
	})
	claims := idp.claims(c)
	signed := map[string]bool{} // decoded header + payload the issuer signed
	sign := func(typ string) string {
		tok := k.sign(f, claims, typ)
		p := decodedParts(tok)
		signed[string(p[0])+"\x00"+string(p[1])] = true
		return tok
	}
	good := sign("at+jwt")
	parts := strings.Split(good, ".")
	other := newKey(f, "k2", jose.RS256)
	pub, _ := k.public().MarshalJSON()

	// The first unknown key after the start fetches the set once; from
	// then on the interval holds.
	if _, err := v.Verify(context.Background(), other.sign(f, claims, "at+jwt")); !errors.Is(err, server.ErrInvalidToken) {
		f.Fatal(err)
	}

	f.Add(good)
	f.Add(sign(""))
	f.Add(other.sign(f, claims, "at+jwt"))
	f.Add(unsigned(claims))
	f.Add(hs256(f, "k1", pub, claims))
	f.Add(parts[0] + "." + parts[1] + ".")
	f.Add(parts[0] + ".." + parts[2])
	f.Add("." + parts[1] + "." + parts[2])
	f.Add(parts[0] + "." + parts[1] + "." + parts[2] + "." + parts[2])
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"ES256","kid":"k1","crit":["exp"]}`)) + "." + parts[1] + "." + parts[2])
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"ES256","kid":{"a":1}}`)) + "." + parts[1] + "." + parts[2])
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"ES256","jwk":{"kty":"oct","k":"AA"}}`)) + "." + parts[1] + "." + parts[2])
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"EdDSA","kid":"k1","typ":7}`)) + "." + parts[1] + "." + parts[2])
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"ES256","kid":"k1","kid":"k2"}`)) + "." + parts[1] + "." + parts[2])
	f.Add(parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"a","x":`+strings.Repeat("[", 20000)+strings.Repeat("]", 20000)+`}`)) + "." + parts[2])
	f.Add("opaque")
	f.Add("..")
	f.Add("")

	f.Fuzz(func(t *testing.T, tok string) {
		hits := idp.jwksHits.Load()
		p, err := v.Verify(context.Background(), tok)
		if idp.jwksHits.Load() != hits {
			t.Fatal("the verifier fetched the key set within the refresh interval")
		}
		if err != nil {
			return
		}
		got := decodedParts(tok)
		if got == nil || !signed[string(got[0])+"\x00"+string(got[1])] {
			t.Fatalf("accepted a token the issuer did not sign: %q (principal %v)", tok, p)
		}
	})
}
