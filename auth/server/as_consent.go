package server

import (
	"crypto/subtle"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The consent page: plain HTML, no script, no frame may hold it. It names
// the client (its registered name, and the host its code goes to) and the
// scopes, and asks the person to prove who they are. Its form carries the
// pending authorization's id and a CSRF token, which must also come back
// in a cookie set with the page (SameSite=Strict): a form posted from
// another site, or a page loaded in another browser, is refused.

// consentCookiePrefix names the CSRF cookie of a pending authorization,
// followed by the start of its id (several pages may be open at once).
const consentCookiePrefix = "mcp_stdio_consent_"

// consentPage writes the consent page. It is a fixed page with a few
// values, each escaped with html.EscapeString: every value lands in
// element text or in a double-quoted attribute, where escaping <, >, &, '
// and " is what makes it inert. (A template engine would link a few
// hundred kilobytes into every mcp-stdio binary, whose size is most of
// serve's idle memory.)
func consentPage(w io.Writer, v consentValues) {
	var b strings.Builder
	b.WriteString(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Allow access? — mcp-stdio</title>
<style>body{font-family:sans-serif;max-width:34em;margin:2em auto;padding:0 1em}code{word-break:break-all}.err{color:#a00}</style>
</head><body>
<h1>Allow access to this MCP server?</h1>
<p><strong>`)
	b.WriteString(html.EscapeString(v.clientName))
	b.WriteString(`</strong> wants to use <code>`)
	b.WriteString(html.EscapeString(v.resource))
	b.WriteString(`</code> on your behalf.</p>
<p>After you allow it, your browser goes back to <strong>`)
	b.WriteString(html.EscapeString(v.redirectHost))
	b.WriteString(`</strong>`)
	if v.loopback {
		b.WriteString(` (a program on this computer)`)
	}
	b.WriteString(`.
Allow it only if you started this sign-in yourself.</p>
<p>Scopes: `)
	for _, s := range v.scopes {
		b.WriteString(`<code>`)
		b.WriteString(html.EscapeString(s))
		b.WriteString(`</code> `)
	}
	b.WriteString("</p>\n")
	if v.message != "" {
		b.WriteString(`<p class="err" role="alert">`)
		b.WriteString(html.EscapeString(v.message))
		b.WriteString("</p>\n")
	}
	b.WriteString(`<form method="post" action="/authorize">
<input type="hidden" name="request" value="`)
	b.WriteString(html.EscapeString(v.request))
	b.WriteString(`">
<input type="hidden" name="csrf" value="`)
	b.WriteString(html.EscapeString(v.csrf))
	b.WriteString("\">\n")
	if v.passwords {
		b.WriteString(`<p><label>User name <input name="username" autocomplete="username" required></label></p>
<p><label>Password <input name="password" type="password" autocomplete="current-password" required></label></p>
`)
	} else {
		b.WriteString(`<p><label>Sign-in code (printed by <code>mcp-stdio serve</code> where it runs)<br>
<input name="code" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" required></label></p>
`)
	}
	b.WriteString(`<p><button type="submit" name="action" value="approve">Allow</button>
<button type="submit" name="action" value="deny" formnovalidate>Deny</button></p>
</form>
</body></html>
`)
	_, _ = io.WriteString(w, b.String())
}

// consentValues are what the consent page shows.
type consentValues struct {
	clientName, resource, redirectHost string
	loopback                           bool
	scopes                             []string
	message                            string
	request, csrf                      string
	passwords                          bool
}

// writeErrorPage writes the page that shows an error to the person.
func writeErrorPage(w io.Writer, msg string) {
	_, _ = io.WriteString(w, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign-in failed — mcp-stdio</title></head>
<body><h1>Sign-in failed</h1><p>`+html.EscapeString(msg)+`</p></body></html>
`)
}

// pageHeaders sets what every page of the endpoint carries: no framing,
// no script, no caching, no referrer. formAction is the origin the form
// may end up at (the redirect URI's), besides this server.
func pageHeaders(w http.ResponseWriter, formAction string) {
	h := w.Header()
	csp := "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
	if formAction != "" {
		csp += " " + formAction
	}
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/html; charset=utf-8")
}

// errorPage shows an error to the person.
func (a *AuthorizationServer) errorPage(w http.ResponseWriter, status int, msg string) {
	pageHeaders(w, "")
	w.WriteHeader(status)
	writeErrorPage(w, msg)
}

// showConsent renders p's consent page, with a message after a wrong
// answer.
func (a *AuthorizationServer) showConsent(w http.ResponseWriter, r *http.Request, p *pendingAuth, status int, msg string) {
	ru, _ := url.Parse(p.redirectURI)
	host := ru.Host
	action := ru.Scheme + "://" + ru.Host
	if ru.Host == "" {
		host = ru.Scheme + ":"
		action = ru.Scheme + ":"
	}
	name := p.client.name
	if name == "" {
		name = "An unnamed client"
	}
	http.SetCookie(w, &http.Cookie{
		Name:     consentCookiePrefix + p.id[:16],
		Value:    p.csrf,
		Path:     "/authorize",
		MaxAge:   int(pendingLifetime.Seconds()),
		HttpOnly: true,
		Secure:   strings.HasPrefix(a.issuer, "https:"),
		SameSite: http.SameSiteStrictMode,
	})
	pageHeaders(w, action)
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	consentPage(w, consentValues{
		clientName:   name,
		resource:     a.resource,
		redirectHost: host,
		loopback:     ru.Scheme == "http" && isLoopbackHost(ru.Hostname()),
		scopes:       p.scopes,
		message:      msg,
		request:      p.id,
		csrf:         p.csrf,
		passwords:    a.cfg.Passwords != nil,
	})
}

// consentAnswer takes the consent form: deny, or approve with proof of
// who the person is.
func (a *AuthorizationServer) consentAnswer(w http.ResponseWriter, r *http.Request) {
	body, ferr := readForm(w, r)
	var form url.Values
	if ferr == nil {
		form, ferr = parseForm(body)
	}
	if ferr != nil {
		a.errorPage(w, ferr.status, "The form could not be read: "+ferr.Description+".")
		return
	}
	id, csrf := form.Get("request"), form.Get("csrf")
	now := a.now()
	a.mu.Lock()
	a.prune(now)
	p, ok := a.pending[id]
	a.mu.Unlock()
	if !ok || len(id) < 16 {
		a.errorPage(w, http.StatusBadRequest, "This sign-in page has expired or was already answered. Start the sign-in again from the app.")
		return
	}
	cookie, _ := r.Cookie(consentCookiePrefix + id[:16])
	if cookie == nil || subtle.ConstantTimeCompare([]byte(csrf), []byte(p.csrf)) != 1 || subtle.ConstantTimeCompare([]byte(cookie.Value), []byte(p.csrf)) != 1 {
		a.log.Warn("oauth: a consent form came without its page's CSRF token or cookie; refused")
		a.errorPage(w, http.StatusForbidden, "This form was not sent from the sign-in page this browser loaded. Start the sign-in again from the app.")
		return
	}
	if form.Get("action") == "deny" {
		a.forget(p.id)
		a.log.Info("oauth: sign-in denied on the consent page", "client_name", p.client.name)
		a.redirectError(w, r, p.redirectURI, p.state, &OAuthError{http.StatusBadRequest, "access_denied", "the person denied access"})
		return
	}
	source := a.source(r)
	a.mu.Lock()
	ready, wait := a.failures.ready(source, now)
	a.mu.Unlock()
	if !ready {
		a.refusals.warn(now, "answers", "oauth: sign-in answers from one address are refused unchecked: too many were wrong", "source", source, "burst", failureBurst, "every", failureEvery)
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter(wait)))
		a.showConsent(w, r, p, http.StatusTooManyRequests, fmt.Sprintf("Too many wrong answers from your address. Wait %d seconds, then try again.", retryAfter(wait)))
		return
	}
	if a.cfg.Passwords != nil {
		select {
		case a.checks <- struct{}{}:
			defer func() { <-a.checks }()
		case <-r.Context().Done():
			return
		}
	}
	subject, spent, ok := a.checkPerson(form)
	if !ok {
		a.mu.Lock()
		a.failures.spend(source, now)
		replaced := ""
		if a.cfg.Passwords == nil {
			if a.wrong++; a.wrong >= maxWrongPerCode {
				a.signIn, a.wrong = newSignInCode(), 0
				replaced = a.signIn
			}
		}
		p.attempts++
		void := p.attempts >= maxAttemptsPerPage
		if void {
			a.dropPending(p.id)
		}
		a.mu.Unlock()
		a.refusals.warn(now, "wrong", "oauth: a wrong sign-in answer on the consent page", "client_name", p.client.name, "source", source)
		if replaced != "" {
			a.log.Warn("oauth: the one-time sign-in code got too many wrong answers; a new one replaces it", "wrong_answers", maxWrongPerCode)
			a.cfg.SignInCode(replaced)
		}
		if void {
			a.errorPage(w, http.StatusForbidden, "Too many wrong answers on this page. Start the sign-in again from the app.")
			return
		}
		msg := "That code is not right. Copy it from where mcp-stdio serve runs."
		if a.cfg.Passwords != nil {
			msg = "Wrong user name or password."
		}
		a.showConsent(w, r, p, http.StatusForbidden, msg)
		return
	}
	code := newSecret()
	a.mu.Lock()
	if _, still := a.pending[p.id]; !still {
		a.mu.Unlock()
		a.errorPage(w, http.StatusBadRequest, "This sign-in page was already answered. Start the sign-in again from the app.")
		return
	}
	if spent != "" && a.signIn != spent {
		// Another page took the same code a moment ago.
		a.mu.Unlock()
		a.showConsent(w, r, p, http.StatusForbidden, "That code was just used. Copy the new one from where mcp-stdio serve runs.")
		return
	}
	if len(a.codes) >= maxUsedCodes {
		a.prune(now)
	}
	if len(a.codes) >= maxUsedCodes {
		a.mu.Unlock()
		a.redirectError(w, r, p.redirectURI, p.state, &OAuthError{http.StatusServiceUnavailable, "temporarily_unavailable", "too many sign-ins at once; try again in a minute"})
		return
	}
	a.dropPending(p.id)
	next := ""
	if spent != "" {
		next = newSignInCode()
		a.signIn, a.wrong = next, 0
	}
	a.codes[hashToken(code)] = &codeEntry{
		client:        p.client.id,
		redirectURI:   p.redirectURI,
		codeChallenge: p.codeChallenge,
		scopes:        p.scopes,
		subject:       subject,
		expires:       now.Add(codeLifetime),
	}
	a.mu.Unlock()
	if next != "" {
		a.cfg.SignInCode(next)
	}
	a.log.Info("oauth: access allowed on the consent page", "subject", subject, "client_name", p.client.name)
	a.redirectTo(w, r, p.redirectURI, p.state, url.Values{"code": {code}})
}

// checkPerson checks the proof of who the person is and returns the
// subject, and with the one-time code the code it spends.
func (a *AuthorizationServer) checkPerson(form url.Values) (subject, spent string, ok bool) {
	if a.cfg.Passwords != nil {
		user := form.Get("username")
		if user == "" || !a.cfg.Passwords.check(user, form.Get("password")) {
			return "", "", false
		}
		return user, "", true
	}
	a.mu.Lock()
	current := a.signIn
	a.mu.Unlock()
	if !codeMatches(form.Get("code"), current) {
		return "", "", false
	}
	return OwnerSubject, current, true
}

// forget drops a pending authorization.
func (a *AuthorizationServer) forget(id string) {
	a.mu.Lock()
	a.dropPending(id)
	a.mu.Unlock()
}
