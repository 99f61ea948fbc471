package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// Errors of [ClientMetadataFetcher.Fetch], each wrapped with a sentence
// saying what happened and what to do.
var (
	// ErrClientIDNotAllowed: the client_id URL is not one of the
	// --allow-client-id-url entries, so it was not fetched.
	ErrClientIDNotAllowed = errors.New("client_id URL not allowed")
	// ErrClientMetadataUnavailable: no document could be obtained (name
	// resolution, a refused address, connection, TLS, a status other than
	// 200, 404 and 410, a redirect, an oversized or truncated body, the
	// deadline), and there is no validated copy from the last 24 hours.
	ErrClientMetadataUnavailable = errors.New("client metadata document unavailable")
	// ErrClientMetadataInvalid: the document was obtained but is not a
	// valid Client ID Metadata Document for this client_id.
	ErrClientMetadataInvalid = errors.New("invalid client metadata document")
	// ErrClientWithdrawn: the document's URL answered 404 or 410.
	ErrClientWithdrawn = errors.New("client withdrawn")
)

// Cache lifetimes of Client ID Metadata Documents.
const (
	// DefaultClientMetadataFresh is how long a validated document is used
	// without fetching it again when its answer has no Cache-Control
	// max-age.
	DefaultClientMetadataFresh = 5 * time.Minute
	// MaxClientMetadataFresh bounds a document's max-age.
	MaxClientMetadataFresh = time.Hour
	// ClientMetadataRetryAfter is how long a failed fetch stands before the
	// URL is fetched again: callers in between get the same outcome.
	ClientMetadataRetryAfter = 30 * time.Second
	// ClientMetadataStaleFor is how long after its validation the last
	// good copy of a document may stand in when fetching fails in transport.
	ClientMetadataStaleFor = 24 * time.Hour
)

// Bounds of a document's contents.
const (
	cimdMaxRedirectURIs  = 32
	cimdMaxRedirectURI   = 2048
	cimdMaxClientNameLen = 200
)

// ClientMetadata is a validated Client ID Metadata Document: the
// registration of a client whose client_id is an https URL it serves the
// document from. It is never persisted: it lives in the fetcher's memory,
// and grants made to the client carry only its ClientID.
type ClientMetadata struct {
	// ClientID is the document's URL, equal to its client_id.
	ClientID string
	// ClientName is the name the client gives itself, or "". It is the
	// client's own claim, to show as such (escaped) on a consent page.
	ClientName string
	// RedirectURIs are the client's registered redirect URIs, each an
	// absolute https URI (or http on a loopback host) without a fragment.
	// They are the whole registration: --allow-redirect-uri does not apply
	// to CIMD clients. A request's redirect_uri must be one of them, matched
	// as the server matches the redirect URIs of the clients it registers.
	RedirectURIs []string
	// ValidatedAt is when this copy was fetched and validated.
	ValidatedAt time.Time
	// Stale is set when this copy is no longer fresh and stands in for a
	// fetch that failed in transport (at most ClientMetadataStaleFor after
	// ValidatedAt).
	Stale bool
}

// clone returns a copy of m that shares no memory with it, so that no
// caller can change what the cache holds.
func (m ClientMetadata) clone() ClientMetadata {
	m.RedirectURIs = slices.Clone(m.RedirectURIs)
	return m
}

// ClientMetadataConfig configures a [ClientMetadataFetcher].
type ClientMetadataConfig struct {
	// AllowURLs are the exact client_id URLs (--allow-client-id-url) whose
	// documents may be fetched; each must pass [CheckClientIDURL]. Nothing
	// else is ever fetched.
	AllowURLs []string
	// Timeout bounds each fetch as a whole; 0 means
	// DefaultClientMetadataTimeout.
	Timeout time.Duration
	// Now is the clock of the cache lifetimes; nil means time.Now.
	Now func() time.Time
	// Resolver finds the addresses of a URL's host; nil means
	// net.DefaultResolver. Every address it returns is checked.
	Resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}
}

