package server

import (
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// Fuzz targets for the parsers that see attacker bytes: the authorization
// request's query, the token request's form, the registration body, and
// the X-Forwarded-For a request's source is read from.

func FuzzAuthorizeQuery(f *testing.F) {
	f.Add(authQuery("client").Encode())
	f.Add("client_id=a&redirect_uri=http://127.0.0.1/cb&code_challenge_method=plain")
	f.Add("client_id=a&client_id=b")
	f.Add("%zz")
	f.Add("scope=a%20%20b%22&resource=HTTPS://X/")
	f.Fuzz(func(t *testing.T, q string) {
		req, err, redirectable := ParseAuthorizeQuery(q)
		if err == nil {
			if !redirectable || req.ClientID == "" || req.RedirectURI == "" || !validChallenge(req.CodeChallenge) {
				t.Fatalf("accepted an incomplete request: %+v", req)
			}
			if _, ok := canonicalResource(req.Resource); !ok {
				t.Fatalf("accepted resource %q", req.Resource)
			}
			for _, s := range req.Scopes {
				if !ValidScope(s) {
					t.Fatalf("accepted scope %q", s)
				}
			}
			return
		}
		if err.Code == "" || strings.ContainsAny(err.Description, "\r\n") {
			t.Fatalf("bad error %+v", err)
		}
	})
}

func FuzzTokenForm(f *testing.F) {
	f.Add("grant_type=authorization_code&client_id=c&code=x&redirect_uri=http://127.0.0.1/cb&code_verifier=" + testVerifier)
	f.Add("grant_type=refresh_token&client_id=c&refresh_token=r&scope=mcp")
	f.Add("grant_type=password&username=a")
	f.Add("grant_type=refresh_token&refresh_token=r&refresh_token=s")
	f.Add("resource=%%")
	f.Fuzz(func(t *testing.T, body string) {
		req, err := ParseTokenForm(body)
		if err != nil {
			if err.Code == "" || err.status == 0 {
				t.Fatalf("bad error %+v", err)
			}
			return
		}
		if req.ClientID == "" {
			t.Fatal("accepted without client_id")
		}
		switch req.GrantType {
		case "authorization_code":
			if req.Code == "" || req.RedirectURI == "" || !validVerifier(req.CodeVerifier) {
				t.Fatalf("accepted %+v", req)
			}
		case "refresh_token":
			if req.RefreshToken == "" {
				t.Fatalf("accepted %+v", req)
			}
		default:
			t.Fatalf("accepted grant type %q", req.GrantType)
		}
	})
}

func FuzzRegistrationBody(f *testing.F) {
	f.Add([]byte(`{"redirect_uris":["http://127.0.0.1:33418/callback"],"client_name":"mcp-stdio","token_endpoint_auth_method":"none"}`))
	f.Add([]byte(`{"redirect_uris":["https://claude.ai/api/mcp/auth_callback"]}`))
	f.Add([]byte(`{"redirect_uris":["http://localhost.evil/"]}`))
	f.Add([]byte(`{"redirect_uris":null}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"redirect_uris":["http://127.0.0.1:1/cb"],"redirect_uris":["https://evil.example/cb"],"token_endpoint_auth_method":"none","token_endpoint_auth_method":"client_secret_basic"}`))
	f.Add([]byte(`{"redirect_uris":["http://127.0.0.1:1/cb"],"x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`))
	allowed := []string{"https://claude.ai/api/mcp/auth_callback"}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := ParseRegistration(body, allowed)
		if err != nil {
			return
		}
		if len(req.RedirectURIs) == 0 || len(req.RedirectURIs) > maxRedirectURIs {
			t.Fatalf("accepted %d redirect URIs", len(req.RedirectURIs))
		}
		for _, u := range req.RedirectURIs {
			if u != allowed[0] && checkLoopbackRedirect(u) != nil {
				t.Fatalf("accepted redirect URI %q", u)
			}
		}
	})
}

// FuzzRequestSource: whatever X-Forwarded-For and the peer address say,
// the source is one address (or an IPv6 /64, or "local"), and an
// untrusted peer's header is never read.
func FuzzRequestSource(f *testing.F) {
	f.Add("127.0.0.1:1", "198.51.100.1")
	f.Add("127.0.0.1:1", "1.2.3.4, 198.51.100.1, 10.0.0.1")
	f.Add("127.0.0.1:1", "[2001:db8::1]:80, nonsense")
	f.Add("127.0.0.1:1", "fe80::1%eth0")
	f.Add("127.0.0.1:1", strings.Repeat("10.0.0.1,", 40)+"198.51.100.1")
	f.Add("127.0.0.1:1", ",,, ,")
	f.Add("203.0.113.1:1", "198.51.100.1")
	f.Add("[::ffff:127.0.0.1]:1", "::ffff:198.51.100.1")
	f.Add("@", "198.51.100.1")
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8")}
	f.Fuzz(func(t *testing.T, peer, xff string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = peer
		r.Header.Set("X-Forwarded-For", xff)
		s, _ := requestSource(r, trusted)
		if s == "local" {
			return
		}
		if a, err := netip.ParseAddr(s); err == nil {
			if !a.Is4() || a.Zone() != "" {
				t.Fatalf("source %q is not an IPv4 address", s)
			}
		} else if p, err := netip.ParsePrefix(s); err != nil || p.Bits() != ipv6SourceBits || p.Masked() != p {
			t.Fatalf("source %q is neither an IPv4 address nor an IPv6 /64", s)
		}
		if p, ok := parseIP(peer); ok && !isTrusted(p, trusted) && s != sourceKey(p) {
			t.Fatalf("an untrusted peer %q was read through its header: %q", peer, s)
		}
	})
}
