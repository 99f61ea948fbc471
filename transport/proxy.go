package transport

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// The proxy rules of HTTP_PROXY, HTTPS_PROXY and NO_PROXY, for an
// environment the caller passes in: net/http's ProxyFromEnvironment reads
// the process's environment once and cannot be given another, and the
// module that exports the same rules (golang.org/x/net/http/httpproxy)
// would link a second copy of the IDNA tables net/http already carries.
// proxy_test.go checks these rules against that module.

// proxyRules is one environment's proxy configuration.
type proxyRules struct {
	httpProxy, httpsProxy *url.URL // nil: no proxy for that scheme (or a value that does not parse)
	all                   bool     // NO_PROXY=*
	ips                   []ipRule
	domains               []domainRule
}

// ipRule is a NO_PROXY entry naming an address (with an optional port)
// or a network.
type ipRule struct {
	ip   net.IP
	net  *net.IPNet
	port string
}

// domainRule is a NO_PROXY entry naming a domain: ".example.com" and
// "*.example.com" match its subdomains, "example.com" the domain too.
type domainRule struct {
	suffix    string // with its leading dot
	matchHost bool
	port      string
}

// newProxyRules reads the three variables' values.
func newProxyRules(httpProxy, httpsProxy, noProxy string) *proxyRules {
	r := &proxyRules{}
	r.httpProxy, _ = parseProxyURL(httpProxy)
	r.httpsProxy, _ = parseProxyURL(httpsProxy)
	for _, entry := range strings.Split(noProxy, ",") {
		entry = strings.ToLower(strings.TrimSpace(entry))
		if entry == "" {
			continue
		}
		if entry == "*" {
			r.all = true
			return r
		}
		if _, network, err := net.ParseCIDR(entry); err == nil {
			r.ips = append(r.ips, ipRule{net: network})
			continue
		}
		host, port, err := net.SplitHostPort(entry)
		if err == nil {
			if host == "" {
				continue // ":80": no host, a malformed entry
			}
			host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		} else {
			host, port = entry, ""
		}
		if ip := net.ParseIP(host); ip != nil {
			r.ips = append(r.ips, ipRule{ip: ip, port: port})
			continue
		}
		if host == "" {
			continue
		}
		if strings.HasPrefix(host, "*.") {
			host = host[1:]
		}
		matchHost := host[0] != '.'
		if matchHost {
			host = "." + host
		}
		r.domains = append(r.domains, domainRule{suffix: host, matchHost: matchHost, port: port})
	}
	return r
}

// parseProxyURL parses a proxy variable's value: a URL, or a host[:port]
// taken as http://host[:port]. "" is no proxy; a value that does not parse
// is none either, as with net/http's own reading of the variables.
func parseProxyURL(v string) (*url.URL, error) {
	if v == "" {
		return nil, nil
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme == "" || u.Host == "" {
		if u2, err2 := url.Parse("http://" + v); err2 == nil {
			return u2, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("invalid proxy address %q: %v", v, err)
	}
	return u, nil
}

// proxyFor returns the proxy for a request to target, or nil for none.
func (r *proxyRules) proxyFor(target *url.URL) *url.URL {
	var proxy *url.URL
	switch target.Scheme {
	case "https":
		proxy = r.httpsProxy
	case "http":
		proxy = r.httpProxy
	}
	if proxy == nil || !r.useProxy(target) {
		return nil
	}
	return proxy
}

// defaultPort is the port NO_PROXY entries with a port are compared with
// when a URL of scheme names none.
func defaultPort(scheme string) string {
	switch scheme {
	case "http":
		return "80"
	case "https":
		return "443"
	case "socks5":
		return "1080"
	}
	return ""
}

// useProxy reports whether a request to target goes through a proxy:
// never to localhost or a loopback address, nor to what NO_PROXY names.
func (r *proxyRules) useProxy(target *url.URL) bool {
	port := target.Port()
	if port == "" {
		port = defaultPort(target.Scheme)
	}
	host, port, err := net.SplitHostPort(net.JoinHostPort(target.Hostname(), port))
	if err != nil {
		return false
	}
	if host == "localhost" {
		return false
	}
	var ip net.IP
	if addr, err := netip.ParseAddr(host); err == nil {
		ip = net.IP(addr.AsSlice())
		if ip.IsLoopback() {
			return false
		}
	}
	if r.all {
		return false
	}
	host = strings.ToLower(strings.TrimSpace(host))
	if ip != nil {
		for _, rule := range r.ips {
			if rule.net != nil && rule.net.Contains(ip) {
				return false
			}
			if rule.ip != nil && rule.ip.Equal(ip) && (rule.port == "" || rule.port == port) {
				return false
			}
		}
		return true // domain entries never match an address
	}
	for _, rule := range r.domains {
		if strings.HasSuffix(host, rule.suffix) || rule.matchHost && host == rule.suffix[1:] {
			if rule.port == "" || rule.port == port {
				return false
			}
		}
	}
	return true
}

// proxyFunc returns the proxy selection for the environment getenv reads,
// or nil (no proxy) when getenv is nil or names no proxy. Unlike
// http.ProxyFromEnvironment it reads the injected environment, not the
// process's cached one. Requests to localhost and loopback addresses
// never use a proxy.
func proxyFunc(getenv func(string) string) func(*http.Request) (*url.URL, error) {
	if getenv == nil {
		return nil
	}
	first := func(names ...string) string {
		for _, n := range names {
			if v := getenv(n); v != "" {
				return v
			}
		}
		return ""
	}
	httpProxy, httpsProxy := first("HTTP_PROXY", "http_proxy"), first("HTTPS_PROXY", "https_proxy")
	if httpProxy == "" && httpsProxy == "" {
		return nil
	}
	rules := newProxyRules(httpProxy, httpsProxy, first("NO_PROXY", "no_proxy"))
	return func(req *http.Request) (*url.URL, error) { return rules.proxyFor(req.URL), nil }
}
