package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// seen is a request a recording server received.
type seen struct {
	Method, Path, Body string
	Header             http.Header
}

// recorder is a loopback MCP endpoint that records every request: a POST
// is answered with an empty result for its id, a GET with an event stream
// carrying one notification, a DELETE with 200.
type recorder struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []seen
}

func newRecorder(t *testing.T, tlsServer bool) *recorder {
	rec := &recorder{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.got = append(rec.got, seen{Method: r.Method, Path: r.URL.Path, Body: string(b), Header: r.Header.Clone()})
		rec.mu.Unlock()
		switch r.Method {
		case http.MethodPost:
			m, err := frame.Parse(b)
			if err != nil || !m.IsRequest() {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(frame.ResultResponse(m.ID(), []byte(`{}`)).Bytes())
		case http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n")
		}
	})
	if tlsServer {
		rec.srv = httptest.NewTLSServer(h)
	} else {
		rec.srv = httptest.NewServer(h)
	}
	t.Cleanup(rec.srv.Close)
	return rec
}

// requests returns what the recorder received so far.
func (rec *recorder) requests() []seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]seen(nil), rec.got...)
}

// redirector answers every request with a redirect of status code to
// target (plus the request's path), and counts them.
func redirector(t *testing.T, tlsServer bool, code int, target func() string) *httptest.Server {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Location", target()+r.URL.Path)
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

// redirectClient returns a client of NewHTTPClient's that trusts the
// httptest TLS certificate.
func redirectClient(t *testing.T) *http.Client {
	// Every httptest TLS server has the same certificate.
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	tlsCfg := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	srv.Close()
	c := NewHTTPClient(HTTPOptions{TLSClientConfig: tlsCfg})
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// credentials are the static headers every test client sends.
func credentials() http.Header {
	return http.Header{
		"Authorization": {"Bearer secret-token"},
		"X-Api-Key":     {"key-from-H"},
		"Cookie":        {"session=s3cr3t"},
	}
}

// streamableRequests are the requests a Streamable HTTP client makes: a
// POST, the GET stream and the DELETE.
var streamableRequests = []struct {
	name string
	do   func(c *StreamableClient) error
}{
	{"POST", func(c *StreamableClient) error {
		return c.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"secret":"argument"}}}`))
	}},
	{"GET", func(c *StreamableClient) error {
		_, err := c.Listen(context.Background(), http.Header{frame.HeaderSessionID: {"sid-1"}}, nil)
		return err
	}},
	{"DELETE", func(c *StreamableClient) error {
		return c.EndSession(context.Background(), http.Header{frame.HeaderSessionID: {"sid-1"}})
	}},
}

// A 307 within the server's origin is followed, with every header.
func TestRedirectWithinTheOriginIsFollowed(t *testing.T) {
	client := redirectClient(t)
	for _, tlsServer := range []bool{false, true} {
		for _, r := range streamableRequests {
			t.Run(r.name, func(t *testing.T) {
				is := is.New(t)
				rec := newRecorder(t, tlsServer)
				mux := http.NewServeMux()
				mux.Handle("/mcp", rec.srv.Config.Handler)
				mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
				})
				rec.srv.Config.Handler = mux
				c := &StreamableClient{URL: rec.srv.URL + "/old", Client: client, Header: credentials(), ToClient: newCollector()}
				is.NoErr(r.do(c))
				got := rec.requests()
				is.Equal(len(got), 1)
				is.Equal(got[0].Path, "/mcp")
				is.Equal(got[0].Header.Get("Authorization"), "Bearer secret-token")
				is.Equal(got[0].Header.Get("X-Api-Key"), "key-from-H")
				is.Equal(got[0].Header.Get("Cookie"), "session=s3cr3t")
			})
		}
	}
}

// A 307 or 308 to another origin is refused, naming its target; the
// target receives nothing. The caller's own CheckRedirect does not change
// that.
func TestRedirectToAnotherOriginIsRefused(t *testing.T) {
	client := redirectClient(t)
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		for _, r := range streamableRequests {
			t.Run(r.name, func(t *testing.T) {
				is := is.New(t)
				rec := newRecorder(t, false)
				from := redirector(t, false, code, func() string { return rec.srv.URL })
				lax := *client
				lax.CheckRedirect = nil // net/http's default follows anything
				c := &StreamableClient{URL: from.URL + "/mcp", Client: &lax, Header: credentials(), ToClient: newCollector()}
				err := r.do(c)
				var re *RedirectError
				is.True(errors.As(err, &re))
				is.Equal(re.Status, code)
				is.Equal(re.To, rec.srv.URL+"/mcp")
				is.True(!re.Downgrade)
				is.True(strings.Contains(err.Error(), rec.srv.URL+"/mcp"))
				var se *frame.SendError
				is.True(!errors.As(err, &se)) // not a send failure: the retry stage leaves it
				is.Equal(len(rec.requests()), 0)
			})
		}
	}
}

// With FollowRedirects, a redirect to another origin is followed, and the
// target gets the request without Authorization, Cookie or the static
// headers.
func TestRedirectToAnotherOriginFollowedWithoutCredentials(t *testing.T) {
	client := redirectClient(t)
	for _, targetTLS := range []bool{false, true} {
		for _, r := range streamableRequests {
			t.Run(r.name, func(t *testing.T) {
				is := is.New(t)
				rec := newRecorder(t, targetTLS)
				from := redirector(t, targetTLS, http.StatusTemporaryRedirect, func() string { return rec.srv.URL })
				c := &StreamableClient{URL: from.URL + "/mcp", Client: client, Header: credentials(), ToClient: newCollector(), FollowRedirects: true}
				is.NoErr(r.do(c))
				got := rec.requests()
				is.Equal(len(got), 1)
				is.Equal(got[0].Method, r.name)
				is.Equal(got[0].Header.Get("Authorization"), "")
				is.Equal(got[0].Header.Get("X-Api-Key"), "")
				is.Equal(got[0].Header.Get("Cookie"), "")
				if r.name == "POST" {
					is.True(strings.Contains(got[0].Body, `"secret":"argument"`))
				} else {
					is.Equal(got[0].Header.Get(frame.HeaderSessionID), "sid-1")
				}
			})
		}
	}
}

// The attack: an https server redirects to a plain http one. Nothing is
// followed, flag or not; the plain server receives nothing.
func TestRedirectFromHTTPSToHTTPIsRefused(t *testing.T) {
	client := redirectClient(t)
	for _, follow := range []bool{false, true} {
		for _, r := range streamableRequests {
			t.Run(r.name, func(t *testing.T) {
				is := is.New(t)
				plain := newRecorder(t, false)
				from := redirector(t, true, http.StatusPermanentRedirect, func() string { return plain.srv.URL })
				c := &StreamableClient{URL: from.URL + "/mcp", Client: client, Header: credentials(), ToClient: newCollector(), FollowRedirects: follow}
				err := r.do(c)
				var re *RedirectError
				is.True(errors.As(err, &re))
				is.True(re.Downgrade)
				is.Equal(re.To, plain.srv.URL+"/mcp")
				is.True(strings.Contains(err.Error(), "plain http"))
				is.Equal(len(plain.requests()), 0)
			})
		}
	}
}

// A chain that leaves the origin and comes back is refused at its first
// hop away; one that reaches plain http after an allowed cross-origin hop
// is refused there.
func TestRedirectChains(t *testing.T) {
	is := is.New(t)
	client := redirectClient(t)
	plain := newRecorder(t, false)
	second := redirector(t, true, http.StatusTemporaryRedirect, func() string { return plain.srv.URL })
	first := redirector(t, true, http.StatusTemporaryRedirect, func() string { return second.URL })
	c := &StreamableClient{URL: first.URL + "/mcp", Client: client, Header: credentials(), ToClient: newCollector(), FollowRedirects: true}
	err := streamableRequests[0].do(c)
	var re *RedirectError
	is.True(errors.As(err, &re))
	is.True(re.Downgrade)
	is.Equal(len(plain.requests()), 0)
}

// Redirects that change the method are still not followed: the transport
// reports the status.
func TestRedirectThatChangesTheMethodIsReported(t *testing.T) {
	is := is.New(t)
	rec := newRecorder(t, false)
	from := redirector(t, false, http.StatusFound, func() string { return rec.srv.URL })
	c := &StreamableClient{URL: from.URL + "/mcp", Client: redirectClient(t), FollowRedirects: true, ToClient: newCollector()}
	err := streamableRequests[0].do(c)
	var st *frame.StatusError
	is.True(errors.As(err, &st))
	is.Equal(st.Code, http.StatusFound)
	is.Equal(len(rec.requests()), 0)
}

// The HTTP+SSE client: its GET redirected away, or an endpoint event on
// another origin, fails the start with the *RedirectError; under
// FollowRedirects the POSTs go to an endpoint elsewhere without
// credentials; an endpoint on plain http after https is never used.
func TestSSERedirects(t *testing.T) {
	client := redirectClient(t)
	run := func(t *testing.T, c *SSEClient) error {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		select {
		case err := <-done:
			return err
		case <-c.Ready():
		}
		err := c.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		cancel()
		<-done
		return err
	}
	// endpointServer's stream names endpoint as its endpoint.
	endpointServer := func(t *testing.T, tlsServer bool, endpoint func() string) *httptest.Server {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			flushWrite(w, "event: endpoint\ndata: "+endpoint()+"\n\n")
			<-r.Context().Done()
		})
		srv := httptest.NewUnstartedServer(h)
		if tlsServer {
			srv.StartTLS()
		} else {
			srv.Start()
		}
		t.Cleanup(func() {
			srv.CloseClientConnections()
			srv.Close()
		})
		return srv
	}

	t.Run("GET redirected away", func(t *testing.T) {
		is := is.New(t)
		rec := newRecorder(t, false)
		from := redirector(t, false, http.StatusTemporaryRedirect, func() string { return rec.srv.URL })
		err := run(t, &SSEClient{URL: from.URL + "/sse", Client: client, Header: credentials()})
		var start *StartError
		var re *RedirectError
		is.True(errors.As(err, &start))
		is.True(errors.As(err, &re))
		is.Equal(re.To, rec.srv.URL+"/sse")
		is.Equal(len(rec.requests()), 0)
	})
	t.Run("endpoint on another origin", func(t *testing.T) {
		is := is.New(t)
		rec := newRecorder(t, false)
		srv := endpointServer(t, false, func() string { return rec.srv.URL + "/message" })
		err := run(t, &SSEClient{URL: srv.URL + "/sse", Client: client, Header: credentials()})
		var re *RedirectError
		is.True(errors.As(err, &re))
		is.Equal(re.Status, 0)
		is.True(strings.Contains(err.Error(), "endpoint"))
		is.Equal(len(rec.requests()), 0)
	})
	t.Run("endpoint on another origin, followed", func(t *testing.T) {
		is := is.New(t)
		rec := newRecorder(t, false)
		srv := endpointServer(t, false, func() string { return rec.srv.URL + "/message" })
		is.NoErr(run(t, &SSEClient{URL: srv.URL + "/sse", Client: client, Header: credentials(), FollowRedirects: true}))
		got := rec.requests()
		is.Equal(len(got), 1)
		is.Equal(got[0].Path, "/message")
		is.Equal(got[0].Header.Get("Authorization"), "")
		is.Equal(got[0].Header.Get("X-Api-Key"), "")
		is.Equal(got[0].Header.Get("Cookie"), "")
	})
	t.Run("endpoint on plain http after https", func(t *testing.T) {
		is := is.New(t)
		plain := newRecorder(t, false)
		srv := endpointServer(t, true, func() string { return plain.srv.URL + "/message" })
		err := run(t, &SSEClient{URL: srv.URL + "/sse", Client: client, Header: credentials(), FollowRedirects: true})
		var re *RedirectError
		is.True(errors.As(err, &re))
		is.True(re.Downgrade)
		is.Equal(len(plain.requests()), 0)
	})
	t.Run("POST redirected away", func(t *testing.T) {
		is := is.New(t)
		rec := newRecorder(t, false)
		away := redirector(t, false, http.StatusTemporaryRedirect, func() string { return rec.srv.URL })
		var srv *httptest.Server
		srv = endpointServer(t, false, func() string { return srv.URL + "/message" })
		// The stream's own server redirects its POSTs.
		srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				away.Config.Handler.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			flushWrite(w, "event: endpoint\ndata: /message\n\n")
			<-r.Context().Done()
		})
		err := run(t, &SSEClient{URL: srv.URL + "/sse", Client: client, Header: credentials()})
		var re *RedirectError
		is.True(errors.As(err, &re))
		is.Equal(re.To, rec.srv.URL+"/message")
		is.Equal(len(rec.requests()), 0)
	})
}
