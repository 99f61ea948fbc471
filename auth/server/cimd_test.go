package server

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
	"go.uber.org/goleak"
)

// cimdTestID is the client_id URL of the tests: example.com is a name the
// httptest server's certificate carries, and the tests' resolver maps it
// to cimdTestAddr, a public address the dial hook connects to the server.
const cimdTestID = "https://example.com/oauth/client.json"

var cimdTestAddr = netip.MustParseAddr("93.184.216.34")

// cimdTestDoc is a valid document for cimdTestID.
const cimdTestDoc = `{"client_id":"https://example.com/oauth/client.json","client_name":"Example App",` +
	`"redirect_uris":["https://app.example.com/callback","http://127.0.0.1/callback"],` +
	`"token_endpoint_auth_method":"none","grant_types":["authorization_code"],"logo_uri":"https://example.com/logo.png"}`

// cimdClock is a clock the test moves by hand.
type cimdClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *cimdClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *cimdClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// cimdResolver answers from a table, and fails for other names.
type cimdResolver map[string][]netip.Addr

func (r cimdResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// cimdServer is a TLS document server whose answer the test changes, and
// which counts the requests it sees.
type cimdServer struct {
	*httptest.Server
	hits atomic.Int32
	mu   sync.Mutex
	h    http.HandlerFunc
}

func (s *cimdServer) answer(h http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h = h
}

// answerDoc makes the server answer 200 with body and Cache-Control cc
// (none if "").
func (s *cimdServer) answerDoc(body, cc string) {
	s.answer(func(w http.ResponseWriter, r *http.Request) {
		if cc != "" {
			w.Header().Set("Cache-Control", cc)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	})
}

func (s *cimdServer) answerStatus(code int) {
	s.answer(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", code) })
}

// newCIMDTest starts a document server and a fetcher allowing cimdTestID,
// on a hand-moved clock, whose dial hook connects the checked public
// address cimdTestAddr to the server and refuses any other.
func newCIMDTest(t *testing.T) (*ClientMetadataFetcher, *cimdServer, *cimdClock) {
	t.Helper()
	s := &cimdServer{}
	s.answerDoc(cimdTestDoc, "")
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		h := s.h
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	clock := &cimdClock{t: time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)}
	f, err := NewClientMetadataFetcher(ClientMetadataConfig{
		AllowURLs: []string{cimdTestID},
		Timeout:   5 * time.Second,
		Now:       clock.Now,
		Resolver:  cimdResolver{"example.com": {cimdTestAddr}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.rootCAs = x509.NewCertPool()
	f.rootCAs.AddCert(s.Certificate())
	want := netip.AddrPortFrom(cimdTestAddr, 443).String()
	f.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr != want {
			return nil, fmt.Errorf("test dial hook: unexpected address %s", addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, s.Listener.Addr().String())
	}
	return f, s, clock
}

func TestCheckPublicAddr(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
		why  string
	}{
		{"93.184.216.34", true, ""},
		{"8.8.8.8", true, ""},
		{"2606:4700:4700::1111", true, ""},
		{"0.0.0.0", false, "unspecified"},
		{"0.1.2.3", false, "unspecified"},
		{"127.0.0.1", false, "loopback"},
		{"127.255.0.9", false, "loopback"},
		{"10.1.2.3", false, "private"},
		{"172.16.0.1", false, "private"},
		{"172.31.255.255", false, "private"},
		{"172.32.0.1", true, ""},
		{"192.168.1.1", false, "private"},
		{"100.64.0.1", false, "carrier-grade"},
		{"100.127.255.254", false, "carrier-grade"},
		{"100.128.0.1", true, ""},
		{"169.254.169.254", false, "link-local"},
		{"224.0.0.1", false, "multicast"},
		{"239.255.255.250", false, "multicast"},
		{"255.255.255.255", false, "broadcast"},
		{"240.0.0.1", false, "reserved"},
		{"192.0.2.1", false, "documentation"},
		{"198.51.100.7", false, "documentation"},
		{"203.0.113.9", false, "documentation"},
		{"198.18.0.1", false, "benchmarking"},
		{"192.0.0.8", false, "protocol"},
		{"::", false, "unspecified"},
		{"::1", false, "loopback"},
		{"fe80::1", false, "link-local"},
		{"fe80::1%eth0", false, "zoned"},
		{"fec0::1", false, "not a global unicast"},
		{"fc00::1", false, "unique local"},
		{"fd12:3456::1", false, "unique local"},
		{"ff02::1", false, "multicast"},
		{"2001:db8::1", false, "documentation"},
		{"3fff::1", false, "documentation"},
		{"100::1", false, "not a global unicast"},
		{"::ffff:127.0.0.1", false, "embeds 127.0.0.1, a loopback"},
		{"::ffff:10.0.0.1", false, "embeds 10.0.0.1, a private"},
		{"::ffff:169.254.169.254", false, "link-local"},
		{"::ffff:8.8.8.8", true, ""},
		{"::127.0.0.1", false, "embeds 127.0.0.1"},
		{"::8.8.8.8", true, ""},
		{"2002:7f00:1::", false, "embeds 127.0.0.1"},
		{"2002:a00:1::1", false, "embeds 10.0.0.1"},
		{"2002:808:808::1", true, ""},
		{"64:ff9b::7f00:1", false, "embeds 127.0.0.1"},
		{"64:ff9b::c0a8:101", false, "embeds 192.168.1.1"},
		{"64:ff9b::808:808", true, ""},
		{"64:ff9b:1::808:808", false, "not a global unicast"},
		// Teredo: server 65.54.227.120, client 127.0.0.1 (obfuscated).
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", false, "embeds 127.0.0.1"},
		// Teredo: server 10.0.0.1.
		{"2001:0:a00:1::1", false, "embeds 10.0.0.1"},
		// Teredo: server and client 8.8.8.8 and 8.8.4.4.
		{"2001:0:808:808::f7f7:fbfb", true, ""},
		{"2001:2::1", false, "protocol assignment"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			is := is.New(t)
			err := checkPublicAddr(netip.MustParseAddr(tc.addr))
			is.Equal(err == nil, tc.ok) // accepted
			if !tc.ok {
				is.True(strings.Contains(err.Error(), tc.why)) // the reason
			}
		})
	}
	is.New(t).True(checkPublicAddr(netip.Addr{}) != nil) // the zero Addr
}

func TestCIMDFetch(t *testing.T) {
	is := is.New(t)
	f, s, _ := newCIMDTest(t)
	md, err := f.Fetch(t.Context(), cimdTestID)
	is.NoErr(err)
	is.Equal(md.ClientID, cimdTestID)
	is.Equal(md.ClientName, "Example App")
	is.Equal(md.RedirectURIs, []string{"https://app.example.com/callback", "http://127.0.0.1/callback"})
	is.True(!md.Stale)
	is.True(f.StillAllowed(cimdTestID))

	md.RedirectURIs[0] = "https://evil.example/cb" // the cache keeps its own copy
	md, err = f.Fetch(t.Context(), cimdTestID)
	is.NoErr(err)
	is.Equal(md.RedirectURIs[0], "https://app.example.com/callback")
	is.Equal(s.hits.Load(), int32(1)) // the second from the cache
}

func TestCIMDOnlyExactAllowlistedURLs(t *testing.T) {
	f, s, _ := newCIMDTest(t)
	for _, u := range []string{
		"https://example.com/oauth/client.json/",
		"https://EXAMPLE.com/oauth/client.json",
		"https://example.com:443/oauth/client.json",
		"https://example.com/oauth/./client.json",
		"https://example.com/oauth/client.json?x=1",
		"https://example.com/oauth/client%2Ejson",
		"http://example.com/oauth/client.json",
		"https://example.com/other.json",
		"",
	} {
		t.Run(u, func(t *testing.T) {
			is := is.New(t)
			_, err := f.Fetch(t.Context(), u)
			is.True(errors.Is(err, ErrClientIDNotAllowed))
			is.True(!f.StillAllowed(u))
		})
	}
	is.New(t).Equal(s.hits.Load(), int32(0)) // nothing fetched
}

// TestCIMDRefusesNonPublicAddresses: a name that resolves to an address
// that is not public is never connected to, and neither is a literal one,
// even with a server listening there.
func TestCIMDRefusesNonPublicAddresses(t *testing.T) {
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("request reached the server: %s", r.URL)
	}))
	defer s.Close()
	port := s.Listener.Addr().(*net.TCPAddr).Port
	literal := fmt.Sprintf("https://127.0.0.1:%d/client.json", port)
	literal6 := fmt.Sprintf("https://[::ffff:127.0.0.1]:%d/client.json", port)
	resolved := map[string][]netip.Addr{
		"loopback.test":   {netip.MustParseAddr("127.0.0.1")},
		"private.test":    {netip.MustParseAddr("10.0.0.7")},
		"linklocal.test":  {netip.MustParseAddr("169.254.169.254")},
		"mapped.test":     {netip.MustParseAddr("::ffff:127.0.0.1")},
		"mixed.test":      {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("192.168.0.1")},
		"cgnat.test":      {netip.MustParseAddr("100.64.0.1")},
		"ula.test":        {netip.MustParseAddr("fd00::1")},
		"loopback6.test":  {netip.MustParseAddr("::1")},
		"sixtofour.test":  {netip.MustParseAddr("2002:7f00:1::")},
		"unspecific.test": {netip.MustParseAddr("0.0.0.0")},
	}
	allow := []string{literal, literal6}
	for host := range resolved {
		allow = append(allow, fmt.Sprintf("https://%s:%d/client.json", host, port))
	}
	f, err := NewClientMetadataFetcher(ClientMetadataConfig{AllowURLs: allow, Resolver: cimdResolver(resolved)})
	if err != nil {
		t.Fatal(err)
	}
	f.rootCAs = x509.NewCertPool()
	f.rootCAs.AddCert(s.Certificate())
	// The real dialer: were an address passed, the request would arrive.
	for _, u := range allow {
		t.Run(u, func(t *testing.T) {
			is := is.New(t)
			_, err := f.Fetch(t.Context(), u)
			is.True(errors.Is(err, ErrClientMetadataUnavailable)) // refused
			is.True(strings.Contains(err.Error(), "must be served from a public address"))
		})
	}
}

