package auth

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestParseTokenResponse(t *testing.T) {
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	ok := []struct {
		name, ctype, body string
		want              Token
	}{
		{
			name: "json", ctype: "application/json; charset=utf-8",
			body: `{"access_token":"at","token_type":"Bearer","expires_in":3600,"refresh_token":"rt","scope":"a b","extra":1}`,
			want: Token{AccessToken: "at", RefreshToken: "rt", Scope: "a b", Expiry: now.Add(time.Hour), Obtained: now},
		},
		{
			name: "json lowercase bearer, expires_in as string", ctype: "application/json",
			body: `{"access_token":"at","token_type":"bearer","expires_in":"60"}`,
			want: Token{AccessToken: "at", Expiry: now.Add(time.Minute), Obtained: now},
		},
		{
			name: "no expires_in never expires (claude-code#26281)", ctype: "application/json",
			body: `{"access_token":"at"}`,
			want: Token{AccessToken: "at", Obtained: now},
		},
		{
			name: "null and negative expires_in", ctype: "application/json",
			body: `{"access_token":"at","expires_in":-5}`,
			want: Token{AccessToken: "at", Obtained: now},
		},
		{
			name: "form (GitHub, typescript-sdk#759)", ctype: "application/x-www-form-urlencoded",
			body: `access_token=gho_x&scope=repo%2Cgist&token_type=bearer&expires_in=28800&refresh_token=ghr_y`,
			want: Token{AccessToken: "gho_x", RefreshToken: "ghr_y", Scope: "repo,gist", Expiry: now.Add(8 * time.Hour), Obtained: now},
		},
		{
			name: "form with a JSON content type", ctype: "application/json",
			body: `access_token=at&token_type=bearer`,
			want: Token{AccessToken: "at", Obtained: now},
		},
		{
			name: "json without content type", ctype: "",
			body: ` {"access_token":"at"} `,
			want: Token{AccessToken: "at", Obtained: now},
		},
	}
	for _, tt := range ok {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got, err := ParseTokenResponse(200, tt.ctype, []byte(tt.body), now)
			is.NoErr(err)
			is.Equal(got, tt.want)
		})
	}

	bad := []struct {
		name   string
		status int
		ctype  string
		body   string
		code   string // TokenError code, "" if not a TokenError
	}{
		{"400 invalid_grant", 400, "application/json", `{"error":"invalid_grant","error_description":"revoked"}`, "invalid_grant"},
		{"200 carrying error (GitHub)", 200, "application/x-www-form-urlencoded", `error=bad_verification_code&error_description=The+code+is+wrong`, "bad_verification_code"},
		{"200 carrying error in JSON", 200, "application/json", `{"error":"invalid_request"}`, "invalid_request"},
		{"500 with html", 500, "text/html", `<html>oops</html>`, ""},
		{"no access_token", 200, "application/json", `{"token_type":"Bearer"}`, ""},
		{"not a bearer token", 200, "application/json", `{"access_token":"at","token_type":"DPoP"}`, ""},
		{"garbage", 200, "application/json", `{"access_token":`, ""},
		{"expires_in not a number", 200, "application/json", `{"access_token":"at","expires_in":"soon"}`, ""},
		{"expires_in wrong type", 200, "application/json", `{"access_token":"at","expires_in":true}`, ""},
		{"access_token wrong type", 200, "application/json", `{"access_token":42}`, ""},
		{"empty", 200, "application/json", ``, ""},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			_, err := ParseTokenResponse(tt.status, tt.ctype, []byte(tt.body), now)
			is.True(err != nil)
			var te *TokenError
			if tt.code != "" {
				is.True(errors.As(err, &te))
				is.Equal(te.Code, tt.code)
			}
			if tt.body != "" {
				is.True(!strings.Contains(err.Error(), tt.body)) // bodies are never quoted
			}
		})
	}
}

func TestTokenErrorClassification(t *testing.T) {
	is := is.New(t)
	is.True((&TokenError{Status: 400, Code: "invalid_grant"}).deadGrant())
	is.True((&TokenError{Status: 401, Code: "invalid_client"}).deadGrant())
	is.True((&TokenError{Status: 200, Code: "bad_refresh_token"}).deadGrant())
	is.True(!(&TokenError{Status: 503}).deadGrant()) // transient
	is.True(!(&TokenError{Status: 429}).deadGrant())
	is.Equal((&TokenError{Status: 400, Code: "invalid_grant", Description: "gone"}).Error(), "invalid_grant: gone")
	is.Equal((&TokenError{Status: 503}).Error(), "HTTP 503")
	long := strings.Repeat("é", 300) + "\n\x1b[31m"
	d := cleanDescription(long)
	is.True(len(d) <= maxDescription+len("…"))
	is.True(!strings.ContainsAny(d, "\n\x1b"))
}

func FuzzParseTokenResponse(f *testing.F) {
	for _, s := range []struct {
		status int
		ctype  string
		body   string
	}{
		{200, "application/json", `{"access_token":"at","token_type":"Bearer","expires_in":3600,"refresh_token":"rt"}`},
		{200, "application/x-www-form-urlencoded", `access_token=a&expires_in=10`},
		{200, "text/plain", `error=bad_verification_code`},
		{400, "application/json", `{"error":"invalid_grant"}`},
		{200, "", `{"access_token":"a","expires_in":"1e400"}`},
		{500, "text/html", `<html>`},
		{200, "application/json", `{"access_token":"a","expires_in":9223372036854775807}`},
		{200, "application/json", `{"access_token":"a","token_type":"Bearer","access_token":"b","expires_in":1,"expires_in":-5}`},
		{200, "application/json", `{"access_token":"a","x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`},
	} {
		f.Add(s.status, s.ctype, []byte(s.body))
	}
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, status int, ctype string, body []byte) {
		tok, err := ParseTokenResponse(status, ctype, body, now)
		if err != nil {
			return
		}
		if status < 200 || status > 299 {
			t.Fatalf("accepted HTTP %d", status)
		}
		if tok.AccessToken == "" {
			t.Fatal("accepted a response without access_token")
		}
		if !tok.Expiry.IsZero() && (tok.Expiry.Before(now) || tok.Expiry.After(now.Add(11*365*24*time.Hour))) {
			t.Fatalf("expiry %v out of range", tok.Expiry)
		}
	})
}
