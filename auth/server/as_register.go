package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Dynamic client registration (RFC 7591). Anyone may register: a client
// gains nothing until a person approves it on the consent page, and the
// page names it and where its codes go. What registration limits is where
// codes can go — loopback redirect URIs (the client is on the person's own
// machine) and the --allow-redirect-uri list, exactly — and how much a
// stranger can make the server keep: a bounded table whose oldest client
// not in use makes room, and a rate per source (registerBurst).

// Registration limits.
const (
	maxRedirectURIs  = 8
	maxRedirectURI   = 2048
	maxClientNameLen = 200
)

// RegistrationRequest is the part of an RFC 7591 registration request the
// server reads; other members are ignored.
type RegistrationRequest struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	Scope                   string   `json:"scope"`
}

// RegistrationResponse is the server's answer to a registration.
type RegistrationResponse struct {
	ClientID                string   `json:"client_id"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at"`
	ClientName              string   `json:"client_name,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
}

// ParseRegistration decodes and checks a registration body against the
// redirect URIs allowed besides loopback ones.
func ParseRegistration(body []byte, allowed []string) (RegistrationRequest, error) {
	var req RegistrationRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		return req, errors.New("the body is not a JSON object of client metadata")
	}
	if dec.More() {
		return req, errors.New("the body has data after the JSON object")
	}
	if len(req.RedirectURIs) == 0 {
		return req, errors.New("redirect_uris is required")
	}
	if len(req.RedirectURIs) > maxRedirectURIs {
		return req, fmt.Errorf("at most %d redirect_uris", maxRedirectURIs)
	}
	for _, u := range req.RedirectURIs {
		if !slices.Contains(allowed, u) {
			if err := checkLoopbackRedirect(u); err != nil {
				return req, fmt.Errorf("redirect URI %q: %v; ask the server's operator to add it with --allow-redirect-uri", u, err)
			}
		}
	}
	if len(req.ClientName) > maxClientNameLen {
		return req, fmt.Errorf("client_name is longer than %d bytes", maxClientNameLen)
	}
	switch req.TokenEndpointAuthMethod {
	case "", "none":
	default:
		return req, fmt.Errorf("token_endpoint_auth_method %q is not supported: this server registers public clients (none)", req.TokenEndpointAuthMethod)
	}
	for _, g := range req.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return req, fmt.Errorf("grant type %q is not supported", g)
		}
	}
	for _, t := range req.ResponseTypes {
		if t != "code" {
			return req, fmt.Errorf("response type %q is not supported", t)
		}
	}
	return req, nil
}

// checkRedirectShape checks what every redirect URI must be: absolute,
// without fragment or user info, bounded.
func checkRedirectShape(s string) error {
	if len(s) > maxRedirectURI {
		return fmt.Errorf("longer than %d bytes", maxRedirectURI)
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		return errors.New("not an absolute URI")
	}
	if u.Fragment != "" || strings.Contains(s, "#") {
		return errors.New("has a fragment")
	}
	if u.User != nil {
		return errors.New("has user info")
	}
	if (u.Scheme == "http" || u.Scheme == "https") && u.Host == "" {
		return errors.New("has no host")
	}
	return nil
}

// checkLoopbackRedirect accepts http://127.0.0.1:PORT/…, http://[::1]:PORT/…
// and http://localhost:PORT/… (the port optional).
func checkLoopbackRedirect(s string) error {
	if err := checkRedirectShape(s); err != nil {
		return err
	}
	u, _ := url.Parse(s)
	if u.Scheme != "http" {
		return errors.New("not a loopback http URI")
	}
	if !isLoopbackHost(u.Hostname()) {
		return errors.New("not a loopback http URI")
	}
	return nil
}

// isLoopbackHost reports whether h is 127.0.0.1, ::1 or localhost.
func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && (ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv6loopback))
}

// redirectMatches reports whether the redirect URI of a request is one a
// client registered: exactly, except that a loopback one may name another
// port (RFC 8252 §7.3: a native client gets a new port each time).
func redirectMatches(registered []string, got string) bool {
	if slices.Contains(registered, got) {
		return true
	}
	g, err := url.Parse(got)
	if err != nil || g.Scheme != "http" || !isLoopbackHost(g.Hostname()) || g.Fragment != "" || g.User != nil {
		return false
	}
	for _, r := range registered {
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "http" || !isLoopbackHost(u.Hostname()) {
			continue
		}
		if u.Hostname() == g.Hostname() && u.EscapedPath() == g.EscapedPath() && u.RawQuery == g.RawQuery {
			return true
		}
	}
	return false
}

func (a *AuthorizationServer) serveRegister(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, &OAuthError{http.StatusMethodNotAllowed, "invalid_request", "use POST"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxRegisterBody)
	body, err := readAll(r)
	if err != nil {
		writeError(w, errInvalidRequest("the body could not be read or is larger than %d bytes", maxRegisterBody))
		return
	}
	req, err := ParseRegistration(body, a.redirect)
	if err != nil {
		code := "invalid_client_metadata"
		if strings.HasPrefix(err.Error(), "redirect URI") || strings.HasPrefix(err.Error(), "redirect_uris") {
			code = "invalid_redirect_uri"
		}
		writeError(w, &OAuthError{http.StatusBadRequest, code, err.Error()})
		return
	}
	now := a.now()
	source := a.source(r)
	c := &clientEntry{ID: newSecret(), Name: req.ClientName, RedirectURIs: slices.Clone(req.RedirectURIs), Created: now.UTC()}
	a.mu.Lock()
	if ok, wait := a.registers.take(source, now); !ok {
		a.mu.Unlock()
		a.refusals.warn(now, "register-source", "oauth: a client registration was refused: too many from one address", "source", source, "burst", registerBurst, "every", registerEvery)
		writeLimited(w, &OAuthError{http.StatusTooManyRequests, "temporarily_unavailable", fmt.Sprintf("too many client registrations from your address (%d, then one per %s); try again in %d s", registerBurst, registerEvery, retryAfter(wait))}, wait)
		return
	}
	if len(a.clients) >= a.cfg.MaxClients {
		wait, ok := a.noRoom.Sub(now), false
		if wait <= 0 {
			a.prune(now)
			wait, ok = a.evictClient(now)
		}
		if !ok {
			a.noRoom = now.Add(wait)
			a.mu.Unlock()
			a.refusals.warn(now, "register-full", "oauth: a client registration was refused: every registered client is in use or new", "max_clients", a.cfg.MaxClients)
			writeLimited(w, &OAuthError{http.StatusServiceUnavailable, "temporarily_unavailable", fmt.Sprintf("this server holds as many clients as it may (%d), all in use; try again in %d s", a.cfg.MaxClients, retryAfter(wait))}, wait)
			return
		}
	}
	a.clients[c.ID] = c
	gen := a.changed()
	a.mu.Unlock()
	a.saveSoon(gen)
	a.log.Info("oauth: client registered", "client_name", c.Name, "redirect_uris", c.RedirectURIs)
	writeJSON(w, http.StatusCreated, RegistrationResponse{
		ClientID:                c.ID,
		ClientIDIssuedAt:        now.Unix(),
		ClientName:              c.Name,
		RedirectURIs:            c.RedirectURIs,
		TokenEndpointAuthMethod: "none",
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
	})
}

// evictClient forgets the oldest client not in use, and reports whether
// there was one; else how long until one may be: the soonest a new client
// comes out of clientGrace, or a consent page, a code or a grant expires.
// A client is in use while it has a grant (so tokens alive), a consent
// page waiting, or a code not yet expired; a client registered less than
// clientGrace ago is kept too. Called with a.mu held.
func (a *AuthorizationServer) evictClient(now time.Time) (time.Duration, bool) {
	inUse := make(map[string]bool, len(a.grants)+len(a.pending)+len(a.codes))
	next := now.Add(pendingLifetime)
	for _, g := range a.grants {
		inUse[g.Client] = true
		next = earlier(next, g.Expires)
	}
	for _, p := range a.pending {
		inUse[p.client.id] = true
		next = earlier(next, p.expires)
	}
	for _, c := range a.codes {
		inUse[c.client] = true
		next = earlier(next, c.expires)
	}
	var oldest *clientEntry
	for _, c := range a.clients {
		if inUse[c.ID] {
			continue
		}
		if of := c.Created.Add(clientGrace); of.After(now) {
			next = earlier(next, of)
			continue
		}
		if oldest == nil || c.Created.Before(oldest.Created) {
			oldest = c
		}
	}
	if oldest == nil {
		return next.Sub(now), false
	}
	delete(a.clients, oldest.ID)
	return 0, true
}

func earlier(t, u time.Time) time.Time {
	if u.Before(t) {
		return u
	}
	return t
}