func TestCIMDRefusesRedirect(t *testing.T) {
	is := is.New(t)
	f, s, _ := newCIMDTest(t)
	s.answer(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/oauth/client.json" {
			t.Errorf("redirect followed to %s", r.URL)
		}
		http.Redirect(w, r, "/elsewhere.json", http.StatusFound)
	})
	_, err := f.Fetch(t.Context(), cimdTestID)
	is.True(errors.Is(err, ErrClientMetadataUnavailable))
	is.True(strings.Contains(err.Error(), "redirect"))
	is.Equal(s.hits.Load(), int32(1))
}

func TestCIMDOnly200(t *testing.T) {
	for _, code := range []int{201, 204, 304, 401, 403, 500, 503} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			is := is.New(t)
			f, s, _ := newCIMDTest(t)
			s.answer(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(code)
				if code != 204 && code != 304 {
					fmt.Fprint(w, cimdTestDoc)
				}
			})
			_, err := f.Fetch(t.Context(), cimdTestID)
			is.True(errors.Is(err, ErrClientMetadataUnavailable))
		})
	}
}

func TestCIMDRefusesOversizedBody(t *testing.T) {
	pad := strings.Repeat(" ", MaxClientMetadataSize)
	big := strings.Replace(cimdTestDoc, "{", "{"+pad, 1)
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
	}{
		{"declared", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			fmt.Fprint(w, big)
		}},
		{"chunked", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, big[:100])
			w.(http.Flusher).Flush() // no Content-Length: chunked
			fmt.Fprint(w, big[100:])
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f, s, _ := newCIMDTest(t)
			s.answer(tc.h)
			_, err := f.Fetch(t.Context(), cimdTestID)
			is.True(errors.Is(err, ErrClientMetadataUnavailable))
			is.True(strings.Contains(err.Error(), "5120"))
		})
	}
	// Exactly the cap passes.
	is := is.New(t)
	f, s, _ := newCIMDTest(t)
	s.answerDoc(strings.Replace(cimdTestDoc, "{", "{"+pad[:MaxClientMetadataSize-len(cimdTestDoc)], 1), "")
	_, err := f.Fetch(t.Context(), cimdTestID)
	is.NoErr(err)
}