// ClientMetadataFetcher fetches, validates and caches the Client ID
// Metadata Documents of the allowlisted client_id URLs, for the
// authorization endpoint of the embedded authorization server.
//
// Only the exact URLs of ClientMetadataConfig.AllowURLs are fetched,
// compared as strings without normalisation. A fetch resolves the host
// itself and refuses it unless every address is public ([checkPublicAddr]);
// it connects to a checked address only (TLS still verifies the host
// name), follows no redirect, accepts only 200, reads at most
// MaxClientMetadataSize bytes (a longer or truncated body fails), and ends
// at one deadline for all of it, enforced on the socket, so a server that
// trickles bytes cannot hold it.
//
// The cache, per URL:
//   - A validated document is used while fresh: its Cache-Control max-age,
//     at most MaxClientMetadataFresh, else DefaultClientMetadataFresh.
//   - One fetch is in flight per URL; callers that arrive meanwhile wait
//     for it and take its outcome, a failure included.
//   - A failed fetch stands for ClientMetadataRetryAfter: until then callers
//     get its outcome without a new fetch.
//   - The outcome of a transport failure (see ErrClientMetadataUnavailable)
//     is the last validated copy, marked Stale, if it was validated less
//     than ClientMetadataStaleFor ago. A validation failure never falls
//     back, and drops the copy.
//   - A 404 or 410 withdraws the client: the copy is dropped, Fetch fails
//     with ErrClientWithdrawn and StillAllowed is false until a later
//     fetch succeeds.
//
// Nothing here is persisted. A ClientMetadataFetcher is safe for
// concurrent use.
type ClientMetadataFetcher struct {
	allow    []string
	timeout  time.Duration
	now      func() time.Time
	resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}
	cimdTestHooks

	mu      sync.Mutex
	entries map[string]*cimdEntry // keys: allowlisted URLs only, so bounded
}

// cimdEntry is the cache state of one URL; guarded by the fetcher's mu.
type cimdEntry struct {
	good       *ClientMetadata // the last validated copy, or nil
	freshUntil time.Time
	failErr    error       // the last fetch's failure, or nil
	failKind   cimdFailure // its kind
	retryAt    time.Time   // no new fetch before, after a failure
	withdrawn  bool        // the last fetch answered 404 or 410
	inflight   *cimdCall
}

// cimdOutcome is what Fetch returns: a document or an error.
type cimdOutcome struct {
	md  ClientMetadata
	err error
}

// cimdCall is a fetch in flight; its outcome is set before done closes.
type cimdCall struct {
	done chan struct{}
	cimdOutcome
}

// NewClientMetadataFetcher returns a fetcher for cfg, or an error naming
// the first URL of cfg.AllowURLs that [CheckClientIDURL] refuses.
func NewClientMetadataFetcher(cfg ClientMetadataConfig) (*ClientMetadataFetcher, error) {
	for _, u := range cfg.AllowURLs {
		if err := CheckClientIDURL(u); err != nil {
			return nil, err
		}
	}
	f := &ClientMetadataFetcher{
		allow:    slices.Clone(cfg.AllowURLs),
		timeout:  cfg.Timeout,
		now:      cfg.Now,
		resolver: cfg.Resolver,
		entries:  make(map[string]*cimdEntry),
	}
	if f.timeout <= 0 {
		f.timeout = DefaultClientMetadataTimeout
	}
	if f.now == nil {
		f.now = time.Now
	}
	if f.resolver == nil {
		f.resolver = net.DefaultResolver
	}
	return f, nil
}

// CheckClientIDURL reports why s cannot be an --allow-client-id-url entry:
// a Client ID Metadata Document URL is https, with a host, a path other
// than "/" and without dot segments, and no user info or fragment.
func CheckClientIDURL(s string) error {
	u, err := url.Parse(s)
	bad := func(why string) error {
		return fmt.Errorf("invalid --allow-client-id-url %q: %s; give the exact https URL the client uses as its client_id, such as https://app.example.com/oauth/client.json", s, why)
	}
	switch {
	case err != nil:
		return bad("not a URL")
	case u.Scheme != "https" || !strings.HasPrefix(s, "https://"):
		return bad("not https")
	case u.Host == "" || u.Hostname() == "":
		return bad("no host")
	case u.User != nil:
		return bad("it has user info")
	case strings.Contains(s, "#"):
		return bad("it has a fragment")
	case u.EscapedPath() == "" || u.EscapedPath() == "/":
		return bad("no path")
	}
	for seg := range strings.SplitSeq(u.EscapedPath(), "/") {
		if seg == "." || seg == ".." {
			return bad("its path has a dot segment")
		}
	}
	return nil
}

