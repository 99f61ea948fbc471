package cli

import (
	"strings"
	"testing"
)

// The embedded authorization server's flags are checked before serve
// listens, each failure one sentence saying what to do.
func TestServeOAuthFlagsChecked(t *testing.T) {
	for _, c := range []struct {
		f    serveFlags
		want string
	}{
		{serveFlags{listen: "127.0.0.1:0", oauth: serveOAuthFlags{passwordFile: "p"}}, "--oauth-password-file needs --enable-oauth"},
		{serveFlags{listen: "127.0.0.1:0", oauth: serveOAuthFlags{tokenStore: "s"}}, "--token-store needs --enable-oauth"},
		{serveFlags{listen: "127.0.0.1:0", oauth: serveOAuthFlags{redirectURIs: stringList{"https://x/cb"}}}, "--allow-redirect-uri needs --enable-oauth"},
		{serveFlags{listen: "127.0.0.1:0", authToken: "t", oauth: serveOAuthFlags{enable: true}}, "exclude each other"},
		{serveFlags{listen: "0.0.0.0:8080", oauth: serveOAuthFlags{enable: true}}, "needs --public-url"},
	} {
		err := c.f.oauth.check(&c.f)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.f.oauth, err, c.want)
		}
	}
	for _, f := range []serveFlags{
		{listen: "127.0.0.1:0", oauth: serveOAuthFlags{enable: true}},
		{listen: "0.0.0.0:8080", publicURL: "https://mcp.example.com", oauth: serveOAuthFlags{enable: true}},
		{listen: "127.0.0.1:0"},
	} {
		if err := f.oauth.check(&f); err != nil {
			t.Errorf("%+v: %v", f, err)
		}
	}
}

func TestOriginOf(t *testing.T) {
	for in, want := range map[string]string{
		"https://MCP.example.com/prefix?x": "https://mcp.example.com",
		"http://127.0.0.1:8080":            "http://127.0.0.1:8080",
	} {
		if got, err := originOf(in); err != nil || got != want {
			t.Errorf("originOf(%q) = %q, %v", in, got, err)
		}
	}
}