func TestCIMDRefusesTruncatedBody(t *testing.T) {
	for _, tc := range []struct {
		name string
		head string
	}{
		{"content-length", fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(cimdTestDoc)+50)},
		{"chunked", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("%x\r\n", len(cimdTestDoc)+50)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f, s, _ := newCIMDTest(t)
			s.answer(func(w http.ResponseWriter, r *http.Request) {
				conn, buf, err := w.(http.Hijacker).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				defer conn.Close()
				buf.WriteString(tc.head + cimdTestDoc) // the whole document, but less than announced
				buf.Flush()
			})
			_, err := f.Fetch(t.Context(), cimdTestID)
			is.True(errors.Is(err, ErrClientMetadataUnavailable))
			is.True(strings.Contains(err.Error(), "unexpected EOF"))
		})
	}
}

// TestCIMDDeadline: one deadline holds whatever the server does: answer
// nothing, or keep a body going a byte at a time.
func TestCIMDDeadline(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    func(stop <-chan struct{}) http.HandlerFunc
	}{
		{"silent", func(stop <-chan struct{}) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-stop:
				case <-r.Context().Done():
				}
			}
		}},
		{"trickle", func(stop <-chan struct{}) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", "4000")
				w.WriteHeader(200)
				tick := time.NewTicker(5 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-r.Context().Done():
						return
					case <-tick.C:
						if _, err := w.Write([]byte(" ")); err != nil {
							return
						}
						w.(http.Flusher).Flush()
					}
				}
			}
		}},
		{"slow-header", func(stop <-chan struct{}) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				conn, buf, err := w.(http.Hijacker).Hijack()
				if err != nil {
					return
				}
				defer conn.Close()
				tick := time.NewTicker(5 * time.Millisecond)
				defer tick.Stop()
				buf.WriteString("HTTP/1.1 200 OK\r\n")
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
						if _, err := buf.WriteString("X-Slow: 1\r\n"); err != nil {
							return
						}
						if buf.Flush() != nil {
							return
						}
					}
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f, s, _ := newCIMDTest(t)
			stop := make(chan struct{})
			defer close(stop) // before the server's Close, which waits for handlers
			s.answer(tc.h(stop))
			f.timeout = 300 * time.Millisecond
			start := time.Now()
			_, err := f.Fetch(t.Context(), cimdTestID)
			took := time.Since(start)
			is.True(errors.Is(err, ErrClientMetadataUnavailable))
			is.True(strings.Contains(err.Error(), "no complete answer within 300ms"))
			is.True(took < 5*time.Second) // the deadline held, with slack for a loaded machine
		})
	}
}

