package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The authorization endpoint. A GET is an authorization request: checked,
// then answered with the consent page (as_consent.go), whose form POSTs
// back here. Until the client and its redirect URI are known to be right,
// errors are shown to the person, never sent to a redirect URI (RFC 6749
// §4.1.2.1); after, they go to the redirect URI with state and iss. Every
// response sent to a redirect URI carries iss (RFC 9207).

// AuthorizeRequest is a checked authorization request.
type AuthorizeRequest struct {
	ClientID      string
	RedirectURI   string
	State         string
	CodeChallenge string
	Scopes        []string // nil when the request named none
	Resource      string
}

// maxStateLen bounds the state echoed back.
const maxStateLen = 1024

// ParseAuthorizeQuery parses an authorization request's query. It checks
// what needs no client: each parameter at most once, client_id and
// redirect_uri present, response_type code, a PKCE S256 challenge (plain
// and a missing method are refused), a resource, a well-formed scope. The
// error's code is the OAuth error code; redirectable reports whether the
// error may be sent to the redirect URI (once the client has vouched for
// it), as opposed to shown to the person.
func ParseAuthorizeQuery(rawQuery string) (req AuthorizeRequest, err *OAuthError, redirectable bool) {
	v, perr := parseForm(rawQuery)
	if perr != nil {
		return req, perr, false
	}
	req.ClientID = v.Get("client_id")
	req.RedirectURI = v.Get("redirect_uri")
	req.State = v.Get("state")
	if req.ClientID == "" {
		return req, errInvalidRequest("client_id is missing"), false
	}
	if req.RedirectURI == "" {
		return req, errInvalidRequest("redirect_uri is missing"), false
	}
	if err := checkRedirectShape(req.RedirectURI); err != nil {
		return req, errInvalidRequest("redirect_uri is %v", err), false
	}
	if len(req.State) > maxStateLen {
		return req, errInvalidRequest("state is longer than %d bytes", maxStateLen), false
	}
	switch rt := v.Get("response_type"); rt {
	case "code":
	case "":
		return req, errInvalidRequest("response_type is missing"), true
	default:
		return req, &OAuthError{http.StatusBadRequest, "unsupported_response_type", "only response_type=code is supported"}, true
	}
	if v.Get("code_challenge") == "" {
		return req, errInvalidRequest("PKCE is required: code_challenge is missing"), true
	}
	if m := v.Get("code_challenge_method"); m != "S256" {
		return req, errInvalidRequest("code_challenge_method must be S256 (plain is not allowed)"), true
	}
	req.CodeChallenge = v.Get("code_challenge")
	if !validChallenge(req.CodeChallenge) {
		return req, errInvalidRequest("code_challenge is not a base64url SHA-256"), true
	}
	res := v.Get("resource")
	if res == "" {
		return req, &OAuthError{http.StatusBadRequest, "invalid_target", "resource is missing: name the MCP server's URL (RFC 8707)"}, true
	}
	canon, ok := canonicalResource(res)
	if !ok {
		return req, &OAuthError{http.StatusBadRequest, "invalid_target", "resource is not an absolute http(s) URI"}, true
	}
	req.Resource = canon
	if s, ok := v["scope"]; ok {
		for _, tok := range strings.Split(s[0], " ") {
			if tok == "" {
				continue
			}
			if !ValidScope(tok) {
				return req, &OAuthError{http.StatusBadRequest, "invalid_scope", "scope is malformed"}, true
			}
			if !slices.Contains(req.Scopes, tok) {
				req.Scopes = append(req.Scopes, tok)
			}
		}
	}
	return req, nil, true
}

// validChallenge reports whether c is 43 base64url characters (a SHA-256).
func validChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	return strings.Trim(c, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == ""
}

// client is who an authorization request comes from.
type client struct {
	id, name     string
	redirectURIs []string
}

