package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"go.uber.org/goleak"
)

// Floods against the embedded authorization server, over loopback: the
// server behind a real HTTP server that trusts loopback as its proxy, so
// that each request names its source in X-Forwarded-For.

// wire is the test server on loopback.
type wire struct {
	t      *testing.T
	srv    *httptest.Server
	client *http.Client
}

// loopbackProxies trusts the test's own loopback connections as a proxy.
func loopbackProxies(c *AuthorizationServerConfig) {
	c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
}

// wire serves ta on loopback until close.
func (ta *testAS) wire(t *testing.T) *wire {
	srv := httptest.NewServer(ta.Handler())
	c := srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &wire{t: t, srv: srv, client: c}
}

func (wr *wire) close() {
	wr.client.CloseIdleConnections()
	wr.srv.Close()
}

// do sends one request from source and returns the answer as a recorder,
// for the helpers of as_helpers_test.go.
func (wr *wire) do(source, method, target, contentType, body string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	wr.t.Helper()
	req, err := http.NewRequest(method, wr.srv.URL+target, strings.NewReader(body))
	if err != nil {
		wr.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("X-Forwarded-For", source)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err := wr.client.Do(req)
	if err != nil {
		wr.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		wr.t.Fatal(err)
	}
	w := httptest.NewRecorder()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(b)
	return w
}

func (wr *wire) register(source string) *httptest.ResponseRecorder {
	wr.t.Helper()
	return wr.do(source, http.MethodPost, "/register", "application/json", `{"redirect_uris":["`+testRedirect+`"],"client_name":"Flood"}`)
}

func (wr *wire) registered(source string) string {
	wr.t.Helper()
	w := wr.register(source)
	if w.Code != http.StatusCreated {
		wr.t.Fatalf("register from %s: %d %s", source, w.Code, w.Body)
	}
	var resp RegistrationResponse
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		wr.t.Fatal(err)
	}
	return resp.ClientID
}

func (wr *wire) authorize(source, client string) *httptest.ResponseRecorder {
	wr.t.Helper()
	return wr.do(source, http.MethodGet, "/authorize?"+authQuery(client).Encode(), "", "")
}

func (wr *wire) answer(source string, p page, fields url.Values) *httptest.ResponseRecorder {
	wr.t.Helper()
	form := url.Values{"request": {p.request}, "csrf": {p.csrf}, "action": {"approve"}}
	for k, v := range fields {
		form[k] = v
	}
	return wr.do(source, http.MethodPost, "/authorize", "application/x-www-form-urlencoded", form.Encode(), p.cookie)
}

func (wr *wire) post(source, target string, form url.Values) (int, map[string]any) {
	wr.t.Helper()
	w := wr.do(source, http.MethodPost, target, "application/x-www-form-urlencoded", form.Encode())
	return w.Code, decode(w)
}

func (wr *wire) exchange(source, client, code string) (int, map[string]any) {
	return wr.post(source, "/token", url.Values{
		"grant_type":    {"authorization_code"},
		"client_id":     {client},
		"code":          {code},
		"redirect_uri":  {testRedirect},
		"code_verifier": {testVerifier},
		"resource":      {testResource},
	})
}

// signIn signs a new client in from source: client id, tokens.
func (wr *wire) signIn(ta *testAS, source string) (client, access, refresh string) {
	wr.t.Helper()
	client = wr.registered(source)
	p := pageOf(wr.t, wr.authorize(source, client))
	code := redirected(wr.t, wr.answer(source, p, url.Values{"code": {ta.code()}})).Get("code")
	status, tok := wr.exchange(source, client, code)
	if status != http.StatusOK {
		wr.t.Fatalf("token: %d %v", status, tok)
	}
	return client, tok["access_token"].(string), tok["refresh_token"].(string)
}

// stillServing checks that the server answers its metadata.
func (wr *wire) stillServing() {
	wr.t.Helper()
	if w := wr.do("192.0.2.200", http.MethodGet, "/.well-known/oauth-authorization-server", "", ""); w.Code != http.StatusOK {
		wr.t.Fatalf("metadata: %d", w.Code)
	}
}