func TestCIMDStaleCopyAfterTransportFailure(t *testing.T) {
	is := is.New(t)
	f, s, clock := newCIMDTest(t)
	s.answerDoc(cimdTestDoc, "max-age=60")
	_, err := f.Fetch(t.Context(), cimdTestID)
	is.NoErr(err)

	clock.Advance(59 * time.Second)
	s.answerStatus(500)
	_, err = f.Fetch(t.Context(), cimdTestID)
	is.NoErr(err)
	is.Equal(s.hits.Load(), int32(1)) // still fresh

	clock.Advance(2 * time.Second)
	md, err := f.Fetch(t.Context(), cimdTestID)
	is.NoErr(err)     // the last validated copy stands in
	is.True(md.Stale) // and says so
	is.Equal(md.RedirectURIs[0], "https://app.example.com/callback")
	is.Equal(s.hits.Load(), int32(2))

	// A server that cannot be reached at all is a transport failure too.
	clock.Advance(ClientMetadataRetryAfter)
	s.answer(func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) })
	md, err = f.Fetch(t.Context(), cimdTestID)
	is.NoErr(err)
	is.True(md.Stale)
	is.Equal(s.hits.Load(), int32(3))

	// Up to 24 hours after the copy was validated, no longer.
	clock.Advance(ClientMetadataStaleFor - 61*time.Second - ClientMetadataRetryAfter - time.Second)
	md, err = f.Fetch(t.Context(), cimdTestID)
	is.NoErr(err)
	is.True(md.Stale)
	is.Equal(s.hits.Load(), int32(4))
	clock.Advance(time.Second) // within that failure's 30 s, but 24 h after validation
	_, err = f.Fetch(t.Context(), cimdTestID)
	is.True(errors.Is(err, ErrClientMetadataUnavailable))
	is.Equal(s.hits.Load(), int32(4))

	// A good answer again.
	clock.Advance(ClientMetadataRetryAfter)
	s.answerDoc(cimdTestDoc, "")
	md, err = f.Fetch(t.Context(), cimdTestID)
	is.NoErr(err)
	is.True(!md.Stale)
}