// StillAllowed reports whether clientID is an allowlisted client_id URL
// whose document was not found withdrawn (404 or 410) by the last fetch.
// The token endpoint calls it before honouring a code or refresh token
// issued to a URL-shaped client_id: CIMD clients are never persisted, so
// an allowlist changed across a restart, or a withdrawal, ends their
// grants. It never fetches.
func (f *ClientMetadataFetcher) StillAllowed(clientID string) bool {
	if !slices.Contains(f.allow, clientID) {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.entries[clientID]
	return e == nil || !e.withdrawn
}

// Fetch returns the validated Client ID Metadata Document of clientID,
// which must be one of the allowlisted URLs exactly (ErrClientIDNotAllowed
// otherwise, without any network access), from the cache or by fetching
// it, as [ClientMetadataFetcher] describes. Failures wrap
// ErrClientMetadataUnavailable, ErrClientMetadataInvalid or
// ErrClientWithdrawn, with a message for the person signing in; if ctx
// ends first, Fetch returns its cause, and the fetch goes on to fill the
// cache for the next caller.
//
// A fetch takes up to the configured timeout. The caller must not hold a
// lock that other requests need (the authorization server's own) while
// calling Fetch: look the client up, release the lock, Fetch, and take the
// lock again to record the authorization request. The fetcher takes only
// its own lock, and never across network access.
func (f *ClientMetadataFetcher) Fetch(ctx context.Context, clientID string) (ClientMetadata, error) {
	if !slices.Contains(f.allow, clientID) {
		return ClientMetadata{}, fmt.Errorf("%w: %q is not an --allow-client-id-url entry of this server; ask its operator to add it, or register the client (dynamic client registration)", ErrClientIDNotAllowed, cimdTrim(clientID))
	}
	f.mu.Lock()
	e := f.entries[clientID]
	if e == nil {
		e = &cimdEntry{}
		f.entries[clientID] = e
	}
	if out, ok := e.cached(f.now()); ok {
		f.mu.Unlock()
		return out.md, out.err
	}
	c := e.inflight
	if c == nil {
		c = &cimdCall{done: make(chan struct{})}
		e.inflight = c
		// The fetch belongs to every caller, so no caller's cancellation
		// ends it; its own deadline does.
		go f.run(context.WithoutCancel(ctx), clientID, e, c)
	} else if f.onWait != nil {
		f.onWait()
	}
	f.mu.Unlock()
	select {
	case <-c.done:
		return c.md.clone(), c.err
	case <-ctx.Done():
		return ClientMetadata{}, context.Cause(ctx)
	}
}

// run fetches clientID's document, records the outcome in e and hands it
// to the callers waiting on c. It ends within the fetch's deadline.
func (f *ClientMetadataFetcher) run(ctx context.Context, clientID string, e *cimdEntry, c *cimdCall) {
	md, header, kind, err := f.fetchOnce(ctx, clientID)
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	e.inflight = nil
	if kind == cimdOK {
		md.ValidatedAt = now
		e.good = &md
		e.freshUntil = now.Add(cimdFreshFor(header, DefaultClientMetadataFresh, MaxClientMetadataFresh))
		e.failErr, e.failKind, e.withdrawn = nil, cimdOK, false
		c.cimdOutcome = cimdOutcome{md: md}
		close(c.done)
		return
	}
	e.failErr, e.failKind, e.retryAt = err, kind, now.Add(ClientMetadataRetryAfter)
	if kind == cimdWithdrawn {
		e.withdrawn = true // until a fetch succeeds
	}
	if kind != cimdTransport {
		e.good = nil
	}
	c.cimdOutcome = e.failure(now)
	close(c.done)
}

// fetchOnce fetches and validates clientID's document; the error of a
// failure wraps the sentinel of its kind.
func (f *ClientMetadataFetcher) fetchOnce(ctx context.Context, clientID string) (ClientMetadata, http.Header, cimdFailure, error) {
	u, err := url.Parse(clientID)
	if err != nil { // CheckClientIDURL passed it: cannot happen
		return ClientMetadata{}, nil, cimdInvalid, fmt.Errorf("%w: %v", ErrClientMetadataInvalid, err)
	}
	body, header, kind, err := f.cimdGet(ctx, clientID, u)
	switch kind {
	case cimdWithdrawn:
		return ClientMetadata{}, nil, kind, fmt.Errorf("%w: the client metadata document %s is gone (%v); the client's publisher has withdrawn it", ErrClientWithdrawn, clientID, err)
	case cimdTransport:
		return ClientMetadata{}, nil, kind, fmt.Errorf("%w: fetching %s: %v; try again later, or ask the client's publisher to fix it", ErrClientMetadataUnavailable, clientID, err)
	}
	md, err := parseClientMetadata(clientID, body)
	if err != nil {
		return ClientMetadata{}, nil, cimdInvalid, fmt.Errorf("%w at %s: %v; ask the client's publisher to fix it", ErrClientMetadataInvalid, clientID, err)
	}
	return md, header, cimdOK, nil
}

// cached returns the outcome e gives at now without fetching, and whether
// it gives one: a fresh copy, or a failure that still stands.
func (e *cimdEntry) cached(now time.Time) (cimdOutcome, bool) {
	if e.good != nil && now.Before(e.freshUntil) {
		return cimdOutcome{md: e.good.clone()}, true
	}
	if e.failErr != nil && now.Before(e.retryAt) {
		return e.failure(now), true
	}
	return cimdOutcome{}, false
}

// failure is the outcome of e's standing failure at now: the stale copy
// after a transport failure while it is young enough, else the error.
func (e *cimdEntry) failure(now time.Time) cimdOutcome {
	if e.failKind == cimdTransport && e.good != nil && now.Sub(e.good.ValidatedAt) < ClientMetadataStaleFor {
		md := e.good.clone()
		md.Stale = true
		return cimdOutcome{md: md}
	}
	return cimdOutcome{err: e.failErr}
}

// cimdDocument is the part of a Client ID Metadata Document (RFC 7591
// client metadata) that is read; other fields are ignored.
type cimdDocument struct {
	ClientID                *string  `json:"client_id"`
	ClientName              *string  `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod *string  `json:"token_endpoint_auth_method"`
}

// parseClientMetadata parses and validates the document fetched from
// clientID: a JSON object whose client_id is clientID exactly, with at
// least one redirect URI (absolute, https or http on a loopback host, no
// fragment, no user info), an optional bounded client_name, and a
// token_endpoint_auth_method of "none" or none at all. A missing method is
// taken as "none": a document cannot carry a client secret, so the only
// other method a CIMD client could use (private_key_jwt) would be named.
func parseClientMetadata(clientID string, body []byte) (ClientMetadata, error) {
	if len(body) > MaxClientMetadataSize {
		return ClientMetadata{}, fmt.Errorf("the document is longer than %d bytes", MaxClientMetadataSize)
	}
	var doc cimdDocument
	if err := json.Unmarshal(body, &doc); err != nil {
		return ClientMetadata{}, fmt.Errorf("not a JSON client metadata object: %v", err)
	}
	switch {
	case doc.ClientID == nil:
		return ClientMetadata{}, errors.New("it has no client_id")
	case *doc.ClientID != clientID:
		return ClientMetadata{}, fmt.Errorf("its client_id %q is not its URL", cimdTrim(*doc.ClientID))
	case doc.TokenEndpointAuthMethod != nil && *doc.TokenEndpointAuthMethod != "none":
		return ClientMetadata{}, fmt.Errorf("its token_endpoint_auth_method %q is not \"none\": only public clients are supported", cimdTrim(*doc.TokenEndpointAuthMethod))
	case len(doc.RedirectURIs) == 0:
		return ClientMetadata{}, errors.New("it has no redirect_uris")
	case len(doc.RedirectURIs) > cimdMaxRedirectURIs:
		return ClientMetadata{}, fmt.Errorf("it has %d redirect_uris, more than %d", len(doc.RedirectURIs), cimdMaxRedirectURIs)
	}
	md := ClientMetadata{ClientID: clientID, RedirectURIs: slices.Clone(doc.RedirectURIs)}
	if doc.ClientName != nil {
		name := *doc.ClientName
		switch {
		case len(name) > cimdMaxClientNameLen:
			return ClientMetadata{}, fmt.Errorf("its client_name is longer than %d bytes", cimdMaxClientNameLen)
		case !utf8.ValidString(name) || strings.IndexFunc(name, unicode.IsControl) >= 0:
			return ClientMetadata{}, errors.New("its client_name has control characters or invalid UTF-8")
		}
		md.ClientName = name
	}
	for _, r := range doc.RedirectURIs {
		if err := cimdCheckRedirectURI(r); err != nil {
			return ClientMetadata{}, fmt.Errorf("redirect URI %q: %v", cimdTrim(r), err)
		}
	}
	return md, nil
}

// cimdCheckRedirectURI reports why r cannot be a CIMD client's redirect URI.
func cimdCheckRedirectURI(r string) error {
	if len(r) > cimdMaxRedirectURI {
		return fmt.Errorf("longer than %d bytes", cimdMaxRedirectURI)
	}
	u, err := url.Parse(r)
	switch {
	case err != nil:
		return errors.New("not a URI")
	case !u.IsAbs() || u.Opaque != "" || u.Host == "":
		return errors.New("not an absolute URI with a host")
	case strings.Contains(r, "#"):
		return errors.New("it has a fragment")
	case u.User != nil:
		return errors.New("it has user info")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && cimdLoopbackHost(u.Hostname()):
		return nil
	}
	return errors.New("not https (plain http only on a loopback host)")
}

// cimdLoopbackHost reports whether host (from url.URL.Hostname) names
// this machine: localhost or a loopback IP address.
func cimdLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Zone() == "" && a.Unmap().IsLoopback()
}

// cimdTrim shortens an attacker-chosen string quoted in an error message.
func cimdTrim(s string) string {
	const n = 100
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
