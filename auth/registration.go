package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// clientName is the client_name mcp-stdio registers under.
const clientName = "mcp-stdio"

// Grant types, as registered and requested.
const (
	grantAuthorizationCode = "authorization_code"
	grantRefreshToken      = "refresh_token"
	grantDeviceCode        = "urn:ietf:params:oauth:grant-type:device_code"
)

// ClientRegistration is the part of a dynamic client registration response
// (RFC 7591 §3.2.1) a client keeps. Unknown members are ignored.
type ClientRegistration struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	// ClientSecretExpiresAt is when the secret expires, in seconds since
	// the epoch; 0 means never.
	ClientSecretExpiresAt float64 `json:"client_secret_expires_at"`
	// TokenEndpointAuthMethod is the method the server settled on; empty
	// when it did not say.
	TokenEndpointAuthMethod string `json:"token_endpoint_auth_method"`
}

// ParseClientRegistration parses a registration response body. It fails on
// a body that is not a JSON object, on members of the wrong type and on a
// response without client_id.
func ParseClientRegistration(b []byte) (*ClientRegistration, error) {
	var r ClientRegistration
	if err := decodeObject(b, &r); err != nil {
		return nil, fmt.Errorf("client registration response: %w", err)
	}
	if r.ClientID == "" {
		return nil, errors.New("client registration response: no client_id")
	}
	// 0 is "never"; so is anything unreadable or past the year 9999.
	if math.IsNaN(r.ClientSecretExpiresAt) || r.ClientSecretExpiresAt < 0 || r.ClientSecretExpiresAt > maxUnixSeconds {
		r.ClientSecretExpiresAt = 0
	}
	switch r.TokenEndpointAuthMethod {
	case "", authNone, authSecretBasic, authSecretPost:
	default:
		return nil, fmt.Errorf("client registration response: unsupported token_endpoint_auth_method %q", cleanDescription(r.TokenEndpointAuthMethod))
	}
	return &r, nil
}

// registrationRequest is the client metadata sent for dynamic registration
// (RFC 7591 §2, with application_type of OpenID Connect Registration and
// MCP's SEP-837).
type registrationRequest struct {
	ClientName              string   `json:"client_name"`
	ApplicationType         string   `json:"application_type"`
	RedirectURIs            []string `json:"redirect_uris,omitempty"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types,omitempty"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
}

// clientFor decides who the client is at the authorization server of d, in
// the order of MCP 2026-07-28: the pre-registered client (--client-id); a
// Client ID Metadata Document URL when the server supports them and one is
// configured; the client registered earlier with this same issuer, while its
// secret lasts; else a new dynamic registration at the advertised
// registration_endpoint. registered tells whether a new registration
// happened, so the caller stores it.
func (c *Client) clientFor(ctx context.Context, d *discovery, e *storeEntry, redirectURI string) (creds clientCreds, registered bool, err error) {
	supported := d.as.TokenEndpointAuthMethodsSupported
	if c.opts.ClientID != "" {
		return clientCreds{
			id:     c.opts.ClientID,
			secret: c.opts.ClientSecret,
			method: chooseAuthMethod(c.opts.ClientSecret != "", supported),
		}, false, nil
	}
	if c.opts.ClientMetadataURL != "" && d.as.ClientIDMetadataDocumentSupported {
		return clientCreds{id: c.opts.ClientMetadataURL, method: authNone}, false, nil
	}
	flow := c.flowName()
	if e != nil && e.ClientID != "" && e.Issuer == d.as.Issuer && e.ClientFlow == flow && e.ClientID != c.opts.ClientMetadataURL {
		cc := e.clientCreds()
		if cc.secretExpires.IsZero() || c.clock.Now().Before(cc.secretExpires) {
			return cc, false, nil
		}
		c.log.Info("oauth: the registered client's secret has expired; registering again")
	}
	if d.as.RegistrationEndpoint == "" {
		return clientCreds{}, false, errors.New("the authorization server offers no dynamic client registration; pass the id (and secret) of a pre-registered client")
	}
	creds, err = c.register(ctx, d.as.RegistrationEndpoint, redirectURI, supported)
	if err != nil {
		return clientCreds{}, false, err
	}
	return creds, true, nil
}

// register performs dynamic client registration (RFC 7591) at endpoint.
func (c *Client) register(ctx context.Context, endpoint, redirectURI string, supported []string) (clientCreds, error) {
	if _, err := parseSecureURL("registration endpoint", endpoint); err != nil {
		return clientCreds{}, err
	}
	method := authNone
	if len(supported) > 0 && !slices.Contains(supported, authNone) {
		// A server that takes no public clients: ask for a secret the way
		// it advertises.
		method = chooseAuthMethod(true, supported)
	}
	meta := registrationRequest{
		ClientName:              clientName,
		ApplicationType:         "native",
		TokenEndpointAuthMethod: method,
	}
	if c.opts.Device {
		meta.GrantTypes = []string{grantDeviceCode, grantRefreshToken}
	} else {
		meta.RedirectURIs = []string{redirectURI}
		meta.GrantTypes = []string{grantAuthorizationCode, grantRefreshToken}
		meta.ResponseTypes = []string{"code"}
	}
	body, err := json.Marshal(meta)
	if err != nil {
		return clientCreds{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return clientCreds{}, fmt.Errorf("registration endpoint %s: %w", frame.DisplayURLString(endpoint), err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return clientCreds{}, fmt.Errorf("client registration: cannot reach %s: %w", frame.DisplayURLString(endpoint), unwrapURLError(err))
	}
	defer resp.Body.Close()
	rb, err := readLimited(resp.Body)
	if err != nil {
		return clientCreds{}, fmt.Errorf("client registration at %s: %w", frame.DisplayURLString(endpoint), err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		te := &TokenError{Status: resp.StatusCode}
		var f tokenFields
		if decodeObject(rb, &f) == nil {
			te.Code, te.Description = cleanDescription(f.Error), cleanDescription(f.ErrorDescription)
		}
		return clientCreds{}, fmt.Errorf("client registration at %s failed: %w", frame.DisplayURLString(endpoint), te)
	}
	r, err := ParseClientRegistration(rb)
	if err != nil {
		return clientCreds{}, err
	}
	cc := clientCreds{id: r.ClientID, secret: r.ClientSecret, method: r.TokenEndpointAuthMethod}
	if cc.method == "" {
		cc.method = chooseAuthMethod(cc.secret != "", supported)
	}
	if cc.secret == "" {
		cc.method = authNone
	}
	if r.ClientSecretExpiresAt > 0 {
		cc.secretExpires = time.Unix(int64(r.ClientSecretExpiresAt), 0)
	}
	c.log.Info("oauth: registered a client", "registration_endpoint", frame.DisplayURLString(endpoint), "auth_method", cc.method)
	return cc, nil
}

// flowName names the grant the client signs in with, as recorded with a
// registration: a client registered for one is not reused for the other.
func (c *Client) flowName() string {
	if c.opts.Device {
		return "device"
	}
	return "code"
}