func TestCIMDNoStaleCopyAfterValidationFailure(t *testing.T) {
	is := is.New(t)
	f, s, clock := newCIMDTest(t)
	s.answerDoc(cimdTestDoc, "max-age=60")
	_, err := f.Fetch(t.Context(), cimdTestID)
	is.NoErr(err)

	clock.Advance(61 * time.Second)
	s.answerDoc(strings.Replace(cimdTestDoc, `"none"`, `"client_secret_basic"`, 1), "")
	_, err = f.Fetch(t.Context(), cimdTestID)
	is.True(errors.Is(err, ErrClientMetadataInvalid)) // no fallback
	is.True(strings.Contains(err.Error(), "token_endpoint_auth_method"))

	// Nor later, after a transport failure: the copy is gone.
	clock.Advance(ClientMetadataRetryAfter)
	s.answerStatus(503)
	_, err = f.Fetch(t.Context(), cimdTestID)
	is.True(errors.Is(err, ErrClientMetadataUnavailable))
	is.Equal(s.hits.Load(), int32(3))
}

func TestCIMDNegativeCache(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(s *cimdServer)
		want   error
	}{
		{"transport", func(s *cimdServer) { s.answerStatus(502) }, ErrClientMetadataUnavailable},
		{"invalid", func(s *cimdServer) { s.answerDoc(`{"client_id":"https://example.com/oauth/client.json"}`, "") }, ErrClientMetadataInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f, s, clock := newCIMDTest(t)
			tc.answer(s)
			_, err := f.Fetch(t.Context(), cimdTestID)
			is.True(errors.Is(err, tc.want))
			s.answerDoc(cimdTestDoc, "")
			clock.Advance(ClientMetadataRetryAfter - time.Millisecond)
			_, err2 := f.Fetch(t.Context(), cimdTestID)
			is.Equal(err2, err)               // the same outcome
			is.Equal(s.hits.Load(), int32(1)) // without a fetch
			clock.Advance(time.Millisecond)
			_, err = f.Fetch(t.Context(), cimdTestID)
			is.NoErr(err)
			is.Equal(s.hits.Load(), int32(2))
		})
	}
}

func TestCIMDWithdrawal(t *testing.T) {
	for _, code := range []int{http.StatusNotFound, http.StatusGone} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			is := is.New(t)
			f, s, clock := newCIMDTest(t)
			_, err := f.Fetch(t.Context(), cimdTestID)
			is.NoErr(err)

			clock.Advance(DefaultClientMetadataFresh)
			s.answerStatus(code)
			_, err = f.Fetch(t.Context(), cimdTestID)
			is.True(errors.Is(err, ErrClientWithdrawn))
			is.True(!f.StillAllowed(cimdTestID)) // its grants end

			// The copy is dropped: a transport failure has nothing to fall back on.
			clock.Advance(ClientMetadataRetryAfter)
			s.answerStatus(500)
			_, err = f.Fetch(t.Context(), cimdTestID)
			is.True(errors.Is(err, ErrClientMetadataUnavailable))
			is.True(!f.StillAllowed(cimdTestID)) // still withdrawn

			clock.Advance(ClientMetadataRetryAfter)
			s.answerDoc(cimdTestDoc, "")
			_, err = f.Fetch(t.Context(), cimdTestID)
			is.NoErr(err)
			is.True(f.StillAllowed(cimdTestID)) // back
		})
	}
}

