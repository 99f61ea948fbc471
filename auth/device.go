package auth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Device grant polling (RFC 8628 §3.4, §3.5).
const (
	defaultDeviceInterval = 5 * time.Second
	slowDownStep          = 5 * time.Second
)

// deviceFlow runs the device authorization grant (RFC 8628) for hosts
// without a browser: it asks for a device code, prints the verification URI
// and the user code on stderr, and polls the token endpoint at the interval
// the server gives, slowing down by 5 s on each slow_down.
//
// The device authorization request comes from golang.org/x/oauth2
// (Config.DeviceAuth, which also copes with servers that spell
// verification_uri as verification_url). Its polling loop is not used: it
// runs on the wall clock and cannot send the resource parameter; ours runs
// on the injected [Clock] and sends resource like every other token request.
func (c *Client) deviceFlow(ctx context.Context, d *discovery, e *storeEntry, scopes []string) (Token, clientCreds, bool, error) {
	if d.as.DeviceAuthorizationEndpoint == "" {
		return Token{}, clientCreds{}, false, errors.New("the authorization server does not offer the device grant (no device_authorization_endpoint)")
	}
	creds, registered, err := c.clientFor(ctx, d, e, "")
	if err != nil {
		return Token{}, clientCreds{}, false, err
	}
	cfg := oauth2.Config{
		ClientID: creds.id,
		Endpoint: oauth2.Endpoint{DeviceAuthURL: d.as.DeviceAuthorizationEndpoint, TokenURL: d.as.TokenEndpoint},
		Scopes:   scopes,
	}
	da, err := cfg.DeviceAuth(context.WithValue(ctx, oauth2.HTTPClient, c.http), c.authURLOptions(d.resource)...)
	if err != nil {
		return Token{}, clientCreds{}, false, fmt.Errorf("device authorization: %w", fromOAuth2Error(err))
	}
	if da.DeviceCode == "" || da.UserCode == "" || da.VerificationURI == "" {
		return Token{}, clientCreds{}, false, errors.New("device authorization: the response lacks device_code, user_code or verification_uri")
	}
	fmt.Fprintf(c.stderr, "mcp-stdio: to sign in to %s, visit %s and enter the code %s\n", frame.DisplayURLString(c.resource), da.VerificationURI, da.UserCode)
	if da.VerificationURIComplete != "" {
		fmt.Fprintf(c.stderr, "mcp-stdio: or open %s\n", da.VerificationURIComplete)
	}
	interval := time.Duration(da.Interval) * time.Second
	if interval <= 0 || interval > time.Hour {
		interval = defaultDeviceInterval
	}
	grant := c.withResource(url.Values{
		"grant_type":  {grantDeviceCode},
		"device_code": {da.DeviceCode},
	}, d.resource)
	for {
		if err := sleep(ctx, c.clock, interval); err != nil {
			if errors.Is(err, errSignInTimeout) {
				return Token{}, clientCreds{}, false, fmt.Errorf("%w: the code was not entered", err)
			}
			return Token{}, clientCreds{}, false, err
		}
		tok, err := c.requestToken(ctx, d.as.TokenEndpoint, creds, grant)
		if err == nil {
			return tok, creds, registered, nil
		}
		var te *TokenError
		if !errors.As(err, &te) {
			return Token{}, clientCreds{}, false, fmt.Errorf("device grant: %w", err)
		}
		switch te.Code {
		case "authorization_pending":
		case "slow_down":
			interval += slowDownStep
			c.log.Debug("oauth: device grant asked to slow down", "interval", interval)
		case "access_denied":
			return Token{}, clientCreds{}, false, errors.New("device grant: the sign-in was denied")
		case "expired_token":
			return Token{}, clientCreds{}, false, errors.New("device grant: the code expired before it was entered")
		default:
			return Token{}, clientCreds{}, false, fmt.Errorf("device grant: %w", err)
		}
	}
}

// fromOAuth2Error converts golang.org/x/oauth2's RetrieveError, whose
// message includes the raw response body, into a [TokenError].
func fromOAuth2Error(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		te := &TokenError{Code: cleanDescription(re.ErrorCode), Description: cleanDescription(re.ErrorDescription)}
		if re.Response != nil {
			te.Status = re.Response.StatusCode
		}
		return te
	}
	return unwrapURLError(err)
}