// flood registers one client from each of n sources named by prefix and
// counts the answers by status; every refusal must say when to retry.
func (wr *wire) flood(n int, prefix string) map[int]int {
	wr.t.Helper()
	got := map[int]int{}
	for i := range n {
		w := wr.register(fmt.Sprintf("%s.%d.%d", prefix, i/250, i%250))
		got[w.Code]++
		if w.Code != http.StatusCreated {
			retryAfterSaid(wr.t, w)
		}
	}
	return got
}

// retryAfterSaid checks that a refusal carries Retry-After and an OAuth
// error saying when to retry.
func retryAfterSaid(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	m := decode(w)
	if w.Header().Get("Retry-After") == "" || m["error"] != "temporarily_unavailable" || !strings.Contains(fmt.Sprint(m["error_description"]), "try again in") {
		t.Fatalf("a refusal without when to retry: %d %v %s", w.Code, w.Header(), w.Body)
	}
	// The header says what the description says.
	if !strings.Contains(fmt.Sprint(m["error_description"]), "try again in "+w.Header().Get("Retry-After")+" s") {
		t.Fatalf("Retry-After %s, but the refusal says %q", w.Header().Get("Retry-After"), m["error_description"])
	}
}

// Issue 22 point 7: a flood of 2,200 registrations from 2,200 sources (and 25 from one),
// and a burst from one, during a person's sign-in. The person's client
// (a consent page waiting, then a code) and a signed-in client (tokens
// alive) are never evicted: the code exchanges and the tokens work. The
// flooders are refused with Retry-After once only new or used clients
// are left; one source is refused after registerBurst. The store file is
// not written per registration: the flood is one batch per
// storeFlushInterval, beside the writes of the sign-ins themselves.
func TestASRegistrationFloodDuringSignIn(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "oauth.json")
	ta := newTestAS(t, func(c *AuthorizationServerConfig) {
		loopbackProxies(c)
		c.StorePath = path
	})
	defer ta.Close()
	wr := ta.wire(t)
	defer wr.close()

	const live, user = "198.51.100.1", "198.51.100.2"
	liveClient, access, refresh := wr.signIn(ta, live)
	userClient := wr.registered(user)
	p := pageOf(t, wr.authorize(user, userClient)) // the person's sign-in begins
	written := ta.store.written()

	// One source: registerBurst, then 429 with Retry-After.
	for i := range registerBurst + 5 {
		w := wr.register("203.0.113.9")
		if i < registerBurst {
			is.Equal(w.Code, http.StatusCreated)
			continue
		}
		is.Equal(w.Code, http.StatusTooManyRequests)
		retryAfterSaid(t, w)
		is.Equal(w.Header().Get("Retry-After"), "60")
	}
	// Many sources: the table fills; new clients are kept for clientGrace,
	// so the rest are refused with Retry-After.
	got := wr.flood(DefaultMaxClients+100, "10.1")
	is.Equal(got[http.StatusCreated], DefaultMaxClients-2-registerBurst)
	is.Equal(got[http.StatusServiceUnavailable], 100+2+registerBurst)
	is.Equal(ta.store.written(), written) // 1,125 registrations, no write yet: the batch waits for its interval

	// The signed-in client works meanwhile.
	_, err := ta.Verify(context.Background(), access)
	is.NoErr(err)
	status, tok := wr.post(live, "/token", url.Values{"grant_type": {"refresh_token"}, "client_id": {liveClient}, "refresh_token": {refresh}})
	is.Equal(status, http.StatusOK)
	access = tok["access_token"].(string)

	// A minute on, the flood's clients may make room for new ones; the
	// person answers the consent page and gets a code.
	ta.clock.Advance(clientGrace + time.Second)
	code := redirected(t, wr.answer(user, p, url.Values{"code": {ta.code()}})).Get("code")
	is.True(code != "")
	got = wr.flood(DefaultMaxClients+100, "10.2")
	is.Equal(got[http.StatusCreated], DefaultMaxClients-2) // every client but the two in use made room
	is.Equal(got[http.StatusServiceUnavailable], 102)

	status, tok = wr.exchange(user, userClient, code)
	is.Equal(status, http.StatusOK) // the person's sign-in went through
	_, err = ta.Verify(context.Background(), tok["access_token"].(string))
	is.NoErr(err)
	_, err = ta.Verify(context.Background(), access)
	is.NoErr(err)
	is.True(ta.clients[liveClient] != nil && ta.clients[userClient] != nil)
	wr.stillServing()

	// 2,225 registrations; the writes: the refresh's, the exchange's, and
	// the batches that the clock's one step let through.
	n := ta.store.written() - written
	t.Logf("store writes during 2,225 registrations and 2 sign-in changes: %d", n)
	is.True(n >= 2 && n <= 4)

	// Closing writes the last batch: a restart knows both clients.
	is.NoErr(ta.Close())
	tb := newTestAS(t, func(c *AuthorizationServerConfig) { c.StorePath = path })
	is.True(tb.clients[liveClient] != nil && tb.clients[userClient] != nil)
	is.Equal(len(tb.clients), DefaultMaxClients)
	is.NoErr(tb.Close())
}

