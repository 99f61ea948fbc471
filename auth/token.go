package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Token is an OAuth access token with what the client keeps beside it.
//
// A Token's fields are credentials: never log them, never put them in an
// error message.
type Token struct {
	AccessToken  string
	RefreshToken string
	// Scope is the granted scope (space-separated) as the token response
	// said, or "" when it did not say.
	Scope string
	// Expiry is when the access token expires; the zero time means never
	// (a response without expires_in, claude-code#26281).
	Expiry time.Time
	// Obtained is when the token was received; it schedules the background
	// refresh. Zero when unknown.
	Obtained time.Time
}

// expired reports whether t is unusable at now, with margin to spare.
func (t Token) expired(now time.Time, margin time.Duration) bool {
	return !t.Expiry.IsZero() && !now.Add(margin).Before(t.Expiry)
}

// TokenError is an error answer of a token, device authorization or
// registration endpoint: an OAuth error code (RFC 6749 §5.2) and/or an HTTP
// status. Its message never carries response bodies.
type TokenError struct {
	// Status is the HTTP status (200 for the error-in-a-200 some servers,
	// GitHub among them, send).
	Status int
	// Code is the OAuth error code, e.g. "invalid_grant"; may be empty.
	Code string
	// Description is the server's error_description, shortened and with
	// control characters removed.
	Description string
}

// Error renders the code, or the status, and the description.
func (e *TokenError) Error() string {
	var b strings.Builder
	switch {
	case e.Code != "" && e.Status != 0 && e.Status != http.StatusOK && e.Status != http.StatusBadRequest:
		fmt.Fprintf(&b, "%s (HTTP %d)", e.Code, e.Status)
	case e.Code != "":
		b.WriteString(e.Code)
	default:
		fmt.Fprintf(&b, "HTTP %d", e.Status)
	}
	if e.Description != "" {
		b.WriteString(": ")
		b.WriteString(e.Description)
	}
	return b.String()
}

// deadGrant reports whether the error means the grant (refresh token, or
// the client behind it) will never work again, as opposed to a transient
// failure worth retrying later. An OAuth error answer (HTTP 400 or 401, or
// an error in a 200) is final; a 5xx or 429 is not.
func (e *TokenError) deadGrant() bool {
	switch e.Status {
	case http.StatusBadRequest, http.StatusUnauthorized:
		return true
	case http.StatusOK:
		return e.Code != ""
	}
	return e.Code == "invalid_grant"
}

// isDeadGrant reports whether err is a [TokenError] that ends the grant.
func isDeadGrant(err error) bool {
	var te *TokenError
	return errors.As(err, &te) && te.deadGrant()
}

// maxDescription bounds the error_description kept in a TokenError.
const maxDescription = 200

// cleanDescription shortens s and drops control characters, so that a
// server's text cannot forge log lines or flood the terminal.
func cleanDescription(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > maxDescription {
		cut := maxDescription
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// tokenFields is the union of the members of a token response and an error
// response (RFC 6749 §5.1, §5.2).
type tokenFields struct {
	AccessToken      string          `json:"access_token"`
	TokenType        string          `json:"token_type"`
	ExpiresIn        json.RawMessage `json:"expires_in"`
	RefreshToken     string          `json:"refresh_token"`
	Scope            string          `json:"scope"`
	Error            string          `json:"error"`
	ErrorDescription string          `json:"error_description"`
}

// ParseTokenResponse turns the answer of a token endpoint into a [Token].
// It reads JSON, and form encoding when the media type says so or the body
// is not JSON (GitHub's classic endpoint, typescript-sdk#759). An error
// status, or an error member in a 200, gives a *[TokenError]; a success
// without access_token, or with a token type other than Bearer, is an error
// too. expires_in (a number or a numeric string) is counted from now; absent
// or 0 means the token never expires. No error message ever quotes the body.
func ParseTokenResponse(status int, contentType string, body []byte, now time.Time) (Token, error) {
	f, perr := parseTokenFields(contentType, body)
	if status < 200 || status > 299 {
		te := &TokenError{Status: status}
		if perr == nil {
			te.Code, te.Description = cleanDescription(f.Error), cleanDescription(f.ErrorDescription)
		}
		return Token{}, te
	}
	if perr != nil {
		return Token{}, perr
	}
	if f.Error != "" {
		return Token{}, &TokenError{Status: status, Code: cleanDescription(f.Error), Description: cleanDescription(f.ErrorDescription)}
	}
	if f.AccessToken == "" {
		return Token{}, errors.New("token response has no access_token")
	}
	if f.TokenType != "" && !strings.EqualFold(f.TokenType, "bearer") {
		return Token{}, fmt.Errorf("token response has token_type %q; only Bearer is supported", cleanDescription(f.TokenType))
	}
	t := Token{AccessToken: f.AccessToken, RefreshToken: f.RefreshToken, Scope: f.Scope, Obtained: now}
	secs, err := parseExpiresIn(f.ExpiresIn)
	if err != nil {
		return Token{}, err
	}
	if secs > 0 {
		t.Expiry = now.Add(time.Duration(secs) * time.Second)
	}
	return t, nil
}

// parseTokenFields decodes a token endpoint body as JSON or as a form.
func parseTokenFields(contentType string, body []byte) (tokenFields, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	trimmed := bytes.TrimSpace(body)
	asForm := mt == "application/x-www-form-urlencoded" || mt == "text/plain"
	if !asForm && len(trimmed) > 0 && trimmed[0] != '{' {
		asForm = true // not JSON whatever the header says
	}
	var f tokenFields
	if asForm {
		vals, err := url.ParseQuery(string(trimmed))
		if err != nil {
			return f, errors.New("token response is neither JSON nor a form")
		}
		f.AccessToken = vals.Get("access_token")
		f.TokenType = vals.Get("token_type")
		f.RefreshToken = vals.Get("refresh_token")
		f.Scope = vals.Get("scope")
		f.Error = vals.Get("error")
		f.ErrorDescription = vals.Get("error_description")
		if e := vals.Get("expires_in"); e != "" {
			f.ExpiresIn = json.RawMessage(strconv.Quote(e))
		}
		if f.AccessToken == "" && f.Error == "" {
			return f, errors.New("token response is neither JSON nor a form")
		}
		return f, nil
	}
	if err := decodeObject(trimmed, &f); err != nil {
		return f, fmt.Errorf("token response: %w", err)
	}
	return f, nil
}

// parseExpiresIn reads expires_in: a JSON number, a numeric string, or
// null/absent (0). Negative values count as 0; absurd ones are capped at ten
// years.
func parseExpiresIn(raw json.RawMessage) (int64, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return 0, nil
	}
	if s[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, errors.New("token response: expires_in is not a number")
		}
		s = strings.TrimSpace(s)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, errors.New("token response: expires_in is not a number")
	}
	const tenYears = 10 * 365 * 24 * 3600
	switch {
	case v <= 0:
		return 0, nil
	case v > tenYears:
		return tenYears, nil
	}
	return int64(v), nil
}

