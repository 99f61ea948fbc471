// Package authtest is a small but real OAuth 2.1 authorization server and
// protected MCP endpoint on a loopback httptest server, for tests of the
// auth package and of everything built on it (reauth, the relay).
//
// The authorization server serves RFC 8414 or OpenID metadata (or none),
// dynamic client registration, an authorization endpoint that redirects at
// once to the redirect_uri with code and state (and iss, as configured),
// and a token endpoint for the authorization_code (PKCE S256 checked),
// refresh_token (rotation, revocation) and device_code grants with the
// client authentication methods client_secret_basic, client_secret_post and
// none. The resource side serves protected resource metadata and an MCP
// endpoint that answers any JSON-RPC request with an empty result once the
// bearer token is valid, and otherwise with 401 or 403 challenges.
//
// Everything a client sent is recorded for assertions. Tokens look like
// "at-<n>-<random>" so tests can search logs for them.
package authtest

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// MetadataMode selects which authorization server metadata document the
// server publishes.
type MetadataMode int

const (
	// RFC8414 publishes /.well-known/oauth-authorization-server{issuer path}.
	RFC8414 MetadataMode = iota
	// OpenID publishes /.well-known/openid-configuration{issuer path} only.
	OpenID
	// OpenIDAppended publishes {issuer path}/.well-known/openid-configuration
	// only.
	OpenIDAppended
	// NoMetadata publishes none; the endpoints sit at the MCP 2025-03-26
	// defaults /authorize, /token and /register under the issuer.
	NoMetadata
)

// IssMode says what the authorization endpoint puts in iss.
type IssMode int

const (
	// IssCorrect sends the issuer when IssSupported is set, else nothing.
	IssCorrect IssMode = iota
	// IssOmit never sends iss.
	IssOmit
	// IssWrong sends https://evil.example.com.
	IssWrong
	// IssTrailingSlash sends the issuer with a "/" appended.
	IssTrailingSlash
)

// Options configures a Server. The zero value is an authorization server at
// the root with RFC 8414 metadata, DCR, public clients, tokens that do not
// expire, and protected resource metadata at the path-aware location of
// /mcp.
type Options struct {
	// IssuerPath is appended to the server URL to form the issuer, e.g.
	// "/tenant1".
	IssuerPath string
	// Metadata selects the metadata document.
	Metadata MetadataMode
	// MetadataIssuer, when set, is the issuer the metadata claims.
	MetadataIssuer string
	// NoRegistration hides the registration endpoint.
	NoRegistration bool
	// AuthMethods is token_endpoint_auth_methods_supported; nil means
	// ["none"]. Registered clients get the first one.
	AuthMethods []string
	// PreRegistered maps client ids to secrets ("" for a public client).
	PreRegistered map[string]string
	// CIMD advertises client_id_metadata_document_supported and accepts an
	// https URL as client_id.
	CIMD bool
	// IssSupported advertises authorization_response_iss_parameter_supported.
	IssSupported bool
	// Iss says what the redirect carries in iss.
	Iss IssMode
	// CodeChallengeMethods is code_challenge_methods_supported; nil means
	// ["S256"]; an empty non-nil slice omits the member.
	CodeChallengeMethods []string
	// ScopesSupported is the authorization server's scopes_supported.
	ScopesSupported []string
	// TokenTTL is expires_in of access tokens; 0 omits it.
	TokenTTL time.Duration
	// NoRefreshTokens issues no refresh tokens.
	NoRefreshTokens bool
	// KeepRefreshTokens turns rotation off: a refresh answers without a new
	// refresh token and the old one stays valid.
	KeepRefreshTokens bool
	// FormResponses answers token requests form-encoded, as GitHub does.
	FormResponses bool
	// Device enables the device grant; the first DevicePending polls get
	// authorization_pending and the next DeviceSlowDown get slow_down.
	Device         bool
	DevicePending  int
	DeviceSlowDown int
	// DeviceInterval is the interval the device authorization announces.
	DeviceInterval int

	// MCPPath is the protected MCP endpoint's path; "" means "/mcp".
	MCPPath string
	// PRMPath is where the protected resource metadata is served; "" means
	// the path-aware location of MCPPath; "-" serves none.
	PRMPath string
	// PRMResource overrides the resource the metadata names.
	PRMResource string
	// PRMServers overrides authorization_servers; nil means [issuer].
	PRMServers []string
	// PRMScopes is the metadata's scopes_supported.
	PRMScopes []string
	// ChallengeScope is the scope of the 401 challenge ("" omits it).
	ChallengeScope string
	// NoResourceMetadataInChallenge leaves resource_metadata out of the 401
	// challenge.
	NoResourceMetadataInChallenge bool
	// ChallengeScheme replaces "Bearer" in the 401 challenge (e.g.
	// "Negotiate", which then carries no parameters).
	ChallengeScheme string
	// TLS, when set, serves https with this configuration (a certificate
	// for 127.0.0.1), for clients that must be shown to trust its CA.
	TLS *tls.Config
	// RefuseResource plays Microsoft Entra ID: an authorization request
	// carrying RFC 8707's resource is sent back with error invalid_target
	// and AADSTS9010010, and a token request carrying it gets
	// invalid_target.
	RefuseResource bool
	// RequiredScopes maps JSON-RPC methods to the scopes their calls need;
	// a token without them gets 403 insufficient_scope.
	RequiredScopes map[string][]string
}

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	// Query is the URL query; Form the POSTed form; JSON a POSTed JSON body.
	Query url.Values
	Form  url.Values
	JSON  map[string]any
	// Authorization is the Authorization header.
	Authorization string
}

