package server

import (
	"net/http"
)

// Revocation (RFC 7009). A refresh token revokes its whole grant, with
// every access token it gave; an access token revokes itself. The client
// must be the one the token was issued to. An unknown token is not an
// error: the answer is 200 either way, so it tells nothing.

func (a *AuthorizationServer) serveRevoke(w http.ResponseWriter, r *http.Request) {
	body, ferr := readForm(w, r)
	if ferr != nil {
		writeError(w, ferr)
		return
	}
	v, perr := parseForm(body)
	if perr != nil {
		writeError(w, perr)
		return
	}
	token, clientID := v.Get("token"), v.Get("client_id")
	if token == "" {
		writeError(w, errInvalidRequest("token is missing"))
		return
	}
	if clientID == "" {
		writeError(w, errInvalidClient("client_id is missing (this server has public clients: send client_id in the form)"))
		return
	}
	switch v.Get("token_type_hint") {
	case "", "access_token", "refresh_token":
	default:
		writeError(w, &OAuthError{http.StatusBadRequest, "unsupported_token_type", "token_type_hint must be access_token or refresh_token"})
		return
	}
	h := hashToken(token)
	a.mu.Lock()
	var gen uint64
	if e, ok := a.refresh[h]; ok {
		g := a.grants[e.grant]
		if g.Client != clientID {
			a.mu.Unlock()
			writeError(w, &OAuthError{http.StatusBadRequest, "unauthorized_client", "the token was issued to another client"})
			return
		}
		a.dropGrant(g.ID)
		gen = a.changed()
		a.log.Info("oauth: grant revoked", "subject", g.Subject, "client_id", g.Client)
	} else if t, ok := a.access[h]; ok {
		g := a.grants[t.Grant]
		if g != nil && g.Client != clientID {
			a.mu.Unlock()
			writeError(w, &OAuthError{http.StatusBadRequest, "unauthorized_client", "the token was issued to another client"})
			return
		}
		delete(a.access, h)
		gen = a.changed()
		a.log.Info("oauth: access token revoked", "client_id", clientID)
	}
	a.mu.Unlock()
	if gen != 0 {
		if serr := a.save(gen); serr != nil {
			writeError(w, serr)
			return
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}