// Token endpoint client authentication methods (RFC 7591 §2).
const (
	authNone        = "none"
	authSecretBasic = "client_secret_basic"
	authSecretPost  = "client_secret_post"
)

// clientCreds identifies the client to an authorization server.
type clientCreds struct {
	id     string
	secret string
	// method is the token endpoint auth method: none, client_secret_basic
	// or client_secret_post.
	method string
	// secretExpires is when the secret expires; zero means never.
	secretExpires time.Time
}

// chooseAuthMethod picks how a client with (or without) a secret
// authenticates at a token endpoint that advertises supported (RFC 8414
// token_endpoint_auth_methods_supported): a client without a secret sends
// only its id; with a secret, client_secret_basic when advertised or when
// nothing is advertised (the RFC 8414 default), else client_secret_post.
func chooseAuthMethod(hasSecret bool, supported []string) string {
	if !hasSecret {
		return authNone
	}
	if len(supported) == 0 || slices.Contains(supported, authSecretBasic) {
		return authSecretBasic
	}
	if slices.Contains(supported, authSecretPost) {
		return authSecretPost
	}
	return authSecretBasic
}

// requestToken POSTs a token request (grant holds grant_type and the
// grant's own parameters, resource included) to endpoint, authenticating as
// creds, and parses the answer.
//
// This is written here rather than taken from golang.org/x/oauth2: its
// refresh path cannot carry the RFC 8707 resource parameter MCP requires on
// refresh requests, it stamps expiry with the wall clock (our schedule runs
// on an injected [Clock]), and its RetrieveError prints raw response bodies,
// which may echo credentials into logs.
func (c *Client) requestToken(ctx context.Context, endpoint string, creds clientCreds, grant url.Values) (Token, error) {
	form := url.Values{}
	for k, v := range grant {
		form[k] = v
	}
	basic := false
	switch creds.method {
	case authSecretBasic:
		basic = true
	case authSecretPost:
		form.Set("client_id", creds.id)
		form.Set("client_secret", creds.secret)
	default:
		form.Set("client_id", creds.id)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return Token{}, fmt.Errorf("token endpoint %s: %w", frame.DisplayURLString(endpoint), err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		// RFC 6749 §2.3.1: form-encode both before Basic.
		req.SetBasicAuth(url.QueryEscape(creds.id), url.QueryEscape(creds.secret))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return Token{}, fmt.Errorf("cannot reach the token endpoint %s: %w", frame.DisplayURLString(endpoint), unwrapURLError(err))
	}
	defer resp.Body.Close()
	body, err := readLimited(resp.Body)
	if err != nil {
		return Token{}, fmt.Errorf("token endpoint %s: %w", frame.DisplayURLString(endpoint), err)
	}
	tok, err := ParseTokenResponse(resp.StatusCode, resp.Header.Get("Content-Type"), body, c.clock.Now())
	var te *TokenError
	if errors.As(err, &te) {
		// A server that echoes what it was sent must not put it in our
		// error messages.
		for _, v := range []string{creds.secret, form.Get("refresh_token"), form.Get("code"), form.Get("code_verifier"), form.Get("device_code")} {
			if len(v) >= 4 {
				te.Description = strings.ReplaceAll(te.Description, v, "[redacted]")
				te.Code = strings.ReplaceAll(te.Code, v, "[redacted]")
			}
		}
	}
	return tok, err
}
