package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// allowedAlgorithms are the JWS algorithms an access token may be signed
// with: asymmetric only. none and the HMACs are refused by go-jose's
// parser before anything else is looked at.
var allowedAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.PS256, jose.ES256, jose.EdDSA}

// keyring holds an issuer's public signing keys and fetches them again
// when a token names a key it does not have (rotation), at most once per
// interval, and when the set is older than jwksMaxAge.
type keyring struct {
	v        *issuerVerifier
	uri      string
	interval time.Duration

	fetch sync.Mutex // held by the one fetch in flight

	mu      sync.Mutex
	keys    []jose.JSONWebKey
	tried   time.Time // the last fetch's start
	fetched time.Time // the last successful fetch's start
	gen     uint64    // fetches finished, successful or not
}

// load fetches the key set at start; an error is returned as is. It does
// not count against the rate limit: a key rotated right after the start
// is picked up at once.
func (k *keyring) load(ctx context.Context) error {
	if err := k.refresh(ctx, k.generation(), true); err != nil {
		return err
	}
	k.mu.Lock()
	k.tried = time.Time{}
	k.mu.Unlock()
	return nil
}

// generation returns how many fetches have finished.
func (k *keyring) generation() uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.gen
}

// lookup returns the keys that may have signed a token whose header names
// kid and alg, fetching the set again when it has none of them and the
// rate limit allows. It returns ErrInvalidToken when no key fits, and
// another error when the set could not be fetched.
func (k *keyring) lookup(ctx context.Context, kid string, alg string) ([]jose.JSONWebKey, error) {
	k.mu.Lock()
	gen := k.gen
	stale := k.v.now().Sub(k.fetched) > jwksMaxAge
	found := matchKeys(k.keys, kid, alg)
	k.mu.Unlock()
	if stale {
		// Keep using the old set if the issuer cannot be reached: it was
		// good an hour ago, and refusing every token would be worse.
		if err := k.refresh(ctx, gen, false); err == nil {
			k.mu.Lock()
			gen, found = k.gen, matchKeys(k.keys, kid, alg)
			k.mu.Unlock()
		}
	}
	if len(found) > 0 {
		return found, nil
	}
	if err := k.refresh(ctx, gen, false); err != nil {
		return nil, err
	}
	k.mu.Lock()
	found = matchKeys(k.keys, kid, alg)
	k.mu.Unlock()
	if len(found) == 0 {
		if kid == "" {
			return nil, invalid("no kid, and no signing key of issuer %s fits %s", k.v.issuer, alg)
		}
		return nil, invalid("unknown signing key %q: not in the key set of issuer %s", kid, k.v.issuer)
	}
	return found, nil
}

// refresh fetches the key set unless a fetch finished since the caller
// saw generation seen (its result is as fresh), or unless one started
// less than interval ago (then the caller's unknown key stays unknown:
// ErrInvalidToken). force skips the rate limit (the first load).
func (k *keyring) refresh(ctx context.Context, seen uint64, force bool) error {
	k.fetch.Lock()
	defer k.fetch.Unlock()
	k.mu.Lock()
	if k.gen != seen {
		k.mu.Unlock()
		return nil
	}
	now := k.v.now()
	if !force && now.Sub(k.tried) < k.interval {
		k.mu.Unlock()
		return invalid("unknown signing key, and the key set of issuer %s was fetched less than %s ago", k.v.issuer, k.interval)
	}
	k.tried = now
	k.mu.Unlock()

	keys, err := k.get(ctx)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.gen++
	if err != nil {
		return fmt.Errorf("issuer %s: fetching its key set: %w", k.v.issuer, err)
	}
	k.keys, k.fetched = keys, now
	k.v.log.Debug("oauth issuer key set fetched", "issuer", k.v.issuer, "keys", len(keys))
	return nil
}

