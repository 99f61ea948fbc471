package transport

import (
	"net/url"
	"testing"

	"github.com/matryer/is"
	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http/httpproxy"
)

// The proxy rules agree with golang.org/x/net/http/httpproxy, the rules
// net/http applies to its own environment, on ASCII host names (that
// module converts international names to punycode; URLs here are sent as
// written).
func TestProxyRulesAgreeWithHTTPProxy(t *testing.T) {
	is := is.New(t)
	envs := []struct{ httpProxy, httpsProxy, noProxy string }{
		{"http://proxy.test:3128", "https://sproxy.test", ""},
		{"proxy.test:3128", "", "example.com"},
		{"http://p.test", "http://p.test", ".example.com,10.0.0.0/8"},
		{"http://p.test", "http://p.test", "*.example.com:8443, 192.168.1.7, [::2]:443"},
		{"http://p.test", "http://p.test", "*"},
		{"http://p.test", "http://p.test", " EXAMPLE.com , :80, [,*foo.test,foo.test:80"},
		{"::bogus", "http://p.test", "2001:db8::/32,example.org:443"},
		{"http://p.test", "", "localhost.test,127.0.0.2"},
	}
	targets := []string{
		"http://example.com/mcp", "https://example.com/mcp", "http://a.example.com:8080/",
		"https://a.example.com:8443/", "https://EXAMPLE.COM/", "http://10.1.2.3/", "http://11.1.2.3/",
		"https://192.168.1.7/", "https://192.168.1.7:8443/", "https://[::2]/", "https://[::2]:8443/",
		"http://localhost/", "http://LOCALHOST:8080/", "http://127.0.0.9/", "http://[::1]:9/",
		"https://[2001:db8::5]/", "http://foo.test/", "http://barfoo.test/", "http://x.foo.test:80/",
		"https://example.org/", "http://example.org:443/", "ftp://example.net/", "http://localhost.test/",
	}
	for _, e := range envs {
		ours := newProxyRules(e.httpProxy, e.httpsProxy, e.noProxy)
		ref := (&httpproxy.Config{HTTPProxy: e.httpProxy, HTTPSProxy: e.httpsProxy, NoProxy: e.noProxy}).ProxyFunc()
		for _, target := range targets {
			u, err := url.Parse(target)
			is.NoErr(err)
			want, _ := ref(u)
			got := ours.proxyFor(u)
			if str(got) != str(want) {
				t.Errorf("HTTP_PROXY=%q HTTPS_PROXY=%q NO_PROXY=%q, %s: proxy %v, want %v", e.httpProxy, e.httpsProxy, e.noProxy, target, got, want)
			}
		}
	}
}

// FuzzProxyRules compares the proxy rules with httpproxy's on arbitrary
// NO_PROXY values and ASCII targets.
func FuzzProxyRules(f *testing.F) {
	for _, seed := range [][2]string{
		{"example.com", "http://example.com/"},
		{".example.com:8080,10.0.0.0/8", "http://a.example.com:8080/"},
		{"*.x.test, [::1]:80", "https://y.x.test/"},
		{"*", "http://10.0.0.1/"},
		{"[fe80::1%25eth0]:80", "http://[fe80::1%25eth0]/"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, noProxy, target string) {
		for i := 0; i < len(noProxy); i++ {
			if noProxy[i] >= 0x80 {
				return // httpproxy turns international names into punycode
			}
		}
		u, err := url.Parse(target)
		if err != nil {
			return
		}
		for i := 0; i < len(u.Host); i++ {
			if u.Host[i] >= 0x80 {
				return
			}
		}
		const proxy = "http://proxy.test:3128"
		want, _ := (&httpproxy.Config{HTTPProxy: proxy, HTTPSProxy: proxy, NoProxy: noProxy}).ProxyFunc()(u)
		got := newProxyRules(proxy, proxy, noProxy).proxyFor(u)
		if str(got) != str(want) {
			t.Fatalf("NO_PROXY=%q, %q: proxy %v, want %v", noProxy, target, got, want)
		}
	})
}

// isToken agrees with httpguts on every byte, and on some names.
func TestIsTokenAgreesWithHTTPGuts(t *testing.T) {
	is := is.New(t)
	for c := 0; c < 256; c++ {
		s := "X-" + string([]byte{byte(c)})
		is.Equal(isToken(s), httpguts.ValidHeaderFieldName(s)) // one byte
	}
	for _, s := range []string{"", "Mcp-Session-Id", "a b", "x:y", "héllo", "~!#$%&'*+-.^_`|"} {
		is.Equal(isToken(s), httpguts.ValidHeaderFieldName(s))
	}
}

// str is u's text, "none" for nil.
func str(u *url.URL) string {
	if u == nil {
		return "none"
	}
	return u.String()
}