// lookupClient finds a registered client, or resolves a URL client_id
// through URLClients — outside the lock (row 186).
func (a *AuthorizationServer) lookupClient(ctx context.Context, id string) (client, error) {
	a.mu.RLock()
	c, ok := a.clients[id]
	var found client
	if ok {
		found = client{id: c.ID, name: c.Name, redirectURIs: slices.Clone(c.RedirectURIs)}
	}
	a.mu.RUnlock()
	if ok {
		return found, nil
	}
	if strings.HasPrefix(id, "https://") && a.cfg.URLClients != nil && a.cfg.URLClients.Allowed(id) {
		name, uris, err := a.cfg.URLClients.Client(ctx, id)
		if err != nil {
			return client{}, fmt.Errorf("the client's metadata document could not be used: %v", err)
		}
		return client{id: id, name: name, redirectURIs: uris}, nil
	}
	return client{}, fmt.Errorf("the client is not registered here (it may have been registered with this server before its state was lost: remove it from the app and add it again)")
}

// grantedScopes returns the scopes an authorization gets: those asked
// (offline_access aside: every grant has a refresh token), all when none
// were, or an error for one this server does not have.
func (a *AuthorizationServer) grantedScopes(asked []string) ([]string, *OAuthError) {
	var out []string
	for _, s := range asked {
		if s == "offline_access" {
			continue
		}
		if !slices.Contains(a.cfg.Scopes, s) {
			return nil, &OAuthError{http.StatusBadRequest, "invalid_scope", fmt.Sprintf("scope %q is not offered here (offered: %s)", s, strings.Join(a.cfg.Scopes, " "))}
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		out = slices.Clone(a.cfg.Scopes)
	}
	return out, nil
}

func (a *AuthorizationServer) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		a.authorizeRequest(w, r)
	case http.MethodPost:
		a.consentAnswer(w, r)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		a.errorPage(w, http.StatusMethodNotAllowed, "This address takes GET and POST only.")
	}
}

// authorizeRequest checks an authorization request and shows the consent
// page.
func (a *AuthorizationServer) authorizeRequest(w http.ResponseWriter, r *http.Request) {
	req, perr, redirectable := ParseAuthorizeQuery(r.URL.RawQuery)
	if req.ClientID == "" || req.RedirectURI == "" || !redirectable {
		a.errorPage(w, http.StatusBadRequest, "This sign-in request is not valid: "+perr.Description+".")
		return
	}
	c, err := a.lookupClient(r.Context(), req.ClientID)
	if err != nil {
		a.errorPage(w, http.StatusBadRequest, "This sign-in request cannot be served: "+err.Error()+".")
		return
	}
	if !redirectMatches(c.redirectURIs, req.RedirectURI) {
		a.errorPage(w, http.StatusBadRequest, "This sign-in request names a redirect URI the client did not register.")
		return
	}
	if perr != nil {
		a.redirectError(w, r, req.RedirectURI, req.State, perr)
		return
	}
	if req.Resource != a.resource {
		a.redirectError(w, r, req.RedirectURI, req.State, &OAuthError{http.StatusBadRequest, "invalid_target", "resource must be " + a.resource})
		return
	}
	scopes, serr := a.grantedScopes(req.Scopes)
	if serr != nil {
		a.redirectError(w, r, req.RedirectURI, req.State, serr)
		return
	}
	now := a.now()
	p := &pendingAuth{
		id:            newSecret(),
		csrf:          newSecret(),
		client:        c,
		source:        a.source(r),
		redirectURI:   req.RedirectURI,
		state:         req.State,
		codeChallenge: req.CodeChallenge,
		scopes:        scopes,
		expires:       now.Add(pendingLifetime),
	}
	a.mu.Lock()
	a.prune(now)
	if refusal := a.addPending(p, now); refusal != nil {
		a.mu.Unlock()
		a.refusals.warn(now, "pending", "oauth: an authorization request was refused: too many consent pages waiting for one address or one client", "source", p.source, "per_source", maxPendingPerSource, "per_client", maxPendingPerClient)
		a.redirectError(w, r, req.RedirectURI, req.State, refusal)
		return
	}
	a.mu.Unlock()
	a.showConsent(w, r, p, http.StatusOK, "")
}

