package auth

import (
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestParseProtectedResourceMetadata(t *testing.T) {
	is := is.New(t)
	m, err := ParseProtectedResourceMetadata([]byte(`{"resource":"https://h/mcp","authorization_servers":["https://as",""],"scopes_supported":["a","b"],"bearer_methods_supported":["header"],"extra":{"x":[1]}}`))
	is.NoErr(err)
	is.Equal(m.Resource, "https://h/mcp")
	is.Equal(m.AuthorizationServers, []string{"https://as"}) // empties dropped
	is.Equal(m.ScopesSupported, []string{"a", "b"})

	for name, body := range map[string]string{
		"html":          `<html>not found</html>`,
		"array":         `["https://as"]`,
		"truncated":     `{"resource":"https://h/mcp"`,
		"wrong type":    `{"resource":"https://h/mcp","authorization_servers":"https://as"}`,
		"no resource":   `{"authorization_servers":["https://as"]}`,
		"null resource": `{"resource":null}`,
		"empty":         ``,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseProtectedResourceMetadata([]byte(body))
			is.New(t).True(err != nil)
		})
	}
	_, err = ParseProtectedResourceMetadata([]byte(`<html>`))
	is.True(errors.Is(err, errNotJSONObject)) // HTML is "not there", not "broken"
}

func TestParseAuthServerMetadata(t *testing.T) {
	is := is.New(t)
	m, err := ParseAuthServerMetadata([]byte(`{
		"issuer":"https://as/t1","authorization_endpoint":"https://as/t1/authorize","token_endpoint":"https://as/t1/token",
		"registration_endpoint":null,"code_challenge_methods_supported":["S256"],
		"authorization_response_iss_parameter_supported":true,"client_id_metadata_document_supported":true,
		"token_endpoint_auth_methods_supported":["client_secret_basic"],"unknown":123}`))
	is.NoErr(err)
	is.Equal(m.Issuer, "https://as/t1")
	is.Equal(m.RegistrationEndpoint, "") // null is absent (claude-code#38102)
	is.True(m.AuthorizationResponseIssParameterSupported)
	is.True(m.ClientIDMetadataDocumentSupported)
	is.True(m.supportsS256())

	m, err = ParseAuthServerMetadata([]byte(`{"issuer":"https://as","code_challenge_methods_supported":["plain"]}`))
	is.NoErr(err)
	is.True(!m.supportsS256()) // refused later by discovery
	m, err = ParseAuthServerMetadata([]byte(`{"issuer":"https://as"}`))
	is.NoErr(err)
	is.True(m.supportsS256()) // absent list: assume S256 (Entra ID omits it)

	for name, body := range map[string]string{
		"no issuer":  `{"token_endpoint":"https://as/token"}`,
		"wrong type": `{"issuer":"https://as","authorization_response_iss_parameter_supported":"yes"}`,
		"not json":   `issuer=https://as`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseAuthServerMetadata([]byte(body))
			is.New(t).True(err != nil)
		})
	}
}

func TestParseClientRegistration(t *testing.T) {
	is := is.New(t)
	r, err := ParseClientRegistration([]byte(`{"client_id":"c1","client_secret":"s","client_secret_expires_at":1785240000,"token_endpoint_auth_method":"client_secret_post","redirect_uris":["x"]}`))
	is.NoErr(err)
	is.Equal(r.ClientID, "c1")
	is.Equal(r.ClientSecretExpiresAt, float64(1785240000))
	is.Equal(r.TokenEndpointAuthMethod, "client_secret_post")

	r, err = ParseClientRegistration([]byte(`{"client_id":"c1","client_secret_expires_at":-5}`))
	is.NoErr(err)
	is.Equal(r.ClientSecretExpiresAt, float64(0)) // nonsense means never

	for name, body := range map[string]string{
		"no client_id":   `{"client_secret":"s"}`,
		"unknown method": `{"client_id":"c","token_endpoint_auth_method":"private_key_jwt"}`,
		"wrong type":     `{"client_id":7}`,
		"html":           `<h1>403</h1>`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseClientRegistration([]byte(body))
			is.New(t).True(err != nil)
		})
	}
}

func FuzzParseProtectedResourceMetadata(f *testing.F) {
	for _, s := range []string{
		`{"resource":"https://h/mcp","authorization_servers":["https://as"],"scopes_supported":["a"]}`,
		`{"resource":"https://h","authorization_servers":[]}`,
		`{"resource":null}`, `{"authorization_servers":"x"}`, `[]`, `<html>`, `{`, ``,
		`{"resource":"https://h/mcp","resource":"https://evil/mcp","authorization_servers":["https://as"],"authorization_servers":["https://evil"]}`,
		`{"resource":"https://h/mcp","authorization_servers":["https://as"],"x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseProtectedResourceMetadata(b)
		if err == nil && m.Resource == "" {
			t.Fatal("accepted a document without resource")
		}
		if err == nil {
			for _, s := range m.AuthorizationServers {
				if s == "" {
					t.Fatal("empty authorization server kept")
				}
			}
		}
	})
}

func FuzzParseAuthServerMetadata(f *testing.F) {
	for _, s := range []string{
		`{"issuer":"https://as","authorization_endpoint":"https://as/a","token_endpoint":"https://as/t","code_challenge_methods_supported":["S256"]}`,
		`{"issuer":"https://as","registration_endpoint":null,"authorization_response_iss_parameter_supported":true}`,
		`{"issuer":1}`, `{"issuer":"x","scopes_supported":[1]}`, `null`, `{}`, `<`,
		`{"issuer":"https://as","token_endpoint":"https://as/t","token_endpoint":"http://evil/t"}`,
		`{"issuer":"https://as","x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseAuthServerMetadata(b)
		if err == nil {
			if m.Issuer == "" {
				t.Fatal("accepted metadata without issuer")
			}
			_ = m.check(m.Issuer) // must not panic either
		}
	})
}

func FuzzParseClientRegistration(f *testing.F) {
	for _, s := range []string{
		`{"client_id":"c","client_secret":"s","client_secret_expires_at":0}`,
		`{"client_id":"c","client_secret_expires_at":1e308}`,
		`{"client_id":"c","token_endpoint_auth_method":"none"}`, `{"client_id":""}`, `{}`, `x`,
		`{"client_id":"c","client_id":""}`, `{"client_id":"c","x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseClientRegistration(b)
		if err == nil && (r.ClientID == "" || r.ClientSecretExpiresAt < 0 || r.ClientSecretExpiresAt > maxUnixSeconds) {
			t.Fatalf("bad registration accepted: %+v", r)
		}
	})
}
