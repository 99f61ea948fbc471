package auth

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/auth/authtest"
)

// fixedToken is a TokenSource with one token.
type fixedToken string

func (f fixedToken) BearerToken(context.Context) (string, uint64) { return string(f), 1 }

// recordingServer records the requests it gets (method, Authorization,
// body) and answers 200 with an empty JSON object.
type recordingServer struct {
	*httptest.Server
	mu  sync.Mutex
	got []string
}

func newRecordingServer(t *testing.T, tlsServer bool) *recordingServer {
	rs := &recordingServer{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rs.mu.Lock()
		rs.got = append(rs.got, r.Method+" auth="+r.Header.Get("Authorization")+" body="+string(b))
		rs.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{}`)
	})
	if tlsServer {
		rs.Server = httptest.NewTLSServer(h)
	} else {
		rs.Server = httptest.NewServer(h)
	}
	t.Cleanup(rs.Close)
	return rs
}

func (rs *recordingServer) requests() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]string(nil), rs.got...)
}

// redirectTo returns a server that redirects every request with code to
// target plus the request's path.
func redirectTo(t *testing.T, tlsServer bool, code int, target string) *httptest.Server {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Location", target+r.URL.Path)
		w.WriteHeader(code)
	})
	var srv *httptest.Server
	if tlsServer {
		srv = httptest.NewTLSServer(h)
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(srv.Close)
	return srv
}

// The token rides only to the origin it was issued for: a redirect's
// target elsewhere gets the request without it (even through a client
// that follows any redirect), and with Origin set no request for another
// origin gets it.
func TestTransportKeepsTheTokenAtItsOrigin(t *testing.T) {
	is := is.New(t)
	other := newRecordingServer(t, false)
	from := redirectTo(t, false, http.StatusTemporaryRedirect, other.URL)
	hc := &http.Client{Transport: &Transport{Source: fixedToken("tok-secret")}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Post(from.URL+"/mcp", "application/json", strings.NewReader(`{}`))
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(other.requests(), []string{"POST auth= body={}"})

	home := newRecordingServer(t, false)
	hc = &http.Client{Transport: &Transport{Source: fixedToken("tok-secret"), Origin: home.URL + "/mcp"}}
	defer hc.CloseIdleConnections()
	for _, u := range []string{home.URL + "/mcp", other.URL + "/message"} {
		resp, err := hc.Get(u)
		is.NoErr(err)
		resp.Body.Close()
	}
	is.Equal(home.requests(), []string{"GET auth=Bearer tok-secret body="})
	is.Equal(other.requests()[1], "GET auth= body=")
}

// The OAuth client's own requests: one carrying credentials (a token
// request) is not redirected to another origin, whatever its HTTP
// client's CheckRedirect; none is redirected from https to plain http; a
// metadata GET may be redirected to another https origin.
func TestOAuthRequestsKeepTheirCredentialsAtTheirOrigin(t *testing.T) {
	srv := authtest.NewServer(t, authtest.Options{})
	h := newHarness(t, srv, nil)
	ctx := context.Background()

	t.Run("token request to another origin", func(t *testing.T) {
		is := is.New(t)
		other := newRecordingServer(t, false)
		from := redirectTo(t, false, http.StatusTemporaryRedirect, other.URL)
		_, err := h.c.requestToken(ctx, from.URL+"/token", clientCreds{id: "c", secret: "very-secret-value", method: authSecretPost},
			url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"rt-secret"}})
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "another origin"))
		is.True(strings.Contains(err.Error(), other.URL+"/token"))
		is.Equal(len(other.requests()), 0)
	})
	t.Run("token request from https to http", func(t *testing.T) {
		is := is.New(t)
		plain := newRecordingServer(t, false)
		from := redirectTo(t, true, http.StatusPermanentRedirect, plain.URL)
		c := &Client{http: guardRedirects(from.Client())}
		_, err := c.requestToken(ctx, from.URL+"/token", clientCreds{id: "c", method: authNone}, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"rt-secret"}})
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "plain http"))
		is.Equal(len(plain.requests()), 0)
	})
	t.Run("metadata GET", func(t *testing.T) {
		is := is.New(t)
		tlsOther := newRecordingServer(t, true)
		from := redirectTo(t, true, http.StatusFound, tlsOther.URL)
		c := &Client{http: guardRedirects(from.Client())}
		body, status, err := c.getDocument(ctx, from.URL+wellKnownAS)
		is.NoErr(err)
		is.Equal(status, http.StatusOK)
		is.Equal(string(body), `{}`)

		plain := newRecordingServer(t, false)
		down := redirectTo(t, true, http.StatusFound, plain.URL)
		c = &Client{http: guardRedirects(down.Client())}
		_, _, err = c.getDocument(ctx, down.URL+wellKnownAS)
		is.True(err != nil)
		is.Equal(len(plain.requests()), 0)
	})
}