// get fetches and parses the key set, keeping the public signing keys
// go-jose understands: a key it cannot parse (another kty, an encryption
// key) is skipped, not a reason to refuse the whole set; symmetric keys
// are never kept, and private halves are dropped.
func (k *keyring) get(ctx context.Context) ([]jose.JSONWebKey, error) {
	body, status, err := k.v.get(ctx, k.uri, maxJWKSBytes)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("%s answered %d", k.uri, status)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("%s: not a JWK set: %v", k.uri, err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var key jose.JSONWebKey
		if err := key.UnmarshalJSON(raw); err != nil || !key.Valid() {
			continue
		}
		if key.Use != "" && key.Use != "sig" {
			continue
		}
		if !key.IsPublic() {
			pub := key.Public()
			if !pub.Valid() || !pub.IsPublic() {
				continue // symmetric: never a verification key here
			}
			key = pub
		}
		keys = append(keys, key)
		if len(keys) == maxJWKSKeys {
			break
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s holds no public signing key", k.uri)
	}
	return keys, nil
}

// matchKeys returns the keys of set that a token with header kid and alg
// may have been signed with: the same kid (any key when the token names
// none), and an alg that agrees when the key names one.
func matchKeys(set []jose.JSONWebKey, kid, alg string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, key := range set {
		if kid != "" && key.KeyID != kid {
			continue
		}
		if key.Algorithm != "" && key.Algorithm != alg {
			continue
		}
		out = append(out, key)
	}
	return out
}

// accessClaims are the claims of a JWT access token beyond the registered
// ones (RFC 9068).
type accessClaims struct {
	Scope    json.RawMessage `json:"scope"`
	Scp      json.RawMessage `json:"scp"`
	ClientID string          `json:"client_id"`
	Azp      string          `json:"azp"`
}

// verifyJWT checks a token in the JWS compact serialization.
func (v *issuerVerifier) verifyJWT(ctx context.Context, token string) (Principal, error) {
	tok, err := jwt.ParseSigned(token, allowedAlgorithms)
	if err != nil {
		return Principal{}, invalid("not a JWT signed with RS256, PS256, ES256 or EdDSA")
	}
	if len(tok.Headers) != 1 {
		return Principal{}, invalid("a JWT with %d signatures", len(tok.Headers))
	}
	h := tok.Headers[0]
	if typ, ok := h.ExtraHeaders[jose.HeaderType]; ok {
		s, _ := typ.(string)
		switch strings.ToLower(s) {
		case "jwt", "at+jwt", "application/at+jwt":
		default:
			return Principal{}, invalid("typ %q is not an access token's", s)
		}
	}
	// The issuer is looked at before the signature only to spare a key
	// fetch for a token of another issuer (several --oauth-issuer): the
	// claims are checked again, verified, below.
	var peek jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&peek); err != nil {
		return Principal{}, invalid("claims are not a JSON object")
	}
	if peek.Issuer != v.issuer {
		return Principal{}, invalid("issued by %q, not %q", peek.Issuer, v.issuer)
	}
	keys, err := v.keys.lookup(ctx, h.KeyID, h.Algorithm)
	if err != nil {
		return Principal{}, err
	}
	var std jwt.Claims
	var extra accessClaims
	verified := false
	for _, key := range keys {
		if err := tok.Claims(key.Key, &std, &extra); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		return Principal{}, invalid("signature does not verify with the key set of issuer %s", v.issuer)
	}
	scopes, ok := scopeList(extra.Scope)
	if !ok {
		return Principal{}, invalid("scope is not a string")
	}
	scp, ok := scopeList(extra.Scp)
	if !ok {
		return Principal{}, invalid("scp is not an array of strings")
	}
	f := tokenFacts{
		iss:      std.Issuer,
		aud:      std.Audience,
		exp:      numericTime(std.Expiry),
		nbf:      numericTime(std.NotBefore),
		iat:      numericTime(std.IssuedAt),
		sub:      std.Subject,
		clientID: extra.ClientID,
		scopes:   mergeScopes(scopes, scp),
	}
	if f.clientID == "" {
		f.clientID = extra.Azp
	}
	return v.check(f)
}

// numericTime converts a JWT NumericDate, nil when absent.
func numericTime(d *jwt.NumericDate) *time.Time {
	if d == nil {
		return nil
	}
	t := d.Time()
	return &t
}

// scopeList reads a scope claim: a space-separated string or an array of
// strings. Absent (or null) is no scopes; ok is false for anything else.
func scopeList(raw json.RawMessage) (scopes []string, ok bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return strings.Fields(s), true
	}
	var a []string
	if err := json.Unmarshal(raw, &a); err == nil {
		return a, true
	}
	return nil, false
}

// mergeScopes returns a followed by the scopes of b not in a.
func mergeScopes(a, b []string) []string {
	out := a
	for _, s := range b {
		dup := false
		for _, t := range out {
			if s == t {
				dup = true
				break
			}
		}
		if !dup && s != "" {
			out = append(out, s)
		}
	}
	return out
}