// Server is a running authorization server and protected resource.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:<port>.
	URL string

	srv *httptest.Server

	mu       sync.Mutex
	o        Options
	reqs     []Request
	clients  map[string]client
	codes    map[string]grant
	access   map[string]grant
	refresh  map[string]grant
	devices  map[string]*deviceState
	n        int
	minted   []string
	holdNext chan struct{} // when set, the next refresh waits for it
	held     chan struct{} // closed when a refresh is waiting on holdNext
}

type client struct {
	secret string
	method string
}

type grant struct {
	client    string
	redirect  string
	challenge string
	resource  string
	scope     string
}

type deviceState struct {
	g     grant
	polls int
}

// NewServer starts a Server; it is closed when the test ends.
func NewServer(t testing.TB, o Options) *Server {
	s := Start(o)
	t.Cleanup(s.Close)
	return s
}

// Start starts a Server the caller closes, for examples and helpers that
// have no testing.TB.
func Start(o Options) *Server {
	s := &Server{
		o:       o,
		clients: map[string]client{},
		codes:   map[string]grant{},
		access:  map[string]grant{},
		refresh: map[string]grant{},
		devices: map[string]*deviceState{},
	}
	for id, secret := range o.PreRegistered {
		m := "none"
		if secret != "" {
			m = "client_secret_basic"
			if len(o.AuthMethods) > 0 {
				m = o.AuthMethods[0]
			}
		}
		s.clients[id] = client{secret: secret, method: m}
	}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	if o.TLS != nil {
		s.srv.TLS = o.TLS
		s.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes refused on purpose
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	s.URL = s.srv.URL
	return s
}

// Close shuts the server down. A server from NewServer also closes when
// the test ends.
func (s *Server) Close() { s.srv.Close() }

// Issuer returns the issuer identifier.
func (s *Server) Issuer() string { return s.URL + s.o.IssuerPath }

// MCPURL returns the protected MCP endpoint's URL.
func (s *Server) MCPURL() string { return s.URL + s.mcpPath() }

// Update changes the options under the server's lock.
func (s *Server) Update(f func(o *Options)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.o)
}

// Requests returns what the server received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// Count returns how many requests matched path (exact) and, when grant is
// not empty, the grant_type.
func (s *Server) Count(path, grantType string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Path == path && (grantType == "" || r.Form.Get("grant_type") == grantType) {
			n++
		}
	}
	return n
}

// RevokeRefreshTokens invalidates every refresh token.
func (s *Server) RevokeRefreshTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.refresh)
}

