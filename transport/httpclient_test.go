package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestDialerKeepAlive(t *testing.T) {
	t.Run("on", func(t *testing.T) {
		is := is.New(t)
		d := newDialer(HTTPOptions{KeepAlive: true})
		is.Equal(d.KeepAliveConfig, net.KeepAliveConfig{Enable: true, Idle: 60 * time.Second, Interval: 15 * time.Second, Count: 4})
		is.Equal(d.Timeout, 10*time.Second) // default connect timeout
	})
	t.Run("off", func(t *testing.T) {
		is := is.New(t)
		d := newDialer(HTTPOptions{KeepAlive: false, ConnectTimeout: 3 * time.Second})
		is.Equal(d.KeepAlive, time.Duration(-1))
		is.True(!d.KeepAliveConfig.Enable)
		is.Equal(d.Timeout, 3*time.Second)
	})
}

func TestNewHTTPClientSettings(t *testing.T) {
	is := is.New(t)
	c := NewHTTPClient(HTTPOptions{ReadTimeout: 7 * time.Second, ConnectTimeout: 2 * time.Second})
	is.Equal(c.Timeout, time.Duration(0)) // streams are long-lived
	tr := c.Transport.(*http.Transport)
	is.Equal(tr.ResponseHeaderTimeout, 7*time.Second)
	is.Equal(tr.TLSHandshakeTimeout, 2*time.Second)
	is.True(tr.ForceAttemptHTTP2)
	is.True(tr.Proxy == nil) // no Getenv, no proxy

	d := NewHTTPClient(HTTPOptions{}).Transport.(*http.Transport)
	is.Equal(d.ResponseHeaderTimeout, 120*time.Second)
	is.Equal(d.TLSHandshakeTimeout, 10*time.Second)
}

func TestHTTP2OverTLS(t *testing.T) {
	is := is.New(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	c := NewHTTPClient(HTTPOptions{TLSClientConfig: srv.Client().Transport.(*http.Transport).TLSClientConfig})
	defer c.CloseIdleConnections()
	resp, err := c.Get(srv.URL)
	is.NoErr(err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	is.Equal(string(b), "HTTP/2.0")
}

// env returns a Getenv over a fixed map.
func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

// withUpstream makes c dial addr for the made-up host upstream.test, so the
// proxy rules (which never apply to loopback targets) can be exercised
// against a loopback server.
func withUpstream(c *http.Client, addr string) {
	tr := c.Transport.(*http.Transport)
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, a string) (net.Conn, error) {
		if a == "upstream.test:80" {
			a = addr
		}
		return dial(ctx, network, a)
	}
}

func TestProxyBypassedByNoProxy(t *testing.T) {
	upstream, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "direct")
	}))
	dead := "http://" + deadAddr(t)
	for _, e := range []map[string]string{
		{"HTTP_PROXY": dead, "HTTPS_PROXY": dead, "NO_PROXY": "upstream.test"},
		{"http_proxy": dead, "no_proxy": ".test"},
		{"HTTP_PROXY": dead, "NO_PROXY": "*"},
	} {
		t.Run(strings.Join(keys(e), ","), func(t *testing.T) {
			is := is.New(t)
			c := NewHTTPClient(HTTPOptions{Getenv: env(e)})
			defer c.CloseIdleConnections()
			withUpstream(c, upstream.Listener.Addr().String())
			resp, err := c.Get("http://upstream.test/mcp")
			is.NoErr(err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			is.Equal(string(b), "direct")
		})
	}
	t.Run("not excluded", func(t *testing.T) {
		is := is.New(t)
		c := NewHTTPClient(HTTPOptions{Getenv: env(map[string]string{"HTTP_PROXY": dead, "NO_PROXY": "other.test"})})
		defer c.CloseIdleConnections()
		withUpstream(c, upstream.Listener.Addr().String())
		_, err := c.Get("http://upstream.test/mcp")
		is.True(err != nil) // the dead proxy was used
	})
}

