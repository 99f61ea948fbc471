package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Limits of a Client ID Metadata Document fetch.
const (
	// MaxClientMetadataSize caps a document's body: a longer one is a
	// failed fetch, never read further and never cut short and parsed.
	MaxClientMetadataSize = 5 << 10
	// DefaultClientMetadataTimeout is the one deadline of a whole fetch:
	// resolving, connecting, TLS, the response's header and its body.
	DefaultClientMetadataTimeout = 10 * time.Second
	// cimdMaxHeaderBytes caps the response's header.
	cimdMaxHeaderBytes = 16 << 10
)

// cimdFailure is how a fetch failed, which decides what the cache does
// with it: see [ClientMetadataFetcher].
type cimdFailure int

const (
	cimdOK        cimdFailure = iota
	cimdTransport             // no document obtained: the stale copy may serve
	cimdInvalid               // a document that does not validate: no fallback
	cimdWithdrawn             // 404 or 410: the client is gone
)

// cimdGet fetches the document at rawURL (a URL on the allowlist, u
// parsed) through a
// connection of its own, pinned to an address checked by [checkPublicAddr],
// within f.timeout overall. It returns the body of a 200 answer and its
// header; a 404 or 410 is a cimdWithdrawn failure, anything else that is
// not a 200 with a whole body of at most MaxClientMetadataSize bytes a
// cimdTransport one.
func (f *ClientMetadataFetcher) cimdGet(ctx context.Context, rawURL string, u *url.URL) ([]byte, http.Header, cimdFailure, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	body, h, kind, err := f.cimdGetWithin(ctx, rawURL, u)
	// The socket's deadline may fire a moment before the context's.
	if err != nil && (ctx.Err() != nil || !time.Now().Before(deadline)) {
		err = fmt.Errorf("no complete answer within %v (%v)", f.timeout, err)
	}
	return body, h, kind, err
}

func (f *ClientMetadataFetcher) cimdGetWithin(ctx context.Context, rawURL string, u *url.URL) ([]byte, http.Header, cimdFailure, error) {
	deadline, _ := ctx.Deadline()
	host := u.Hostname()
	port := u.Port()
	if port == "" {
		port = "443"
	}
	portNum, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, nil, cimdTransport, fmt.Errorf("invalid port %q", port)
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		addrs, err = f.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, nil, cimdTransport, fmt.Errorf("cannot resolve %s: %v", host, err)
		}
		if len(addrs) == 0 {
			return nil, nil, cimdTransport, fmt.Errorf("%s has no address", host)
		}
	}
	// Every address must pass, not just the one dialed: a name that
	// resolves to a public and a private address is refused whole.
	for _, a := range addrs {
		if err := checkPublicAddr(a); err != nil {
			return nil, nil, cimdTransport, fmt.Errorf("%s resolves to %v: the document must be served from a public address", host, err)
		}
	}
	dial := f.dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	tr := &http.Transport{
		Proxy: nil, // a proxy would pick the address itself
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var errs []error
			for _, a := range addrs {
				c, err := dial(ctx, "tcp", netip.AddrPortFrom(a.Unmap(), uint16(portNum)).String())
				if err != nil {
					errs = append(errs, err)
					continue
				}
				// The watchdog: whatever the server does (a byte a
				// second keeps every read alive), the socket stops
				// at the deadline.
				if err := c.SetDeadline(deadline); err != nil {
					c.Close()
					return nil, err
				}
				return c, nil
			}
			return nil, errors.Join(errs...)
		},
		TLSClientConfig: &tls.Config{
			ServerName: host,
			RootCAs:    f.rootCAs,
			MinVersion: tls.VersionTLS12,
		},
		DisableKeepAlives:      true,
		DisableCompression:     true,
		MaxResponseHeaderBytes: cimdMaxHeaderBytes,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	// The request is for the allowlisted URL as written, not a re-encoding.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, nil, cimdTransport, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, cimdTransport, cimdUnwrapURLError(err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return nil, nil, cimdWithdrawn, fmt.Errorf("the server answered %s", resp.Status)
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return nil, nil, cimdTransport, fmt.Errorf("the server answered %s, a redirect, which is never followed: the document must be served at its client_id URL itself", resp.Status)
	default:
		return nil, nil, cimdTransport, fmt.Errorf("the server answered %s, not 200", resp.Status)
	}
	if resp.ContentLength > MaxClientMetadataSize {
		return nil, nil, cimdTransport, fmt.Errorf("the document is %d bytes, more than the %d allowed", resp.ContentLength, MaxClientMetadataSize)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxClientMetadataSize+1))
	if err != nil {
		return nil, nil, cimdTransport, fmt.Errorf("reading the document: %v", err)
	}
	if len(body) > MaxClientMetadataSize {
		return nil, nil, cimdTransport, fmt.Errorf("the document is longer than the %d bytes allowed", MaxClientMetadataSize)
	}
	return body, resp.Header, cimdOK, nil
}

// cimdUnwrapURLError drops the *url.Error wrapping, which repeats the URL
// the caller's message already names.
func cimdUnwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// cimdFreshFor is how long a fetched document stays fresh: its
// Cache-Control max-age (the smallest, if several), or 0 for no-store and
// no-cache, or def without either; at most maxFresh.
func cimdFreshFor(h http.Header, def, maxFresh time.Duration) time.Duration {
	fresh, found := time.Duration(0), false
	for _, v := range h.Values("Cache-Control") {
		for d := range strings.SplitSeq(v, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store", "no-cache":
				return 0
			case "max-age":
				n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(val), `"`), 10, 64)
				if errors.Is(err, strconv.ErrRange) && n > 0 {
					n, err = math.MaxInt64, nil // too large: very fresh (RFC 9111 §1.2.2)
				}
				if err != nil || n < 0 {
					return 0 // unparsable: stale at once (RFC 9111 §4.2.1)
				}
				s := time.Duration(min(n, int64(maxFresh/time.Second))) * time.Second
				if !found || s < fresh {
					fresh, found = s, true
				}
			}
		}
	}
	if !found {
		fresh = def
	}
	return min(fresh, maxFresh)
}

// cimdTestHooks are the test-only ways into a fetcher's network: tests
// connect a public-looking address to a local server and trust its
// certificate. They are never set outside this package's tests.
type cimdTestHooks struct {
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	rootCAs *x509.CertPool
	// onWait is called, under the fetcher's lock, when a caller joins a
	// fetch already in flight.
	onWait func()
}