// TestCIMDOneFetchInFlight: callers that arrive while a fetch is in flight
// wait for it and take its outcome, a failure included.
func TestCIMDOneFetchInFlight(t *testing.T) {
	const callers = 8
	is := is.New(t)
	f, s, _ := newCIMDTest(t)
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	s.answer(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	joined := make(chan struct{}, callers)
	f.onWait = func() { joined <- struct{}{} }

	errs := make(chan error, callers)
	fetch := func() {
		_, err := f.Fetch(t.Context(), cimdTestID)
		errs <- err
	}
	go fetch()
	<-arrived
	for range callers - 1 {
		go fetch()
	}
	for range callers - 1 {
		<-joined
	}
	close(release)
	var first error
	for range callers {
		err := <-errs
		is.True(errors.Is(err, ErrClientMetadataUnavailable))
		if first == nil {
			first = err
		}
		is.Equal(err.Error(), first.Error()) // one outcome for all
	}
	is.Equal(s.hits.Load(), int32(1)) // one request
}

// TestCIMDCallerGivesUp: a caller whose context ends stops waiting, and the
// fetch goes on to fill the cache.
func TestCIMDCallerGivesUp(t *testing.T) {
	is := is.New(t)
	f, s, _ := newCIMDTest(t)
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	s.answer(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		fmt.Fprint(w, cimdTestDoc)
	})
	ctx, cancel := context.WithCancelCause(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := f.Fetch(ctx, cimdTestID)
		errc <- err
	}()
	<-arrived
	gone := errors.New("the user left")
	cancel(gone)
	is.Equal(<-errc, gone)

	joined := make(chan struct{}, 1)
	f.mu.Lock()
	f.onWait = func() { joined <- struct{}{} }
	f.mu.Unlock()
	go func() {
		_, err := f.Fetch(t.Context(), cimdTestID)
		errc <- err
	}()
	<-joined // the same fetch, still in flight
	close(release)
	is.NoErr(<-errc)
	is.Equal(s.hits.Load(), int32(1))
}

