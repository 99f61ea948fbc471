package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"slices"
	"strings"
	"time"
)

// The token endpoint: the authorization code grant (with the PKCE
// verifier, the same client and redirect URI, and the resource the code
// was issued for), and the refresh token grant, which rotates the refresh
// token on every use. A code used twice, or a rotated refresh token used
// again, means one of them was stolen: the grant, and every token it gave,
// is revoked. Clients are public: the client_id in the form names them.

// TokenRequest is a parsed token request.
type TokenRequest struct {
	GrantType    string
	ClientID     string
	Code         string
	RedirectURI  string
	CodeVerifier string
	RefreshToken string
	Scopes       []string
	Resource     string // canonical; "" when not sent
}

// ParseTokenForm parses a token request's form: each parameter at most
// once, a grant type, and the parameters that grant needs.
func ParseTokenForm(body string) (TokenRequest, *OAuthError) {
	v, err := parseForm(body)
	if err != nil {
		return TokenRequest{}, err
	}
	req := TokenRequest{
		GrantType:    v.Get("grant_type"),
		ClientID:     v.Get("client_id"),
		Code:         v.Get("code"),
		RedirectURI:  v.Get("redirect_uri"),
		CodeVerifier: v.Get("code_verifier"),
		RefreshToken: v.Get("refresh_token"),
	}
	if res := v.Get("resource"); res != "" {
		canon, ok := canonicalResource(res)
		if !ok {
			return req, &OAuthError{http.StatusBadRequest, "invalid_target", "resource is not an absolute http(s) URI"}
		}
		req.Resource = canon
	}
	for _, s := range strings.Split(v.Get("scope"), " ") {
		if s == "" {
			continue
		}
		if !ValidScope(s) {
			return req, &OAuthError{http.StatusBadRequest, "invalid_scope", "scope is malformed"}
		}
		req.Scopes = append(req.Scopes, s)
	}
	switch req.GrantType {
	case "authorization_code":
		switch {
		case req.Code == "":
			return req, errInvalidRequest("code is missing")
		case req.RedirectURI == "":
			return req, errInvalidRequest("redirect_uri is missing")
		case req.CodeVerifier == "":
			return req, errInvalidRequest("code_verifier is missing (PKCE is required)")
		case !validVerifier(req.CodeVerifier):
			return req, errInvalidGrant("code_verifier is not 43 to 128 unreserved characters")
		}
	case "refresh_token":
		if req.RefreshToken == "" {
			return req, errInvalidRequest("refresh_token is missing")
		}
	case "":
		return req, errInvalidRequest("grant_type is missing")
	default:
		return req, &OAuthError{http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token"}
	}
	if req.ClientID == "" {
		return req, errInvalidClient("client_id is missing (this server has public clients: send client_id in the form)")
	}
	return req, nil
}

// validVerifier reports whether v is a PKCE code verifier (RFC 7636 §4.1).
func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	return strings.Trim(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~") == ""
}

// TokenResponse is a successful token response.
type TokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

func (a *AuthorizationServer) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		writeError(w, errInvalidClient("this server has public clients only: send client_id in the form, without an Authorization header"))
		return
	}
	body, ferr := readForm(w, r)
	if ferr != nil {
		writeError(w, ferr)
		return
	}
	req, perr := ParseTokenForm(body)
	if perr != nil {
		writeError(w, perr)
		return
	}
	if req.Resource != "" && req.Resource != a.resource {
		writeError(w, &OAuthError{http.StatusBadRequest, "invalid_target", "resource must be " + a.resource})
		return
	}
	var resp TokenResponse
	var err *OAuthError
	if req.GrantType == "authorization_code" {
		resp, err = a.exchangeCode(req)
	} else {
		resp, err = a.refreshGrant(req)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// exchangeCode redeems an authorization code for a new grant's tokens.
// The grant is on disk before the tokens are answered.
func (a *AuthorizationServer) exchangeCode(req TokenRequest) (TokenResponse, *OAuthError) {
	a.mu.Lock()
	resp, g, gen, err := a.redeem(req, a.now())
	a.mu.Unlock()
	if gen != 0 {
		serr := a.save(gen)
		if err == nil && serr != nil {
			a.mu.Lock()
			a.dropGrant(g.ID)
			a.changed()
			a.mu.Unlock()
			err = serr
		}
	}
	if err != nil {
		return TokenResponse{}, err
	}
	a.log.Info("oauth: signed in", "subject", g.Subject, "client_id", g.Client, "scopes", strings.Join(g.Scopes, " "))
	return resp, nil
}

// redeem checks a code and makes its grant; gen is the change to write,
// 0 for none. Called with a.mu held.
func (a *AuthorizationServer) redeem(req TokenRequest, now time.Time) (TokenResponse, *grantEntry, uint64, *OAuthError) {
	a.prune(now)
	c, ok := a.codes[hashToken(req.Code)]
	if !ok {
		return TokenResponse{}, nil, 0, errInvalidGrant("the code is unknown or expired")
	}
	if c.used {
		// Someone else has the code: what it gave is no one's now.
		a.log.Warn("oauth: an authorization code was used twice; the grant it gave is revoked", "subject", c.subject)
		a.dropGrant(c.grant)
		return TokenResponse{}, nil, a.changed(), errInvalidGrant("the code was already used")
	}
	if req.ClientID != c.client {
		return TokenResponse{}, nil, 0, errInvalidGrant("the code was issued to another client")
	}
	if req.RedirectURI != c.redirectURI {
		return TokenResponse{}, nil, 0, errInvalidGrant("redirect_uri differs from the authorization request's")
	}
	sum := sha256.Sum256([]byte(req.CodeVerifier))
	if subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(c.codeChallenge)) != 1 {
		return TokenResponse{}, nil, 0, errInvalidGrant("code_verifier does not match the code_challenge")
	}
	// A URL client (a metadata document) must still be allowlisted.
	if _, registered := a.clients[c.client]; !registered && (a.cfg.URLClients == nil || !a.cfg.URLClients.Allowed(c.client)) {
		return TokenResponse{}, nil, 0, errInvalidGrant("the client is no longer allowed")
	}
	if len(a.grants) >= a.cfg.MaxGrants {
		a.log.Error("oauth: a sign-in was refused: too many grants; revoke some, or raise the bound", "max_grants", a.cfg.MaxGrants)
		return TokenResponse{}, nil, 0, &OAuthError{http.StatusServiceUnavailable, "temporarily_unavailable", "this server holds too many sign-ins"}
	}
	c.used = true
	g := &grantEntry{
		ID:       newSecret(),
		Client:   c.client,
		Subject:  c.subject,
		Scopes:   slices.Clone(c.scopes),
		Resource: a.resource,
		Created:  now.UTC(),
	}
	c.grant = g.ID
	a.grants[g.ID] = g
	resp := a.issue(g, g.Scopes, now)
	return resp, g, a.changed(), nil
}

