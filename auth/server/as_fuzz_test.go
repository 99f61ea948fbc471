package server

import (
	"strings"
	"testing"
)

// Fuzz targets for the parsers that see attacker bytes: the authorization
// request's query, the token request's form and the registration body.

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
