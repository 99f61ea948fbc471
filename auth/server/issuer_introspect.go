package server

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
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
// 7662). What a stream of tokens can make it ask is bounded: an active
// answer is remembered for a while (positive cache), an inactive one
// for a shorter while (negative cache), concurrent checks of one token
// share one request (single flight), and the requests for tokens not
// remembered are rate-limited (a token bucket): over the rate, a check
// cannot decide (the gate answers 503 with Retry-After) rather than
// refuse, so that a good token is never sent back to sign in again for
// another's flood, while tokens already checked keep being served from
// the cache.
type introspector struct {
	v        *issuerVerifier
	endpoint string
	id       string
	secret   string
	post     bool // client_secret_post: the issuer takes no Basic auth
	ttl      time.Duration
	negTTL   time.Duration
	rate     int           // the rate limit: requests a second, rate at once
	every    time.Duration // (a second / rate)
	slots    chan struct{} // bounds requests in flight
	faults   *quietLog     // the issuer's answers that break RFC 7662

	mu      sync.Mutex
	cache   map[[sha256.Size]byte]cached    // keyed by the token's hash, never the token
	neg     map[[sha256.Size]byte]time.Time // inactive until, by the token's hash
	flights map[[sha256.Size]byte]*flight   // requests in flight, by the token's hash
	bucket  bucket
}

// cached is a remembered active answer.
type cached struct {
	p     Principal
	until time.Time
}

// flight is one introspection request that every concurrent check of its
// token waits for.
type flight struct {
	done      chan struct{} // closed when p and err are set
	p         Principal
	err       error
	abandoned bool // its caller went away before an answer: ask again
}

// introspection is an RFC 7662 answer. active is kept raw: RFC 7662 §2.2
// makes it a JSON boolean, and anything else is the issuer's fault,
// never a token made active.
type introspection struct {
	Active   json.RawMessage  `json:"active"`
	Scope    json.RawMessage  `json:"scope"`
	ClientID string           `json:"client_id"`
	Sub      string           `json:"sub"`
	Iss      string           `json:"iss"`
	Aud      jwt.Audience     `json:"aud"`
	Exp      *jwt.NumericDate `json:"exp"`
	Nbf      *jwt.NumericDate `json:"nbf"`
	Iat      *jwt.NumericDate `json:"iat"`
}

// ErrIntrospectionRateLimited is the error, wrapped, of a check that
// would have asked the issuer beyond the introspection rate limit
// ([IssuerConfig].IntrospectionRate): the verifier cannot decide, and the
// gate answers 503 with Retry-After.
var ErrIntrospectionRateLimited = errors.New("introspection rate limit reached")

// postOnly reports whether the issuer's introspection endpoint takes
// client_secret_post and not client_secret_basic (the default, RFC 8414).
func postOnly(methods []string) bool {
	return len(methods) > 0 && !slices.Contains(methods, "client_secret_basic") && slices.Contains(methods, "client_secret_post")
}

// verify introspects token, or answers from the caches, or waits for
// the request in flight for the same token.
func (in *introspector) verify(ctx context.Context, token string) (Principal, error) {
	key := tokenHash(token)
	for {
		now := in.v.now()
		in.mu.Lock()
		if c, ok := in.cache[key]; ok {
			if now.Before(c.until) {
				in.mu.Unlock()
				return c.p, nil
			}
			delete(in.cache, key)
		}
		if until, ok := in.neg[key]; ok {
			if now.Before(until) {
				in.mu.Unlock()
				return Principal{}, invalid("issuer %s said the token is not valid here (remembered for %s)", in.v.issuer, in.negTTL)
			}
			delete(in.neg, key)
		}
		if f, ok := in.flights[key]; ok {
			in.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return Principal{}, ctx.Err()
			}
			if f.abandoned {
				continue
			}
			return f.p, f.err
		}
		if ok, wait := in.bucket.take(now, in.rate, in.every); !ok {
			in.mu.Unlock()
			in.faults.warn(now, "rate", "oauth: introspection requests beyond the rate limit are not sent; those checks answer 503 (raise --oauth-introspection-rate if this is not a flood)", "issuer", in.v.issuer, "per_second", in.rate)
			return Principal{}, fmt.Errorf("issuer %s: %w (%d a second); retry in %s", in.v.issuer, ErrIntrospectionRateLimited, in.rate, wait.Round(time.Millisecond))
		}
		f := &flight{done: make(chan struct{})}
		in.flights[key] = f
		in.mu.Unlock()

		f.p, f.err = in.introspect(ctx, token, key, now)
		f.abandoned = f.err != nil && ctx.Err() != nil
		in.mu.Lock()
		delete(in.flights, key)
		in.mu.Unlock()
		close(f.done)
		return f.p, f.err
	}
}