// RevokeAccessTokens invalidates every access token.
func (s *Server) RevokeAccessTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
}

// ValidAccessToken reports whether tok is a live access token.
func (s *Server) ValidAccessToken(tok string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.access[tok]
	return ok
}

// HoldNextRefresh makes the next refresh_token request wait until release
// is called; held is closed once that request is waiting.
func (s *Server) HoldNextRefresh() (held <-chan struct{}, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holdNext = make(chan struct{})
	s.held = make(chan struct{})
	ch := s.holdNext
	var once sync.Once
	return s.held, func() { once.Do(func() { close(ch) }) }
}

// Secrets returns every credential the server has minted so far (access
// and refresh tokens, codes, client secrets, device codes), for tests that
// check they never leak into logs or errors.
func (s *Server) Secrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.minted)
}

// IssueToken mints an access (and refresh) token directly, as if a sign-in
// had happened, for scope and resource.
func (s *Server) IssueToken(clientID, scope, resource string) (access, refresh string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := grant{client: clientID, scope: scope, resource: resource}
	access = s.mint("at")
	s.access[access] = g
	if !s.o.NoRefreshTokens {
		refresh = s.mint("rt")
		s.refresh[refresh] = g
	}
	return access, refresh
}

func (s *Server) mcpPath() string {
	if s.o.MCPPath == "" {
		return "/mcp"
	}
	return s.o.MCPPath
}

func (s *Server) prmPath() string {
	switch s.o.PRMPath {
	case "":
		return "/.well-known/oauth-protected-resource" + strings.TrimRight(s.mcpPath(), "/")
	case "-":
		return ""
	}
	return s.o.PRMPath
}

// mint returns a fresh token value; s.mu is held.
func (s *Server) mint(kind string) string {
	s.n++
	var b [6]byte
	_, _ = rand.Read(b[:])
	v := kind + "-" + strconv.Itoa(s.n) + "-" + hex.EncodeToString(b[:])
	if kind != "client" {
		s.minted = append(s.minted, v)
	}
	return v
}

func (s *Server) record(r *http.Request) Request {
	rec := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Authorization: r.Header.Get("Authorization")}
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			_ = json.Unmarshal(body, &rec.JSON)
		} else {
			rec.Form, _ = url.ParseQuery(string(body))
		}
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, rec)
	s.mu.Unlock()
	return rec
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	rec := s.record(r)
	s.mu.Lock()
	o := s.o
	s.mu.Unlock()
	p := r.URL.Path
	iss := o.IssuerPath
	switch {
	case p == s.prmPath() && s.prmPath() != "" && r.Method == http.MethodGet:
		s.servePRM(w, o)
	case r.Method == http.MethodGet && s.isMetadataPath(p, o):
		s.serveMetadata(w, o)
	case p == iss+"/authorize" && r.Method == http.MethodGet:
		s.authorize(w, r, o)
	case p == iss+"/token" && r.Method == http.MethodPost:
		s.token(w, r, rec, o)
	case p == iss+"/register" && r.Method == http.MethodPost && !o.NoRegistration:
		s.register(w, rec, o)
	case p == iss+"/device" && r.Method == http.MethodPost && o.Device:
		s.deviceAuthorize(w, rec, o)
	case p == s.mcpPath():
		s.mcp(w, r, rec, o)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) isMetadataPath(p string, o Options) bool {
	switch o.Metadata {
	case RFC8414:
		return p == "/.well-known/oauth-authorization-server"+o.IssuerPath
	case OpenID:
		return p == "/.well-known/openid-configuration"+o.IssuerPath
	case OpenIDAppended:
		return p == o.IssuerPath+"/.well-known/openid-configuration"
	}
	return false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) servePRM(w http.ResponseWriter, o Options) {
	res := o.PRMResource
	if res == "" {
		res = s.URL + s.mcpPath()
		if o.PRMPath == "/.well-known/oauth-protected-resource" {
			res = s.URL
		}
	}
	servers := o.PRMServers
	if servers == nil {
		servers = []string{s.URL + o.IssuerPath}
	}
	doc := map[string]any{"resource": res, "authorization_servers": servers}
	if o.PRMScopes != nil {
		doc["scopes_supported"] = o.PRMScopes
	}
	writeJSON(w, http.StatusOK, doc)
}

