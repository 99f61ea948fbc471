package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// ProtectedResourceMetadata is the part of an OAuth 2.0 Protected Resource
// Metadata document (RFC 9728 §2) a client uses. Unknown members are
// ignored.
type ProtectedResourceMetadata struct {
	// Resource is the protected resource's identifier.
	Resource string `json:"resource"`
	// AuthorizationServers lists issuer identifiers of authorization servers
	// that can issue tokens for the resource.
	AuthorizationServers []string `json:"authorization_servers"`
	// ScopesSupported lists the scopes the resource uses.
	ScopesSupported []string `json:"scopes_supported"`
}

// AuthServerMetadata is the part of an OAuth 2.0 Authorization Server
// Metadata document (RFC 8414 §2, or an OpenID Provider configuration) a
// client uses. Unknown members are ignored; null counts as absent.
type AuthServerMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	DeviceAuthorizationEndpoint       string   `json:"device_authorization_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	// AuthorizationResponseIssParameterSupported (RFC 9207 §3): the server
	// puts iss in every authorization response, so a response without it is
	// rejected.
	AuthorizationResponseIssParameterSupported bool `json:"authorization_response_iss_parameter_supported"`
	// ClientIDMetadataDocumentSupported: the server accepts an https URL as
	// client_id (Client ID Metadata Documents).
	ClientIDMetadataDocumentSupported bool `json:"client_id_metadata_document_supported"`
}

// errNotJSONObject marks a body that is not a JSON object at all: an HTML
// page or plain text where a document was expected. Discovery skips such a
// URL like a 404 (single-page apps answer every path with 200 and HTML)
// instead of failing on it.
var errNotJSONObject = errors.New("not a JSON object")

// decodeObject unmarshals a JSON object into v, leniently about null and
// unknown members, strictly about types.
func decodeObject(b []byte, v any) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return errNotJSONObject
	}
	if err := json.Unmarshal(b, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("member %q has the wrong type (%s, want %s)", te.Field, te.Value, te.Type)
		}
		return err
	}
	return nil
}

// ParseProtectedResourceMetadata parses and checks a protected resource
// metadata document. It fails on a body that is not a JSON object, on a
// member of the wrong type, and on a document without a resource.
func ParseProtectedResourceMetadata(b []byte) (*ProtectedResourceMetadata, error) {
	var m ProtectedResourceMetadata
	if err := decodeObject(b, &m); err != nil {
		return nil, fmt.Errorf("protected resource metadata: %w", err)
	}
	if m.Resource == "" {
		return nil, errors.New("protected resource metadata: no resource")
	}
	m.AuthorizationServers = slices.DeleteFunc(m.AuthorizationServers, func(s string) bool { return s == "" })
	return &m, nil
}

// ParseAuthServerMetadata parses and checks an authorization server
// metadata document. It fails on a body that is not a JSON object, on a
// member of the wrong type and on a document without an issuer; it does not
// compare the issuer with anything (discovery does) and leaves absent
// endpoints empty.
func ParseAuthServerMetadata(b []byte) (*AuthServerMetadata, error) {
	var m AuthServerMetadata
	if err := decodeObject(b, &m); err != nil {
		return nil, fmt.Errorf("authorization server metadata: %w", err)
	}
	if m.Issuer == "" {
		return nil, errors.New("authorization server metadata: no issuer")
	}
	return &m, nil
}

// supportsS256 reports whether PKCE S256 may be used with the server: it is
// listed, or the list is absent. MCP requires refusing a server that
// advertises methods without S256; many real servers (Entra ID among them)
// omit the list entirely while supporting S256, so absence is not refusal.
func (m *AuthServerMetadata) supportsS256() bool {
	return len(m.CodeChallengeMethodsSupported) == 0 || slices.Contains(m.CodeChallengeMethodsSupported, "S256")
}
