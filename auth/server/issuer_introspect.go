package server

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
)

// introspector asks the issuer about tokens it cannot check itself (RFC
// 7662), and remembers active answers for a while.
type introspector struct {
	v        *issuerVerifier
	endpoint string
	id       string
	secret   string
	post     bool // client_secret_post: the issuer takes no Basic auth
	ttl      time.Duration
	slots    chan struct{} // bounds requests in flight

	mu    sync.Mutex
	cache map[[sha256.Size]byte]cached // keyed by the token's hash, never the token
}

// cached is a remembered active answer.
type cached struct {
	p     Principal
	until time.Time
}

// introspection is an RFC 7662 answer.
type introspection struct {
	Active   bool             `json:"active"`
	Scope    json.RawMessage  `json:"scope"`
	ClientID string           `json:"client_id"`
	Sub      string           `json:"sub"`
	Iss      string           `json:"iss"`
	Aud      jwt.Audience     `json:"aud"`
	Exp      *jwt.NumericDate `json:"exp"`
	Nbf      *jwt.NumericDate `json:"nbf"`
	Iat      *jwt.NumericDate `json:"iat"`
}

// postOnly reports whether the issuer's introspection endpoint takes
// client_secret_post and not client_secret_basic (the default, RFC 8414).
func postOnly(methods []string) bool {
	return len(methods) > 0 && !slices.Contains(methods, "client_secret_basic") && slices.Contains(methods, "client_secret_post")
}

// verify introspects token, or answers from the cache.
func (in *introspector) verify(ctx context.Context, token string) (Principal, error) {
	key := tokenHash(token)
	now := in.v.now()
	in.mu.Lock()
	c, ok := in.cache[key]
	if ok && !now.Before(c.until) {
		delete(in.cache, key)
		ok = false
	}
	in.mu.Unlock()
	if ok {
		return c.p, nil
	}

	select {
	case in.slots <- struct{}{}:
	case <-ctx.Done():
		return Principal{}, ctx.Err()
	}
	ans, err := in.ask(ctx, token)
	<-in.slots
	if err != nil {
		return Principal{}, err
	}
	if !ans.Active {
		return Principal{}, invalid("issuer %s says the token is not active", in.v.issuer)
	}
	scopes, ok := scopeList(ans.Scope)
	if !ok {
		return Principal{}, invalid("introspection scope is not a string")
	}
	p, err := in.v.check(tokenFacts{
		iss:         ans.Iss,
		issOptional: true,
		aud:         ans.Aud,
		exp:         numericTime(ans.Exp),
		nbf:         numericTime(ans.Nbf),
		iat:         numericTime(ans.Iat),
		sub:         ans.Sub,
		clientID:    ans.ClientID,
		scopes:      scopes,
	})
	if err != nil {
		return Principal{}, err
	}
	until := now.Add(in.ttl)
	if p.Expiry.Before(until) {
		until = p.Expiry
	}
	in.put(key, cached{p: p, until: until}, now)
	return p, nil
}

// put remembers an answer, keeping the cache within maxIntrospectionCache
// entries: expired ones go first, then arbitrary ones.
func (in *introspector) put(key [sha256.Size]byte, c cached, now time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.cache) >= maxIntrospectionCache {
		for k, e := range in.cache {
			if !now.Before(e.until) {
				delete(in.cache, k)
			}
		}
		for k := range in.cache {
			if len(in.cache) < maxIntrospectionCache {
				break
			}
			delete(in.cache, k)
		}
	}
	in.cache[key] = c
}

// ask sends the introspection request. An error is "cannot decide": the
// issuer unreachable, or refusing our own credentials.
func (in *introspector) ask(ctx context.Context, token string) (*introspection, error) {
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	if in.post {
		form.Set("client_id", in.id)
		form.Set("client_secret", in.secret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if !in.post {
		// RFC 6749 §2.3.1: both halves form-encoded before Basic.
		req.SetBasicAuth(url.QueryEscape(in.id), url.QueryEscape(in.secret))
	}
	body, status, err := in.v.do(req, maxIntrospectionBytes)
	if err != nil {
		return nil, fmt.Errorf("issuer %s: introspection: %w", in.v.issuer, err)
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return nil, fmt.Errorf("issuer %s: introspection refused our client credentials (%d): check --oauth-introspection-client-id and %s", in.v.issuer, status, IntrospectionSecretEnv)
	case status != http.StatusOK:
		return nil, fmt.Errorf("issuer %s: introspection answered %d", in.v.issuer, status)
	}
	var ans introspection
	if err := json.Unmarshal(body, &ans); err != nil {
		return nil, fmt.Errorf("issuer %s: introspection answer is not an RFC 7662 JSON object: %v", in.v.issuer, err)
	}
	return &ans, nil
}

// IntrospectionSecretEnv is the environment variable serve reads the
// introspection client secret from (a flag would show in ps).
const IntrospectionSecretEnv = "MCP_STDIO_OAUTH_INTROSPECTION_SECRET"
