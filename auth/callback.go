package auth

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"html"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"
)

// callbackPath is the only path the loopback listener answers.
const callbackPath = "/callback"

// callbackServer is the loopback HTTP listener that receives the
// authorization response: bound to 127.0.0.1 on an ephemeral port the
// system picks free (or the one Options.CallbackPort names: taken, the
// error names the process holding it where the platform tells), fresh for
// every flow (mcp-remote#253),
// serving exactly GET /callback
// (case-sensitive; everything else is 404), closed when the flow ends.
//
// It checks the response where it arrives: state in constant time, then the
// RFC 9207 iss parameter against the issuer recorded for this flow (present:
// must match exactly, without normalisation; absent: refused only when the
// server advertised authorization_response_iss_parameter_supported), and
// only then error and code, so an error from a mixed-up server is not
// believed. The first response ends the flow; the browser gets a small HTML
// page either way.
type callbackServer struct {
	ln          net.Listener
	srv         *http.Server
	served      chan struct{} // closed when Serve returns
	results     chan callbackResult
	answered    atomic.Bool
	state       string
	issuer      string
	issRequired bool
}

// callbackResult is the outcome of one authorization response.
type callbackResult struct {
	code string
	err  error
}

// startCallback opens the listener, on port (0: an ephemeral one), for a
// flow whose request carries state and whose authorization server is
// issuer.
func startCallback(port int, state, issuer string, issRequired bool) (*callbackServer, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		if port != 0 {
			// The port was fixed (the redirect URI registered with it):
			// another one would not be accepted, so name who holds it.
			who := "another process"
			if owner := portOwner(port); owner != "" {
				who = owner
			}
			return nil, fmt.Errorf("cannot open the loopback listener for the sign-in callback on port %d: %w; %s is listening there: stop it and sign in again, or register another redirect port and give it with --oauth-callback-port", port, err, who)
		}
		return nil, fmt.Errorf("cannot open the loopback listener for the sign-in callback: %w", err)
	}
	s := &callbackServer{
		ln:          ln,
		served:      make(chan struct{}),
		results:     make(chan callbackResult, 1),
		state:       state,
		issuer:      issuer,
		issRequired: issRequired,
	}
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// redirectURI is the redirect_uri of the flow.
func (s *callbackServer) redirectURI() string {
	return "http://127.0.0.1:" + strconv.Itoa(s.ln.Addr().(*net.TCPAddr).Port) + callbackPath
}

// close stops the listener and waits for it.
func (s *callbackServer) close() {
	_ = s.srv.Close()
	<-s.served
}

// ServeHTTP answers one request to the listener.
func (s *callbackServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.EscapedPath() != callbackPath {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !s.answered.CompareAndSwap(false, true) {
		page(w, http.StatusConflict, "Sign-in already completed", "This sign-in has already been answered. You can close this window.")
		return
	}
	res := s.check(r.URL.Query())
	s.results <- res // buffered for the one answer
	if res.err != nil {
		page(w, http.StatusOK, "Authorization failed", "mcp-stdio could not complete the sign-in: "+res.err.Error())
		return
	}
	page(w, http.StatusOK, "Authorization successful", "You are signed in. You can close this window and return to your application.")
}

// check validates an authorization response.
func (s *callbackServer) check(q url.Values) callbackResult {
	got := q.Get("state")
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.state)) != 1 {
		return callbackResult{err: errors.New("OAuth state mismatch (possible CSRF); the authorization response was rejected")}
	}
	if iss, ok := q["iss"]; ok {
		if len(iss) != 1 || iss[0] != s.issuer {
			return callbackResult{err: fmt.Errorf("the authorization response names issuer %q, not %q (RFC 9207 mix-up protection); rejected", cleanDescription(q.Get("iss")), s.issuer)}
		}
	} else if s.issRequired {
		return callbackResult{err: errors.New("the authorization response has no iss although the server promised one (RFC 9207); rejected")}
	}
	if e := q.Get("error"); e != "" {
		te := &TokenError{Code: cleanDescription(e), Description: cleanDescription(q.Get("error_description"))}
		return callbackResult{err: fmt.Errorf("the authorization server refused the sign-in: %s", te.Error())}
	}
	code := q.Get("code")
	if code == "" {
		return callbackResult{err: errors.New("the authorization response has no code")}
	}
	return callbackResult{code: code}
}

// page writes a minimal HTML page.
func page(w http.ResponseWriter, status int, title, text string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><html><head><meta charset=\"utf-8\"><title>%s</title></head><body><h1>%s</h1><p>%s</p></body></html>\n",
		html.EscapeString(title), html.EscapeString(title), html.EscapeString(text))
}