func TestParseClientMetadata(t *testing.T) {
	const id = cimdTestID
	doc := func(fields string) string { return `{"client_id":"` + id + `",` + fields + `}` }
	for _, tc := range []struct {
		name, body, err string
	}{
		{"valid", cimdTestDoc, ""},
		{"minimal", doc(`"redirect_uris":["https://a.example/cb"]`), ""},
		{"no method is public", doc(`"redirect_uris":["https://a.example/cb"],"client_name":"A"`), ""},
		{"unknown fields", doc(`"redirect_uris":["https://a.example/cb"],"jwks":{"keys":[]},"x":[1,{"y":null}]`), ""},
		{"http localhost", doc(`"redirect_uris":["http://localhost:8123/cb"]`), ""},
		{"http ipv6 loopback", doc(`"redirect_uris":["http://[::1]:8123/cb"]`), ""},
		{"not json", `<html>`, "not a JSON"},
		{"array", `[]`, "not a JSON"},
		{"trailing", cimdTestDoc + `{}`, "not a JSON"},
		{"empty", ``, "not a JSON"},
		{"null", `null`, "no client_id"},
		{"no client_id", `{"redirect_uris":["https://a.example/cb"]}`, "no client_id"},
		{"other client_id", `{"client_id":"https://example.com/oauth/other.json","redirect_uris":["https://a.example/cb"]}`, "is not its URL"},
		{"normalised client_id", `{"client_id":"https://EXAMPLE.com/oauth/client.json","redirect_uris":["https://a.example/cb"]}`, "is not its URL"},
		{"numeric client_id", `{"client_id":1,"redirect_uris":["https://a.example/cb"]}`, "not a JSON"},
		{"no redirect_uris", doc(`"client_name":"A"`), "no redirect_uris"},
		{"empty redirect_uris", doc(`"redirect_uris":[]`), "no redirect_uris"},
		{"redirect_uris string", doc(`"redirect_uris":"https://a.example/cb"`), "not a JSON"},
		{"relative", doc(`"redirect_uris":["/cb"]`), "absolute"},
		{"opaque", doc(`"redirect_uris":["https:a.example/cb"]`), "absolute"},
		{"fragment", doc(`"redirect_uris":["https://a.example/cb#x"]`), "fragment"},
		{"empty fragment", doc(`"redirect_uris":["https://a.example/cb#"]`), "fragment"},
		{"userinfo", doc(`"redirect_uris":["https://u:p@a.example/cb"]`), "user info"},
		{"plain http", doc(`"redirect_uris":["http://a.example/cb"]`), "not https"},
		{"http localhost lookalike", doc(`"redirect_uris":["http://localhost.evil.example/cb"]`), "not https"},
		{"custom scheme", doc(`"redirect_uris":["com.example.app:/cb"]`), "absolute"},
		{"javascript", doc(`"redirect_uris":["javascript://a.example/%0aalert(1)"]`), "not https"},
		{"one bad of two", doc(`"redirect_uris":["https://a.example/cb","http://a.example/cb"]`), "not https"},
		{"confidential", doc(`"redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"private_key_jwt"`), "only public clients"},
		{"secret", doc(`"redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"client_secret_post"`), "only public clients"},
		{"long name", doc(`"redirect_uris":["https://a.example/cb"],"client_name":"` + strings.Repeat("a", 201) + `"`), "client_name is longer"},
		{"control in name", doc(`"redirect_uris":["https://a.example/cb"],"client_name":"A\nB"`), "control"},
		{"long uri", doc(`"redirect_uris":["https://a.example/` + strings.Repeat("a", 2048) + `"]`), "longer than 2048"},
		{"too many uris", doc(`"redirect_uris":[` + strings.Repeat(`"https://a.example/cb",`, 32) + `"https://a.example/cb"]`), "more than 32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			md, err := parseClientMetadata(id, []byte(tc.body))
			if tc.err == "" {
				is.NoErr(err)
				is.Equal(md.ClientID, id)
				is.True(len(md.RedirectURIs) > 0)
				return
			}
			is.True(err != nil) // refused
			is.True(strings.Contains(err.Error(), tc.err))
		})
	}
}

func TestCheckClientIDURL(t *testing.T) {
	for _, tc := range []struct {
		url, err string
	}{
		{"https://app.example.com/oauth/client.json", ""},
		{"https://app.example.com:8443/c", ""},
		{"https://app.example.com/c?v=1", ""},
		{"http://app.example.com/c", "not https"},
		{"HTTPS://app.example.com/c", "not https"},
		{"https://app.example.com", "no path"},
		{"https://app.example.com/", "no path"},
		{"https:///c", "no host"},
		{"https://u@app.example.com/c", "user info"},
		{"https://app.example.com/c#f", "fragment"},
		{"https://app.example.com/a/../c", "dot segment"},
		{"https://app.example.com/./c", "dot segment"},
		{"app.example.com/c", "not https"},
		{"https://app.example.com/%zz", "not a URL"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			is := is.New(t)
			err := CheckClientIDURL(tc.url)
			if tc.err == "" {
				is.NoErr(err)
				return
			}
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), tc.err))
			is.True(strings.Contains(err.Error(), "--allow-client-id-url")) // says which flag
		})
	}
	_, err := NewClientMetadataFetcher(ClientMetadataConfig{AllowURLs: []string{"http://x/c"}})
	is.New(t).True(err != nil) // the constructor checks too
}

