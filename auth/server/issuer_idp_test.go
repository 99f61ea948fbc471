package server_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// t0 is the fake clock's time.
var t0 = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)

// testResource is the resource the verifiers under test protect.
const testResource = "https://mcp.example.com/mcp"

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: t0} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// signingKey is a private key the fake IdP signs with.
type signingKey struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

func newKey(t testing.TB, kid string, alg jose.SignatureAlgorithm) signingKey {
	t.Helper()
	var priv crypto.Signer
	var err error
	switch alg {
	case jose.RS256, jose.PS256:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.ES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.EdDSA:
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatalf("no key for %s", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{kid: kid, alg: alg, priv: priv}
}

// sign returns a JWS compact token of claims with typ.
func (k signingKey) sign(t testing.TB, claims map[string]any, typ string) string {
	t.Helper()
	opts := &jose.SignerOptions{}
	if typ != "" {
		opts = opts.WithType(jose.ContentType(typ))
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.kid}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// public returns the key's JWK as an IdP publishes it.
func (k signingKey) public() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"}
}

// fakeIdP is an authorization server in the test process: metadata,
// JWKS and introspection, with counters and switches.
type fakeIdP struct {
	t      testing.TB
	srv    *httptest.Server
	issuer string

	mu         sync.Mutex
	keys       []signingKey
	active     map[string]map[string]any // opaque token → introspection answer
	introspect bool
	down       bool // every endpoint answers 503

	jwksHits   atomic.Int32
	introHits  atomic.Int32
	introHook  func(token string) // when set, runs at each introspection request
	clientID   string
	secret     string
	wellKnowns []string // well-known paths asked, in order
}

// newIdP starts a fake IdP whose issuer is its URL plus path ("" or
// "/tenant1"), signing with keys.
func newIdP(t testing.TB, path string, keys ...signingKey) *fakeIdP {
	t.Helper()
	idp := &fakeIdP{t: t, keys: keys, active: map[string]map[string]any{}, introspect: true, clientID: "rs", secret: "s3cr:et"}
	idp.srv = httptest.NewServer(http.HandlerFunc(idp.serve))
	t.Cleanup(idp.srv.Close)
	idp.issuer = idp.srv.URL + path
	return idp
}

func (idp *fakeIdP) serve(w http.ResponseWriter, r *http.Request) {
	idp.mu.Lock()
	down := idp.down
	idp.mu.Unlock()
	if down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	switch {
	case strings.HasPrefix(r.URL.Path, "/.well-known/") || strings.Contains(r.URL.Path, "/.well-known/"):
		idp.mu.Lock()
		idp.wellKnowns = append(idp.wellKnowns, r.URL.Path)
		idp.mu.Unlock()
		want := []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"}
		if p := strings.TrimPrefix(idp.issuer, idp.srv.URL); p != "" {
			want = []string{"/.well-known/openid-configuration" + p} // as an OIDC provider with a path
		}
		for _, p := range want {
			if r.URL.Path == p {
				md := map[string]any{"issuer": idp.issuer, "jwks_uri": idp.srv.URL + "/jwks"}
				if idp.introspect {
					md["introspection_endpoint"] = idp.srv.URL + "/introspect"
				}
				writeJSON(w, md)
				return
			}
		}
		http.NotFound(w, r)
	case r.URL.Path == "/jwks":
		idp.jwksHits.Add(1)
		idp.mu.Lock()
		set := jose.JSONWebKeySet{}
		for _, k := range idp.keys {
			set.Keys = append(set.Keys, k.public())
		}
		idp.mu.Unlock()
		writeJSON(w, set)
	case r.URL.Path == "/introspect" && r.Method == http.MethodPost:
		idp.introHits.Add(1)
		id, secret, ok := r.BasicAuth()
		if !ok || id != idp.clientID || secret != "s3cr%3Aet" { // form-encoded before Basic
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		idp.mu.Lock()
		ans, ok := idp.active[r.PostForm.Get("token")]
		hook := idp.introHook
		idp.mu.Unlock()
		if hook != nil {
			hook(r.PostForm.Get("token"))
		}
		if !ok {
			ans = map[string]any{"active": false}
		}
		writeJSON(w, ans)
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// setKeys replaces the published keys (a rotation).
func (idp *fakeIdP) setKeys(keys ...signingKey) {
	idp.mu.Lock()
	idp.keys = keys
	idp.mu.Unlock()
}

// setDown makes every endpoint answer 503, or not.
func (idp *fakeIdP) setDown(down bool) {
	idp.mu.Lock()
	idp.down = down
	idp.mu.Unlock()
}

// addOpaque makes token known to introspection with answer.
func (idp *fakeIdP) addOpaque(token string, answer map[string]any) {
	idp.mu.Lock()
	idp.active[token] = answer
	idp.mu.Unlock()
}

// claims returns valid access token claims of idp for alice at clock c.
func (idp *fakeIdP) claims(c *clock) map[string]any {
	now := c.Now().Unix()
	return map[string]any{
		"iss":       idp.issuer,
		"sub":       "alice",
		"aud":       testResource,
		"iat":       now,
		"nbf":       now,
		"exp":       now + 3600,
		"scope":     "mcp:tools mcp:read",
		"client_id": "claude",
		"jti":       "1",
	}
}