// addPending adds p unless its source or its client has as many consent
// pages waiting as it may; the refusal says when the oldest of them
// expires. At maxPending in all, the oldest page of the source with the
// most makes room. Called with a.mu held.
func (a *AuthorizationServer) addPending(p *pendingAuth, now time.Time) *OAuthError {
	full := func(same func(*pendingAuth) bool, what string, limit int) *OAuthError {
		first := p.expires
		for _, q := range a.pending {
			if same(q) && q.expires.Before(first) {
				first = q.expires
			}
		}
		return &OAuthError{http.StatusServiceUnavailable, "temporarily_unavailable", fmt.Sprintf("%d sign-ins are in progress for %s, as many as may be; finish or close one, or try again in %d s", limit, what, retryAfter(first.Sub(now)))}
	}
	if a.bySource[p.source] >= maxPendingPerSource {
		return full(func(q *pendingAuth) bool { return q.source == p.source }, "your address", maxPendingPerSource)
	}
	if a.byClient[p.client.id] >= maxPendingPerClient {
		return full(func(q *pendingAuth) bool { return q.client.id == p.client.id }, "this client", maxPendingPerClient)
	}
	if len(a.pending) >= maxPending {
		heaviest := ""
		for s, n := range a.bySource {
			if heaviest == "" || n > a.bySource[heaviest] {
				heaviest = s
			}
		}
		var oldest *pendingAuth
		for _, q := range a.pending {
			if q.source == heaviest && (oldest == nil || q.expires.Before(oldest.expires)) {
				oldest = q
			}
		}
		a.dropPending(oldest.id)
	}
	a.pending[p.id] = p
	a.bySource[p.source]++
	a.byClient[p.client.id]++
	return nil
}

// dropPending forgets a pending authorization. Called with a.mu held.
func (a *AuthorizationServer) dropPending(id string) {
	p, ok := a.pending[id]
	if !ok {
		return
	}
	delete(a.pending, id)
	a.noRoom = time.Time{}
	if a.bySource[p.source]--; a.bySource[p.source] <= 0 {
		delete(a.bySource, p.source)
	}
	if a.byClient[p.client.id]--; a.byClient[p.client.id] <= 0 {
		delete(a.byClient, p.client.id)
	}
}

// redirectError sends an error to the client's redirect URI, with state
// and iss.
func (a *AuthorizationServer) redirectError(w http.ResponseWriter, r *http.Request, redirectURI, state string, e *OAuthError) {
	q := url.Values{"error": {e.Code}}
	if e.Description != "" {
		q.Set("error_description", e.Description)
	}
	a.redirectTo(w, r, redirectURI, state, q)
}

// redirectTo sends the browser to redirectURI with q, state and iss added
// to its query.
func (a *AuthorizationServer) redirectTo(w http.ResponseWriter, r *http.Request, redirectURI, state string, q url.Values) {
	u, err := url.Parse(redirectURI)
	if err != nil {
		a.errorPage(w, http.StatusBadRequest, "The redirect URI is not valid.")
		return
	}
	all := u.Query()
	for k, vs := range q {
		all[k] = vs
	}
	if state != "" {
		all.Set("state", state)
	}
	all.Set("iss", a.issuer)
	u.RawQuery = all.Encode()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

// pendingAuth is an authorization request waiting on its consent page.
type pendingAuth struct {
	id, csrf      string
	client        client
	source        string // where the request came from (as_source.go)
	redirectURI   string
	state         string
	codeChallenge string
	scopes        []string
	expires       time.Time
	attempts      int
}

// codeEntry is an issued authorization code, by hash, until it expires:
// a used one is kept so that its reuse revokes what it gave.
type codeEntry struct {
	client        string
	redirectURI   string
	codeChallenge string
	scopes        []string
	subject       string
	expires       time.Time
	used          bool
	grant         string // once exchanged
}