func TestCIMDFreshFor(t *testing.T) {
	const def, maxFresh = 5 * time.Minute, time.Hour
	for _, tc := range []struct {
		cc   []string
		want time.Duration
	}{
		{nil, def},
		{[]string{"public"}, def},
		{[]string{"max-age=60"}, time.Minute},
		{[]string{"public, max-age=120"}, 2 * time.Minute},
		{[]string{`max-age="30"`}, 30 * time.Second},
		{[]string{"Max-Age=30"}, 30 * time.Second},
		{[]string{"max-age=0"}, 0},
		{[]string{"max-age=999999999999999999999"}, maxFresh},
		{[]string{"max-age=86400"}, maxFresh},
		{[]string{"max-age=-1"}, 0},
		{[]string{"max-age=x"}, 0},
		{[]string{"no-store"}, 0},
		{[]string{"max-age=600, no-cache"}, 0},
		{[]string{"max-age=600", "max-age=60"}, time.Minute},
	} {
		t.Run(strings.Join(tc.cc, "|"), func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.cc {
				h.Add("Cache-Control", v)
			}
			is.New(t).Equal(cimdFreshFor(h, def, maxFresh), tc.want)
		})
	}
}

func TestCIMDCacheLifetime(t *testing.T) {
	is := is.New(t)
	f, s, clock := newCIMDTest(t)
	s.answerDoc(cimdTestDoc, "max-age=120")
	_, err := f.Fetch(t.Context(), cimdTestID)
	is.NoErr(err)
	clock.Advance(119 * time.Second)
	_, err = f.Fetch(t.Context(), cimdTestID)
	is.NoErr(err)
	is.Equal(s.hits.Load(), int32(1))
	clock.Advance(time.Second)
	_, err = f.Fetch(t.Context(), cimdTestID)
	is.NoErr(err)
	is.Equal(s.hits.Load(), int32(2))
}

func FuzzParseClientMetadata(f *testing.F) {
	for _, seed := range []string{
		cimdTestDoc,
		`{"client_id":"https://example.com/oauth/client.json","redirect_uris":["http://[::1]:1/cb"]}`,
		`{"client_id":"https://example.com/oauth/client.json","redirect_uris":["https://a#b"],"client_name":"\u0000"}`,
		`{"client_id":"https://example.com/oauth/client.json","redirect_uris":"x","token_endpoint_auth_method":null}`,
		`{"client_id":null}`,
		`[]`, `null`, `{`, ``, `"x"`,
		`{"client_id":"https://example.com/oauth/client.json","redirect_uris":["http://[::1]:1/cb"],"client_id":"https://evil.example/c.json","redirect_uris":["https://evil.example/cb"]}`,
		`{"client_id":"https://example.com/oauth/client.json","redirect_uris":["http://[::1]:1/cb"],"x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		md, err := parseClientMetadata(cimdTestID, body)
		if err != nil {
			return
		}
		if md.ClientID != cimdTestID || len(md.RedirectURIs) == 0 || len(md.RedirectURIs) > cimdMaxRedirectURIs || len(md.ClientName) > cimdMaxClientNameLen {
			t.Fatalf("accepted %q as %+v", body, md)
		}
		for _, r := range md.RedirectURIs {
			if strings.Contains(r, "#") || !(strings.HasPrefix(r, "https://") || strings.HasPrefix(r, "http://")) {
				t.Fatalf("accepted redirect URI %q", r)
			}
		}
	})
}

// TestCIMDNoGoroutineLeft: once the fetches are over and the server is
// closed, nothing the fetcher started is left running: not the fetch, not
// a connection, whether it succeeded, failed or hit the deadline.
func TestCIMDNoGoroutineLeft(t *testing.T) {
	is := is.New(t)
	f, s, clock := newCIMDTest(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f.timeout = 200 * time.Millisecond
	_, err := f.Fetch(t.Context(), cimdTestID)
	is.NoErr(err)
	clock.Advance(ClientMetadataStaleFor) // no stale copy to stand in
	s.answer(func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) })
	_, err = f.Fetch(t.Context(), cimdTestID)
	is.True(errors.Is(err, ErrClientMetadataUnavailable))
	clock.Advance(ClientMetadataStaleFor) // no stale copy to stand in
	stop := make(chan struct{})
	s.answer(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	})
	_, err = f.Fetch(t.Context(), cimdTestID)
	is.True(errors.Is(err, ErrClientMetadataUnavailable))
	close(stop)
	s.Close()
}