func keys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func TestProxyUsed(t *testing.T) {
	is := is.New(t)
	seen := make(chan string, 1)
	proxy, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Method + " " + r.RequestURI
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	c := NewHTTPClient(HTTPOptions{Getenv: env(map[string]string{"http_proxy": proxy.URL})})
	defer c.CloseIdleConnections()
	sink := newCollector()
	sc := &StreamableClient{URL: "http://upstream.test/mcp", Client: c, ToClient: sink}
	err := sc.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	is.NoErr(err)
	is.Equal(<-seen, "POST http://upstream.test/mcp") // the proxy got the absolute URI
	is.Equal(sink.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":{}}`})
}

func TestRedirects(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/temp", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/found", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/mcp", http.StatusFound)
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.Copy(w, r.Body) // echo
	})
	srv, client := newServer(t, mux)
	msg := frame.MustParse(`{"jsonrpc":"2.0","id":1,"result":{}}`)

	t.Run("307 keeps the POST", func(t *testing.T) {
		is := is.New(t)
		sink := newCollector()
		c := &StreamableClient{URL: srv.URL + "/temp", Client: client, ToClient: sink}
		is.NoErr(c.Handle(context.Background(), msg))
		is.Equal(sink.lines(), []string{msg.String()})
	})
	t.Run("302 is not followed", func(t *testing.T) {
		is := is.New(t)
		c := &StreamableClient{URL: srv.URL + "/found", Client: client, ToClient: newCollector()}
		err := c.Handle(context.Background(), msg)
		var st *frame.StatusError
		is.True(errors.As(err, &st))
		is.Equal(st.Code, http.StatusFound)
		is.Equal(st.Header.Get("Location"), "/mcp")
	})
}

func TestReadBody(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 1000)
	tests := []struct {
		name    string
		size    int
		hint    int64
		max     int
		tooBig  bool
		wantLen int
	}{
		{"known", 1000, 1000, 2000, false, 1000},
		{"unknown", 1000, -1, 2000, false, 1000},
		{"exactly max known", 1000, 1000, 1000, false, 1000},
		{"exactly max unknown", 1000, -1, 1000, false, 1000},
		{"over max known", 1000, 1000, 999, true, 0},
		{"over max unknown", 1000, -1, 999, true, 0},
		{"empty", 0, 0, 10, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			b, err := readBody(iotestOneByteHalf(bytes.NewReader(data[:tt.size])), tt.hint, tt.max)
			if tt.tooBig {
				is.True(errors.Is(err, frame.ErrTooLarge))
				return
			}
			is.NoErr(err)
			is.Equal(len(b), tt.wantLen)
		})
	}
}

// iotestOneByteHalf returns a reader that returns short reads.
func iotestOneByteHalf(r io.Reader) io.Reader { return &shortReader{r} }

type shortReader struct{ r io.Reader }

func (s *shortReader) Read(p []byte) (int, error) {
	if len(p) > 7 {
		p = p[:7]
	}
	return s.r.Read(p)
}

func TestBeforeSending(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"dns", &net.DNSError{Err: "no such host", Name: "x.invalid"}, true},
		{"dial", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{"proxyconnect", &net.OpError{Op: "proxyconnect", Err: &net.OpError{Op: "dial"}}, true},
		{"read", &net.OpError{Op: "read", Err: errors.New("connection reset")}, false},
		{"tls record", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, true},
		{"eof", io.EOF, false},
		{"unexpected eof", io.ErrUnexpectedEOF, false},
		{"other", errors.New("boom"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			is.Equal(beforeSending(tt.err), tt.want)
		})
	}
}

func TestTLSHandshakeFailureIsNotSent(t *testing.T) {
	is := is.New(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the request must not arrive")
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the expected handshake error
	srv.StartTLS()
	defer srv.Close()
	c := &StreamableClient{URL: srv.URL, Client: NewHTTPClient(HTTPOptions{})} // does not trust the test CA
	defer c.Client.CloseIdleConnections()
	err := c.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	var se *frame.SendError
	is.True(errors.As(err, &se))
	is.True(!se.Sent) // the handshake failed before the request was written
}

// FuzzResponseID checks that finding responses inside a batch agrees with
// how frame classifies the same element as a message of its own.
func FuzzResponseID(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"id":"a","error":{}}`, `{"id":null,"error":{}}`,
		`{"id":1,"method":"x","result":1}`, `{"id":{},"result":1}`, `{"id":1,"id":2,"result":1}`,
		`{"id":[1],"id":3,"error":1}`, `{"method":1,"id":1,"result":1}`, `[1]`, `{}`, `{"result":1}`,
		`{"jsonrpc":"2.0","id":5,"result":{"x":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := frame.Parse([]byte(s))
		if err != nil || m.Kind() == frame.Batch {
			return
		}
		batch, err := frame.Parse([]byte("[" + m.String() + "]"))
		if err != nil {
			t.Fatalf("wrapping %q: %v", s, err)
		}
		var ids []frame.ID
		eachResponseID(batch, func(id frame.ID) bool { ids = append(ids, id); return true })
		if m.Kind().IsResponse() {
			if len(ids) != 1 || ids[0] != m.ID() {
				t.Fatalf("%q: batch ids %q, message id %q", s, ids, m.ID())
			}
			if !answers(batch, m.ID()) || !answers(m, m.ID()) {
				t.Fatalf("%q does not answer its own id", s)
			}
		} else if len(ids) != 0 {
			t.Fatalf("%q (%v) yields response ids %q", s, m.Kind(), ids)
		}
	})
}
