package httpguard

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"
)

func TestOriginPolicy(t *testing.T) {
	p := OriginPolicy{
		Allow:     []string{"chrome-extension://abcdefghijklmnop", "https://app.example.com/"},
		PublicURL: "https://mcp.example.org:443/base/mcp",
	}
	for _, tt := range []struct {
		origin string
		want   bool
	}{
		{"", true},
		{"http://localhost", true},
		{"http://localhost:8080", true},
		{"https://LOCALHOST:3000", true},
		{"http://localhost.:8080", true},
		{"http://app.localhost:5173", true},
		{"http://a.b.localhost", true},
		{"http://127.0.0.1", true},
		{"http://127.0.0.1:65535", true},
		{"http://127.1.2.3:9", true},
		{"http://[::1]", true},
		{"http://[::1]:8080", true},
		{"http://[0:0:0:0:0:0:0:1]:8080", true},
		{"https://mcp.example.org", true},
		{"https://mcp.example.org:443", true},
		{"https://MCP.example.org", true},
		{"chrome-extension://abcdefghijklmnop", true},
		{"https://app.example.com", true},

		{"null", false},
		{"http://evil.example.com", false},
		{"http://localhost.evil.com", false},
		{"http://evillocalhost", false},
		{"http://.localhost", false},
		{"ftp://localhost", false},
		{"file://localhost", false},
		{"http://128.0.0.1", false},
		{"http://[::2]", false},
		{"http://[::ffff:127.0.0.1]", false},
		{"http://[fe80::1%25lo]", false},
		{"http://localhost:99999", false},
		{"http://localhost:", false},
		{"http://localhost:-1", false},
		{"http://localhost/path", false},
		{"http://user@localhost", false},
		{"http://127.0.0.1@evil.com", false},
		{"http://0177.0.0.1", false},
		{"http://localhost evil", false},
		{"localhost", false},
		{"http://", false},
		{"https://mcp.example.org:8443", false},
		{"http://mcp.example.org", false},
		{"chrome-extension://other", false},
		{"https://app.example.com.evil", false},
	} {
		t.Run(tt.origin, func(t *testing.T) {
			is := is.New(t)
			is.Equal(p.Allowed(tt.origin), tt.want)
		})
	}
}

func TestOriginPolicyZeroAllowsOnlyLoopback(t *testing.T) {
	is := is.New(t)
	var p OriginPolicy
	is.True(p.Allowed(""))
	is.True(p.Allowed("http://localhost:1"))
	is.True(!p.Allowed("https://example.com"))
	is.True(!p.Allowed("null"))
}

func TestHostPolicy(t *testing.T) {
	p := HostPolicy{Allow: []string{"my-laptop.lan", "Tunnel.Example.NET."}, PublicURL: "https://mcp.example.org/mcp"}
	for _, tt := range []struct {
		host string
		want bool
	}{
		{"localhost", true},
		{"localhost:8080", true},
		{"LOCALHOST:8080", true},
		{"localhost.:8080", true},
		{"127.0.0.1", true},
		{"127.0.0.1:8080", true},
		{"[::1]", true},
		{"[::1]:8080", true},
		{"[0::1]:80", true},
		{"my-laptop.lan:8080", true},
		{"tunnel.example.net", true},
		{"mcp.example.org", true},
		{"mcp.example.org:443", true},

		{"", false},
		{"evil.example.com", false},
		{"evil.example.com:8080", false},
		{"127.0.0.2", false}, // only the names and addresses a local client uses
		{"app.localhost", false},
		{"::1", false},
		{"[::1", false},
		{"[::1]x", false},
		{"[::2]:80", false},
		{"localhost:http", false},
		{"localhost:70000", false},
		{"local host", false},
		{"localhost/x", false},
		{"user@localhost", false},
	} {
		t.Run(tt.host, func(t *testing.T) {
			is := is.New(t)
			is.Equal(p.Allowed(tt.host), tt.want)
		})
	}
}

// countingBody counts the bytes read from a request body.
type countingBody struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c countingBody) Close() error { return nil }

