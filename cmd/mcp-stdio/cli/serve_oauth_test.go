package cli

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// OAuth names its URLs from --public-url, or from a loopback --listen with
// a fixed port; anything else is refused with a line saying what to give.
func TestOAuthPublicURL(t *testing.T) {
	for _, tt := range []struct {
		publicURL, listen string
		want, err         string
	}{
		{"https://mcp.example.com/p", "0.0.0.0:8080", "https://mcp.example.com/p", ""},
		{"", "127.0.0.1:8080", "http://127.0.0.1:8080", ""},
		{"", "LOCALHOST:9000", "http://localhost:9000", ""},
		{"", "[::1]:8080", "http://[::1]:8080", ""},
		{"", "0.0.0.0:8080", "", "OAuth needs --public-url URL"},
		{"", ":8080", "", "OAuth needs --public-url URL"},
		{"", "192.168.1.2:8080", "", "OAuth needs --public-url URL"},
		{"", "127.0.0.1:0", "", "give a fixed port"},
	} {
		t.Run(tt.listen, func(t *testing.T) {
			is := is.New(t)
			got, err := oauthPublicURL(tt.publicURL, tt.listen)
			if tt.err != "" {
				is.True(err != nil && strings.Contains(err.Error(), tt.err)) // tt.err
				is.True(!strings.Contains(err.Error(), "\n"))                // one line
				return
			}
			is.NoErr(err)
			is.Equal(got, tt.want)
		})
	}
}

// --require-scope without an OAuth mode is refused; without either, serve
// has no OAuth.
func TestServeRequireScopeNeedsOAuth(t *testing.T) {
	is := is.New(t)
	var f serveFlags
	fs, _ := newServeFlagSet(&f)
	is.NoErr(fs.Parse([]string{"--require-scope", "mcp", "--require-scope", "profile"}))
	is.Equal([]string(f.requireScopes), []string{"mcp", "profile"})
	_, err := f.oauthConfig(t.Context(), slog.New(slog.DiscardHandler))
	is.True(err != nil && strings.Contains(err.Error(), "--require-scope needs OAuth"))

	f = serveFlags{}
	fs, _ = newServeFlagSet(&f)
	is.NoErr(fs.Parse(nil))
	o, err := f.oauthConfig(t.Context(), slog.New(slog.DiscardHandler))
	is.NoErr(err)
	is.True(o == nil)
}