// Issue 22 point 8: an authorization-request flood from one source holds
// at most maxPendingPerSource consent pages, and the refusals say when to
// retry; another source's sign-in goes through. Wrong sign-in codes from
// an attacker's source stop that source only (429, Retry-After): the
// person's right code from their own source still gets a code that
// exchanges. One client's pages are bounded too, from any sources.
func TestASAuthorizeFloodAndWrongCodes(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	is := is.New(t)
	ta := newTestAS(t, loopbackProxies)
	defer ta.Close()
	wr := ta.wire(t)
	defer wr.close()

	const attacker, user = "203.0.113.66", "198.51.100.7"
	client := wr.registered(user) // the flood even uses the person's client
	var pages []page
	for i := range 256 {
		w := wr.authorize(attacker, client)
		if i < maxPendingPerSource {
			pages = append(pages, pageOf(t, w))
			continue
		}
		q := redirected(t, w)
		is.Equal(q.Get("error"), "temporarily_unavailable")
		is.True(strings.Contains(q.Get("error_description"), "your address"))
		is.True(strings.Contains(q.Get("error_description"), "try again in 600 s"))
	}
	p := pageOf(t, wr.authorize(user, client)) // another source: a page

	// Wrong codes from the attacker: failureBurst are checked, then 429.
	wrong := url.Values{"code": {"AAAA-AAAA-AAAA"}}
	for i := range failureBurst + 5 {
		w := wr.answer(attacker, pages[i/(maxAttemptsPerPage-1)], wrong)
		if i < failureBurst {
			is.Equal(w.Code, http.StatusForbidden)
			continue
		}
		is.Equal(w.Code, http.StatusTooManyRequests)
		is.Equal(w.Header().Get("Retry-After"), "6")
		is.True(strings.Contains(w.Body.String(), "Wait 6 seconds"))
	}
	// The person's right code, from their source, goes through.
	code := redirected(t, wr.answer(user, p, url.Values{"code": {ta.code()}})).Get("code")
	is.True(code != "")
	status, tok := wr.exchange(user, client, code)
	is.Equal(status, http.StatusOK)
	is.True(tok["access_token"] != nil)

	// A client's pages from many sources: maxPendingPerClient, then the
	// refusal names the client.
	other := wr.registered("198.51.100.8")
	for i := range maxPendingPerClient + 3 {
		w := wr.authorize(fmt.Sprintf("10.3.%d.1", i), other)
		if i < maxPendingPerClient {
			is.Equal(w.Code, http.StatusOK)
			continue
		}
		q := redirected(t, w)
		is.True(strings.Contains(q.Get("error_description"), "this client"))
	}
	// Pages expire: the attacker's source may try again after Retry-After.
	ta.clock.Advance(pendingLifetime)
	is.Equal(wr.authorize(attacker, client).Code, http.StatusOK)
	wr.stillServing()
}