func TestGuardsRefuseBeforeReadingTheBody(t *testing.T) {
	is := is.New(t)
	var read atomic.Int64
	var reached atomic.Bool
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Store(true)
		io.Copy(io.Discard, r.Body)
	})
	h := Guards(CheckOrigin(OriginPolicy{}), CheckHost(HostPolicy{}))(inner)
	serve := func(host, origin string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "http://"+host+"/mcp", nil)
		r.Body = countingBody{r: strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`), n: &read}
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}

	w := serve("localhost:8080", "http://evil.example.com")
	is.Equal(w.Code, http.StatusForbidden)
	is.Equal(w.Header().Get("Connection"), "close")
	w = serve("evil.example.com", "")
	is.Equal(w.Code, http.StatusForbidden)
	w = serve("localhost:8080", "null")
	is.Equal(w.Code, http.StatusForbidden)
	is.Equal(read.Load(), int64(0)) // nothing read
	is.True(!reached.Load())

	w = serve("127.0.0.1:8080", "http://127.0.0.1:8080")
	is.Equal(w.Code, http.StatusOK)
	is.True(reached.Load())
	is.True(read.Load() > 0)
}

func TestCheckOriginRefusesSeveralOrigins(t *testing.T) {
	is := is.New(t)
	h := CheckOrigin(OriginPolicy{})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	r := httptest.NewRequest("POST", "http://localhost/mcp", nil)
	r.Header.Add("Origin", "http://localhost")
	r.Header.Add("Origin", "http://evil.example.com")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	is.Equal(w.Code, http.StatusForbidden)
}

func TestLimitBody(t *testing.T) {
	is := is.New(t)
	h := LimitBody(10)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			w.WriteHeader(http.StatusRequestEntityTooLarge) // what the transport answers
			return
		}
		w.Write(b)
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := srv.Client()
	defer client.CloseIdleConnections()

	resp, err := client.Post(srv.URL, "application/json", strings.NewReader(`0123456789`))
	is.NoErr(err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusOK)
	is.Equal(string(b), "0123456789")

	// Announced too long: refused before reading.
	resp, err = client.Post(srv.URL, "application/json", strings.NewReader(`0123456789A`))
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusRequestEntityTooLarge)

	// Chunked, found too long while reading.
	resp, err = client.Post(srv.URL, "application/json", io.MultiReader(strings.NewReader("0123456789"), strings.NewReader("ABCDEF")))
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusRequestEntityTooLarge)
}

// FuzzOriginHost feeds arbitrary Origin and Host values to the policies:
// nothing may panic, and whatever passes must be well-formed.
func FuzzOriginHost(f *testing.F) {
	for _, s := range []string{
		"", "null", "http://localhost:8080", "https://[::1]:443", "http://127.0.0.1",
		"http://a.localhost", "chrome-extension://abc", "http://[::1", "http://[::1]]",
		"http://localhost:99999", "localhost", "[::1]:80", "127.0.0.1:80", "http://%5B::1%5D",
		"http://[fe80::1%25eth0]", "\x00", "http://localhost\r\n", "ht tp://localhost",
	} {
		f.Add(s)
	}
	op := OriginPolicy{Allow: []string{"chrome-extension://abc"}, PublicURL: "https://example.org/mcp"}
	hp := HostPolicy{Allow: []string{"example.net"}, PublicURL: "https://example.org/mcp"}
	f.Fuzz(func(t *testing.T, s string) {
		if op.Allowed(s) && s != "" && !strings.EqualFold(s, "chrome-extension://abc") {
			_, rest, found := strings.Cut(s, "://")
			if _, _, _, ok := parseOrigin(s); !ok || !found || strings.ContainsAny(rest, " \t\r\n/@?#\\%") {
				t.Fatalf("allowed a malformed origin %q", s)
			}
		}
		if hp.Allowed(s) {
			host, _, ok := splitHostPort(s)
			if !ok || strings.ContainsAny(host, " \t\r\n/@?#\\%") {
				t.Fatalf("allowed a malformed host %q", s)
			}
		}
	})
}

func TestCORS(t *testing.T) {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Mcp-Session-Id", "s")
		w.WriteHeader(http.StatusTeapot)
	})
	h := Guards(CheckOrigin(OriginPolicy{}), CORS)(inner)
	serve := func(method string, hdr ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/mcp", nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Add(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}

	t.Run("preflight from an allowed origin", func(t *testing.T) {
		is := is.New(t)
		w := serve(http.MethodOptions, "Origin", "http://localhost:6274",
			"Access-Control-Request-Method", "POST",
			"Access-Control-Request-Headers", "authorization, content-type, mcp-protocol-version, mcp-session-id")
		is.Equal(w.Code, http.StatusNoContent) // answered here: the inner handler is not reached
		is.Equal(w.Header().Get("Access-Control-Allow-Origin"), "http://localhost:6274")
		is.Equal(w.Header().Get("Access-Control-Allow-Methods"), "GET, POST, DELETE")
		is.Equal(w.Header().Get("Access-Control-Allow-Headers"), "authorization, content-type, mcp-protocol-version, mcp-session-id")
		is.Equal(w.Header().Get("Access-Control-Max-Age"), "600")
		is.Equal(w.Header().Get("Access-Control-Allow-Credentials"), "")
	})
	t.Run("request from an allowed origin", func(t *testing.T) {
		is := is.New(t)
		w := serve(http.MethodPost, "Origin", "http://127.0.0.1:3000")
		is.Equal(w.Code, http.StatusTeapot)
		is.Equal(w.Header().Get("Access-Control-Allow-Origin"), "http://127.0.0.1:3000")
		is.Equal(w.Header().Get("Access-Control-Expose-Headers"), "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate")
		is.Equal(w.Header().Values("Vary"), []string{"Origin"})
	})
	t.Run("no origin", func(t *testing.T) {
		is := is.New(t)
		w := serve(http.MethodPost)
		is.Equal(w.Code, http.StatusTeapot)
		is.Equal(w.Header().Get("Access-Control-Allow-Origin"), "")
	})
	t.Run("OPTIONS that is not a preflight", func(t *testing.T) {
		is := is.New(t)
		w := serve(http.MethodOptions, "Origin", "http://localhost")
		is.Equal(w.Code, http.StatusTeapot) // passed on
	})
	t.Run("preflight from a refused origin", func(t *testing.T) {
		is := is.New(t)
		w := serve(http.MethodOptions, "Origin", "https://evil.example", "Access-Control-Request-Method", "POST")
		is.Equal(w.Code, http.StatusForbidden)
		is.Equal(w.Header().Get("Access-Control-Allow-Origin"), "")
	})
}