func (s *Server) serveMetadata(w http.ResponseWriter, o Options) {
	issuer := s.URL + o.IssuerPath
	doc := map[string]any{
		"issuer":                   issuer,
		"authorization_endpoint":   issuer + "/authorize",
		"token_endpoint":           issuer + "/token",
		"response_types_supported": []string{"code"},
		"grant_types_supported":    []string{"authorization_code", "refresh_token"},
	}
	if o.MetadataIssuer != "" {
		doc["issuer"] = o.MetadataIssuer
	}
	if !o.NoRegistration {
		doc["registration_endpoint"] = issuer + "/register"
	}
	if o.Device {
		doc["device_authorization_endpoint"] = issuer + "/device"
	}
	methods := o.AuthMethods
	if methods == nil {
		methods = []string{"none"}
	}
	doc["token_endpoint_auth_methods_supported"] = methods
	switch {
	case o.CodeChallengeMethods == nil:
		doc["code_challenge_methods_supported"] = []string{"S256"}
	case len(o.CodeChallengeMethods) > 0:
		doc["code_challenge_methods_supported"] = o.CodeChallengeMethods
	}
	if o.IssSupported {
		doc["authorization_response_iss_parameter_supported"] = true
	}
	if o.CIMD {
		doc["client_id_metadata_document_supported"] = true
	}
	if o.ScopesSupported != nil {
		doc["scopes_supported"] = o.ScopesSupported
	}
	writeJSON(w, http.StatusOK, doc)
}

// knownClient returns the client registered under id.
func (s *Server) knownClient(id string, o Options) (client, bool) {
	s.mu.Lock()
	c, ok := s.clients[id]
	s.mu.Unlock()
	if !ok && o.CIMD && strings.HasPrefix(id, "https://") {
		return client{method: "none"}, true
	}
	return c, ok
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request, o Options) {
	q := r.URL.Query()
	if _, ok := s.knownClient(q.Get("client_id"), o); !ok {
		http.Error(w, "unknown client", http.StatusBadRequest)
		return
	}
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Scheme != "http" || redirect.Hostname() != "127.0.0.1" {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "PKCE S256 required", http.StatusBadRequest)
		return
	}
	if o.RefuseResource && q.Has("resource") {
		back := redirect.Query()
		back.Set("error", "invalid_target")
		back.Set("error_description", "AADSTS9010010: The resource parameter provided in the request doesn't match with the requested scopes.")
		back.Set("state", q.Get("state"))
		redirect.RawQuery = back.Encode()
		http.Redirect(w, r, redirect.String(), http.StatusFound)
		return
	}
	s.mu.Lock()
	code := s.mint("code")
	s.codes[code] = grant{client: q.Get("client_id"), redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge"), resource: q.Get("resource"), scope: q.Get("scope")}
	s.mu.Unlock()
	back := redirect.Query()
	back.Set("code", code)
	if st := q.Get("state"); st != "" {
		back.Set("state", st)
	}
	issuer := s.URL + o.IssuerPath
	switch o.Iss {
	case IssCorrect:
		if o.IssSupported {
			back.Set("iss", issuer)
		}
	case IssWrong:
		back.Set("iss", "https://evil.example.com")
	case IssTrailingSlash:
		back.Set("iss", issuer+"/")
	}
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// authenticate checks the client authentication of a token request and
// returns the client id.
func (s *Server) authenticate(r *http.Request, rec Request, o Options) (string, bool) {
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = rec.Form.Get("client_id"), rec.Form.Get("client_secret")
	}
	c, ok := s.knownClient(id, o)
	if !ok {
		return "", false
	}
	switch c.method {
	case "client_secret_basic":
		return id, basic && secret == c.secret
	case "client_secret_post":
		return id, !basic && secret == c.secret && rec.Form.Has("client_secret")
	}
	return id, !basic && secret == ""
}

