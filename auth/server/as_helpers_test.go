package server

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// The test authorization server: issuer https://as.test, resource
// https://as.test/mcp, a hand-driven clock, the one-time codes collected.

const (
	testIssuer   = "https://as.test"
	testResource = "https://as.test/mcp"
	testRedirect = "http://127.0.0.1:9999/callback"
	testVerifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk_verifier"
)

// fakeClock is a clock moved by hand; its timers fire when Advance
// reaches them.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	timers []fakeTimer
}

type fakeTimer struct {
	at time.Time
	c  chan time.Time
}

// After returns a channel that receives the time once Advance has moved
// the clock d on.
func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.t
		return ch
	}
	c.timers = append(c.timers, fakeTimer{at: c.t.Add(d), c: ch})
	return ch
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	kept := c.timers[:0]
	for _, tm := range c.timers {
		if tm.at.After(c.t) {
			kept = append(kept, tm)
			continue
		}
		tm.c <- c.t
	}
	c.timers = kept
	c.mu.Unlock()
}

// testAS is an authorization server under test.
type testAS struct {
	*AuthorizationServer
	clock *fakeClock
	mu    sync.Mutex
	codes []string // one-time codes, in order
}

func (ta *testAS) code() string {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	return ta.codes[len(ta.codes)-1]
}

func newTestAS(t *testing.T, edit func(*AuthorizationServerConfig)) *testAS {
	t.Helper()
	ta := &testAS{clock: newFakeClock()}
	cfg := AuthorizationServerConfig{
		Issuer:   testIssuer,
		Resource: testResource,
		SignInCode: func(c string) {
			ta.mu.Lock()
			ta.codes = append(ta.codes, c)
			ta.mu.Unlock()
		},
		Now:   ta.clock.Now,
		After: ta.clock.After,
	}
	if edit != nil {
		edit(&cfg)
	}
	a, err := NewAuthorizationServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	ta.AuthorizationServer = a
	return ta
}

// do sends one request to the handler.
func (ta *testAS) do(method, target, contentType, body string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	for _, c := range cookies {
		r.AddCookie(c)
	}
	w := httptest.NewRecorder()
	ta.Handler().ServeHTTP(w, r)
	return w
}

func (ta *testAS) post(target string, form url.Values) *httptest.ResponseRecorder {
	return ta.do(http.MethodPost, target, "application/x-www-form-urlencoded", form.Encode())
}

// register registers a client with redirect URIs and returns its id.
func (ta *testAS) register(t testing.TB, redirects ...string) string {
	t.Helper()
	if len(redirects) == 0 {
		redirects = []string{testRedirect}
	}
	b, _ := json.Marshal(map[string]any{"redirect_uris": redirects, "client_name": "Test Client"})
	w := ta.do(http.MethodPost, "/register", "application/json", string(b))
	if w.Code != http.StatusCreated {
		t.Fatalf("register: %d %s", w.Code, w.Body)
	}
	var resp RegistrationResponse
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	return resp.ClientID
}

func challengeOf(verifier string) string {
	s := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(s[:])
}

// authQuery is a valid authorization request's query for client.
func authQuery(client string) url.Values {
	return url.Values{
		"response_type":         {"code"},
		"client_id":             {client},
		"redirect_uri":          {testRedirect},
		"state":                 {"st-123"},
		"code_challenge":        {challengeOf(testVerifier)},
		"code_challenge_method": {"S256"},
		"resource":              {testResource},
	}
}

// page is a consent page shown.
type page struct {
	request, csrf string
	cookie        *http.Cookie
	body          string
}

var (
	requestField = regexp.MustCompile(`name="request" value="([^"]+)"`)
	csrfField    = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
)

// consentPage loads the consent page for q.
func (ta *testAS) consentPage(t testing.TB, q url.Values) page {
	t.Helper()
	w := ta.do(http.MethodGet, "/authorize?"+q.Encode(), "", "")
	if w.Code != http.StatusOK {
		t.Fatalf("authorize: %d %s %v", w.Code, w.Body, w.Header())
	}
	return pageOf(t, w)
}

func pageOf(t testing.TB, w *httptest.ResponseRecorder) page {
	t.Helper()
	body := w.Body.String()
	rm, cm := requestField.FindStringSubmatch(body), csrfField.FindStringSubmatch(body)
	cookies := w.Result().Cookies()
	if rm == nil || cm == nil || len(cookies) != 1 {
		t.Fatalf("not a consent page: %s", body)
	}
	return page{request: rm[1], csrf: cm[1], cookie: cookies[0], body: body}
}

// answer posts the consent form of p with extra fields.
func (ta *testAS) answer(p page, fields url.Values) *httptest.ResponseRecorder {
	form := url.Values{"request": {p.request}, "csrf": {p.csrf}, "action": {"approve"}}
	for k, v := range fields {
		form[k] = v
	}
	return ta.do(http.MethodPost, "/authorize", "application/x-www-form-urlencoded", form.Encode(), p.cookie)
}

// redirected returns the query of a 303 to the test redirect URI.
func redirected(t testing.TB, w *httptest.ResponseRecorder) url.Values {
	t.Helper()
	if w.Code != http.StatusSeeOther {
		t.Fatalf("want a redirect, got %d %s", w.Code, w.Body)
	}
	u, err := url.Parse(w.Header().Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

// approvedCode signs client in with the one-time code and returns the
// authorization code.
func (ta *testAS) approvedCode(t testing.TB, client string) string {
	t.Helper()
	p := ta.consentPage(t, authQuery(client))
	q := redirected(t, ta.answer(p, url.Values{"code": {ta.code()}}))
	if q.Get("code") == "" {
		t.Fatalf("no code: %v", q)
	}
	return q.Get("code")
}

// exchange redeems code and returns the status and the decoded answer.
func (ta *testAS) exchange(client, code string) (int, map[string]any) {
	w := ta.post("/token", url.Values{
		"grant_type":    {"authorization_code"},
		"client_id":     {client},
		"code":          {code},
		"redirect_uri":  {testRedirect},
		"code_verifier": {testVerifier},
		"resource":      {testResource},
	})
	return w.Code, decode(w)
}

func (ta *testAS) refreshWith(client, refresh string) (int, map[string]any) {
	w := ta.post("/token", url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {refresh}})
	return w.Code, decode(w)
}

func decode(w *httptest.ResponseRecorder) map[string]any {
	m := map[string]any{}
	_ = json.Unmarshal(w.Body.Bytes(), &m)
	return m
}

// signIn registers a client and signs it in: client id, access token,
// refresh token.
func (ta *testAS) signIn(t testing.TB) (client, access, refresh string) {
	t.Helper()
	client = ta.register(t)
	status, tok := ta.exchange(client, ta.approvedCode(t, client))
	if status != http.StatusOK {
		t.Fatalf("token: %d %v", status, tok)
	}
	return client, tok["access_token"].(string), tok["refresh_token"].(string)
}