// introspect asks the issuer about token, and remembers the answer.
func (in *introspector) introspect(ctx context.Context, token string, key [sha256.Size]byte, now time.Time) (Principal, error) {
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
	p, err := in.judge(ans, now)
	if errors.Is(err, ErrInvalidToken) {
		in.put(key, cached{until: now.Add(in.negTTL)}, now)
		return Principal{}, err
	}
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

// judge applies the claim rules to an introspection answer.
func (in *introspector) judge(ans *introspection, now time.Time) (Principal, error) {
	switch active := strings.TrimSpace(string(ans.Active)); active {
	case "true":
	case "false":
		return Principal{}, invalid("issuer %s says the token is not active", in.v.issuer)
	default:
		what := "no \"active\" member"
		if active != "" {
			what = fmt.Sprintf("\"active\" as %s", jsonKind(active))
		}
		in.faults.warn(now, "active", fmt.Sprintf("oauth: the issuer's introspection answered %s, not a JSON boolean (RFC 7662 §2.2): the token is refused; fix the issuer's introspection endpoint", what), "issuer", in.v.issuer)
		return Principal{}, invalid("issuer %s answered %s: not active", in.v.issuer, what)
	}
	scopes, ok := scopeList(ans.Scope)
	if !ok {
		return Principal{}, invalid("introspection scope is not a string")
	}
	return in.v.check(tokenFacts{
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
}

// jsonKind names the kind of a JSON value by its first byte.
func jsonKind(raw string) string {
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 'n':
		return "null"
	}
	return "a number"
}

// put remembers an answer: an active one (c.p set) in the positive
// cache, an inactive one (c.until only) in the negative cache. Each
// holds at most maxIntrospectionCache entries: expired ones go first,
// then arbitrary ones.
func (in *introspector) put(key [sha256.Size]byte, c cached, now time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if c.p.Subject == "" {
		if len(in.neg) >= maxIntrospectionCache {
			for k, until := range in.neg {
				if !now.Before(until) || len(in.neg) >= maxIntrospectionCache {
					delete(in.neg, k)
				}
			}
		}
		in.neg[key] = c.until
		return
	}
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
	ans, err := decodeIntrospection(body)
	if err != nil {
		return nil, fmt.Errorf("issuer %s: %w", in.v.issuer, err)
	}
	return ans, nil
}

// decodeIntrospection decodes an introspection answer's body. An error
// means it is not a JSON object of the members' types (active aside,
// which judge reads): the issuer could not be understood.
func decodeIntrospection(body []byte) (*introspection, error) {
	var ans introspection
	if err := json.Unmarshal(body, &ans); err != nil {
		return nil, fmt.Errorf("introspection answer is not an RFC 7662 JSON object: %v", err)
	}
	return &ans, nil
}

// IntrospectionSecretEnv is the environment variable serve reads the
// introspection client secret from (a flag would show in ps).
const IntrospectionSecretEnv = "MCP_STDIO_OAUTH_INTROSPECTION_SECRET"