func (s *Server) tokenError(w http.ResponseWriter, o Options, status int, code string) {
	if o.FormResponses {
		w.Header().Set("Content-Type", "application/x-www-form-urlencoded")
		w.WriteHeader(status)
		io.WriteString(w, url.Values{"error": {code}, "error_description": {code + " (test server)"}}.Encode())
		return
	}
	writeJSON(w, status, map[string]string{"error": code, "error_description": code + " (test server)"})
}

// issue mints tokens for g and writes them; s.mu is held.
func (s *Server) issue(w http.ResponseWriter, o Options, g grant, keepRefresh string) {
	at := s.mint("at")
	s.access[at] = g
	var rt string
	switch {
	case o.NoRefreshTokens:
	case keepRefresh != "" && o.KeepRefreshTokens:
	default:
		rt = s.mint("rt")
		s.refresh[rt] = g
	}
	if keepRefresh != "" && !o.KeepRefreshTokens {
		delete(s.refresh, keepRefresh) // rotation: the old one is spent
	}
	v := map[string]string{"access_token": at, "token_type": "Bearer"}
	if rt != "" {
		v["refresh_token"] = rt
	}
	if o.TokenTTL > 0 {
		v["expires_in"] = strconv.Itoa(int(o.TokenTTL / time.Second))
	}
	if g.scope != "" {
		v["scope"] = g.scope
	}
	if o.FormResponses {
		f := url.Values{}
		for k, x := range v {
			f.Set(k, x)
		}
		w.Header().Set("Content-Type", "application/x-www-form-urlencoded")
		io.WriteString(w, f.Encode())
		return
	}
	out := map[string]any{}
	for k, x := range v {
		out[k] = x
	}
	if o.TokenTTL > 0 {
		out["expires_in"] = int(o.TokenTTL / time.Second)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request, rec Request, o Options) {
	id, ok := s.authenticate(r, rec, o)
	if !ok {
		s.tokenError(w, o, http.StatusUnauthorized, "invalid_client")
		return
	}
	f := rec.Form
	if o.RefuseResource && f.Has("resource") {
		s.tokenError(w, o, http.StatusBadRequest, "invalid_target")
		return
	}
	switch f.Get("grant_type") {
	case "authorization_code":
		s.mu.Lock()
		defer s.mu.Unlock()
		g, ok := s.codes[f.Get("code")]
		delete(s.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		switch {
		case !ok, g.client != id, g.redirect != f.Get("redirect_uri"):
			s.tokenError(w, o, http.StatusBadRequest, "invalid_grant")
		case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
			s.tokenError(w, o, http.StatusBadRequest, "invalid_grant")
		case f.Get("resource") != g.resource:
			s.tokenError(w, o, http.StatusBadRequest, "invalid_target")
		default:
			s.issue(w, o, g, "")
		}
	case "refresh_token":
		s.mu.Lock()
		hold, held := s.holdNext, s.held
		s.holdNext, s.held = nil, nil
		s.mu.Unlock()
		if hold != nil {
			close(held)
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		rt := f.Get("refresh_token")
		g, ok := s.refresh[rt]
		switch {
		case !ok || g.client != id:
			s.tokenError(w, o, http.StatusBadRequest, "invalid_grant")
		case f.Get("resource") != g.resource:
			s.tokenError(w, o, http.StatusBadRequest, "invalid_target")
		default:
			s.issue(w, o, g, rt)
		}
	case "urn:ietf:params:oauth:grant-type:device_code":
		s.mu.Lock()
		defer s.mu.Unlock()
		d, ok := s.devices[f.Get("device_code")]
		switch {
		case !ok || d.g.client != id:
			s.tokenError(w, o, http.StatusBadRequest, "invalid_grant")
			return
		case f.Get("resource") != d.g.resource:
			s.tokenError(w, o, http.StatusBadRequest, "invalid_target")
			return
		}
		d.polls++
		switch {
		case d.polls <= o.DevicePending:
			s.tokenError(w, o, http.StatusBadRequest, "authorization_pending")
		case d.polls <= o.DevicePending+o.DeviceSlowDown:
			s.tokenError(w, o, http.StatusBadRequest, "slow_down")
		default:
			delete(s.devices, f.Get("device_code"))
			s.issue(w, o, d.g, "")
		}
	default:
		s.tokenError(w, o, http.StatusBadRequest, "unsupported_grant_type")
	}
}

func (s *Server) register(w http.ResponseWriter, rec Request, o Options) {
	if rec.JSON == nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	method, _ := rec.JSON["token_endpoint_auth_method"].(string)
	if len(o.AuthMethods) > 0 && !slices.Contains(o.AuthMethods, method) {
		method = o.AuthMethods[0]
	}
	if method == "" {
		method = "none"
	}
	s.mu.Lock()
	id := s.mint("client")
	c := client{method: method}
	if method != "none" {
		c.secret = s.mint("secret")
	}
	s.clients[id] = c
	s.mu.Unlock()
	resp := map[string]any{"client_id": id, "token_endpoint_auth_method": method, "client_name": rec.JSON["client_name"]}
	if c.secret != "" {
		resp["client_secret"] = c.secret
		resp["client_secret_expires_at"] = 0
	}
	writeJSON(w, http.StatusCreated, resp)
}

func (s *Server) deviceAuthorize(w http.ResponseWriter, rec Request, o Options) {
	id := rec.Form.Get("client_id")
	if _, ok := s.knownClient(id, o); !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	s.mu.Lock()
	dc := s.mint("device")
	s.devices[dc] = &deviceState{g: grant{client: id, resource: rec.Form.Get("resource"), scope: rec.Form.Get("scope")}}
	s.mu.Unlock()
	resp := map[string]any{
		"device_code":      dc,
		"user_code":        "WDJB-MJHT",
		"verification_uri": s.URL + o.IssuerPath + "/device/verify",
		"expires_in":       600,
	}
	if o.DeviceInterval > 0 {
		resp["interval"] = o.DeviceInterval
	}
	writeJSON(w, http.StatusOK, resp)
}

// Challenge returns the WWW-Authenticate value of a 401.
func (s *Server) Challenge() string {
	s.mu.Lock()
	o := s.o
	s.mu.Unlock()
	if o.ChallengeScheme != "" {
		return o.ChallengeScheme
	}
	var params []string
	if o.ChallengeScope != "" {
		params = append(params, fmt.Sprintf("scope=%q", o.ChallengeScope))
	}
	if p := s.prmPath(); p != "" && !o.NoResourceMetadataInChallenge {
		params = append(params, fmt.Sprintf("resource_metadata=%q", s.URL+p))
	}
	if len(params) == 0 {
		return "Bearer"
	}
	return "Bearer " + strings.Join(params, ", ")
}

func (s *Server) mcp(w http.ResponseWriter, r *http.Request, rec Request, o Options) {
	tok, ok := strings.CutPrefix(rec.Authorization, "Bearer ")
	s.mu.Lock()
	g, valid := s.access[tok]
	s.mu.Unlock()
	if !ok || !valid {
		w.Header().Set("WWW-Authenticate", s.Challenge())
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token"})
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if rec.JSON != nil {
		b, _ := json.Marshal(rec.JSON)
		_ = json.Unmarshal(b, &msg)
	}
	if need := o.RequiredScopes[msg.Method]; len(need) > 0 {
		have := strings.Fields(g.scope)
		for _, n := range need {
			if !slices.Contains(have, n) {
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q`, strings.Join(need, " "), s.URL+s.prmPath()))
				writeJSON(w, http.StatusForbidden, map[string]string{"error": "insufficient_scope"})
				return
			}
		}
	}
	if len(msg.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", msg.ID)
}

// Visit plays the user's browser: it GETs u and follows redirects (the
// authorization endpoint redirects to the client's loopback callback). It
// is what $BROWSER runs in tests.
func Visit(u string) error {
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext:       (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		DisableKeepAlives: true,
	}}
	resp, err := c.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("visit: HTTP %d", resp.StatusCode)
	}
	return nil
}