// refreshGrant spends a refresh token for new tokens, rotating it. The
// rotation is on disk before the tokens are answered.
func (a *AuthorizationServer) refreshGrant(req TokenRequest) (TokenResponse, *OAuthError) {
	a.mu.Lock()
	resp, gen, err := a.rotate(req, a.now())
	a.mu.Unlock()
	if gen != 0 {
		if serr := a.save(gen); err == nil {
			err = serr
		}
	}
	if err != nil {
		return TokenResponse{}, err
	}
	return resp, nil
}

// rotate spends a refresh token; gen is the change to write, 0 for none.
// Called with a.mu held.
func (a *AuthorizationServer) rotate(req TokenRequest, now time.Time) (TokenResponse, uint64, *OAuthError) {
	h := hashToken(req.RefreshToken)
	a.prune(now)
	e, ok := a.refresh[h]
	if !ok {
		return TokenResponse{}, 0, errInvalidGrant("the refresh token is unknown, expired or revoked")
	}
	g := a.grants[e.grant]
	if g.Client != req.ClientID {
		return TokenResponse{}, 0, errInvalidGrant("the refresh token was issued to another client")
	}
	if !e.current {
		a.log.Warn("oauth: a rotated refresh token was used again; the grant is revoked", "subject", g.Subject, "client_id", g.Client)
		a.dropGrant(g.ID)
		return TokenResponse{}, a.changed(), errInvalidGrant("the refresh token was already used; sign in again")
	}
	if _, registered := a.clients[g.Client]; !registered && (a.cfg.URLClients == nil || !a.cfg.URLClients.Allowed(g.Client)) {
		return TokenResponse{}, 0, errInvalidGrant("the client is no longer allowed")
	}
	scopes := g.Scopes
	if len(req.Scopes) > 0 {
		scopes = nil
		for _, s := range req.Scopes {
			if s == "offline_access" {
				continue
			}
			if !slices.Contains(g.Scopes, s) {
				return TokenResponse{}, 0, &OAuthError{http.StatusBadRequest, "invalid_scope", "scope " + s + " was not granted"}
			}
			scopes = append(scopes, s)
		}
		if len(scopes) == 0 {
			scopes = g.Scopes
		}
	}
	return a.issue(g, scopes, now), a.changed(), nil
}

// issue makes an access token and a new refresh token for g, retiring
// the grant's current refresh token. Called with a.mu held.
func (a *AuthorizationServer) issue(g *grantEntry, scopes []string, now time.Time) TokenResponse {
	access, refresh := newSecret(), newSecret()
	if g.Refresh != "" {
		a.refresh[g.Refresh] = refreshEntry{grant: g.ID}
		g.Retired = append(g.Retired, g.Refresh)
		if len(g.Retired) > maxRetired {
			delete(a.refresh, g.Retired[0])
			g.Retired = slices.Delete(g.Retired, 0, 1)
		}
	}
	g.Refresh = hashToken(refresh)
	g.Expires = now.Add(a.cfg.RefreshTokenLifetime).UTC()
	a.refresh[g.Refresh] = refreshEntry{grant: g.ID, current: true}
	// Bound the grant's live access tokens: the oldest goes first.
	var mine []*accessEntry
	for _, t := range a.access {
		if t.Grant == g.ID {
			mine = append(mine, t)
		}
	}
	if len(mine) >= maxTokensByGrant {
		slices.SortFunc(mine, func(x, y *accessEntry) int { return x.Expires.Compare(y.Expires) })
		for _, t := range mine[:len(mine)-maxTokensByGrant+1] {
			delete(a.access, t.Hash)
		}
	}
	t := &accessEntry{Hash: hashToken(access), Grant: g.ID, Scopes: slices.Clone(scopes), Expires: now.Add(a.cfg.AccessTokenLifetime).UTC()}
	a.access[t.Hash] = t
	return TokenResponse{
		AccessToken:  access,
		TokenType:    "Bearer",
		ExpiresIn:    int64(a.cfg.AccessTokenLifetime / time.Second),
		RefreshToken: refresh,
		Scope:        strings.Join(scopes, " "),
	}
}
