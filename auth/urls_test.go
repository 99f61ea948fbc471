package auth

import (
	"net/url"
	"testing"

	"github.com/matryer/is"
)

func TestCanonicalResource(t *testing.T) {
	for in, want := range map[string]string{
		"HTTPS://Example.COM:443/mcp?tenant=t1#frag": "https://example.com/mcp?tenant=t1",
		"http://h:80/":          "http://h",
		"http://h:8080/MCP/":    "http://h:8080/MCP/",
		"https://user:pw@h/mcp": "https://h/mcp",
		"https://[::1]:443/x":   "https://[::1]/x",
		"https://[::1]:8443/x":  "https://[::1]:8443/x",
		"https://h":             "https://h",
	} {
		t.Run(in, func(t *testing.T) {
			is := is.New(t)
			got, err := CanonicalResource(in)
			is.NoErr(err)
			is.Equal(got, want)
		})
	}
	for _, bad := range []string{"", "ftp://h/x", "https://", "/relative", "mailto:x@y", "https://h/%zz"} {
		t.Run("bad "+bad, func(t *testing.T) {
			_, err := CanonicalResource(bad)
			is.New(t).True(err != nil)
		})
	}
}

func TestPRMURLs(t *testing.T) {
	for in, want := range map[string][]string{
		// mcp-remote#244: the query survives on the path-aware URL.
		"https://h/mcp?tenant=t1": {"https://h/.well-known/oauth-protected-resource/mcp?tenant=t1", "https://h/.well-known/oauth-protected-resource"},
		"https://h/a/b/":          {"https://h/.well-known/oauth-protected-resource/a/b", "https://h/.well-known/oauth-protected-resource"},
		"https://H:443/":          {"https://h/.well-known/oauth-protected-resource"},
		"http://h:8080":           {"http://h:8080/.well-known/oauth-protected-resource"},
	} {
		t.Run(in, func(t *testing.T) {
			u, _ := url.Parse(in)
			is.New(t).Equal(prmURLs(u), want)
		})
	}
}

func TestASMetadataURLs(t *testing.T) {
	is := is.New(t)
	u, _ := url.Parse("https://as.example/t1")
	// mcp-remote#207: path insertion, then OpenID both ways (MCP 2026-07-28 §9).
	is.Equal(asMetadataURLs(u), []string{
		"https://as.example/.well-known/oauth-authorization-server/t1",
		"https://as.example/.well-known/openid-configuration/t1",
		"https://as.example/t1/.well-known/openid-configuration",
	})
	u, _ = url.Parse("https://as.example/")
	is.Equal(asMetadataURLs(u), []string{
		"https://as.example/.well-known/oauth-authorization-server",
		"https://as.example/.well-known/openid-configuration",
	})
}

func TestIsLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST": true, "localhost.": true,
		"127.0.0.1": true, "127.1.2.3": true, "127.255.255.254": true,
		"::1": true, "0:0:0:0:0:0:0:1": true, "0000:0000:0000:0000:0000:0000:0000:0001": true, "::0:1": true, "::ffff:127.0.0.1": true,
		"::1%lo0":               true,
		"localhost.example.com": false, "mylocalhost": false, "128.0.0.1": false,
		"10.0.0.1": false, "::2": false, "example.com": false, "": false, "0.0.0.0": false,
	} {
		t.Run(host, func(t *testing.T) {
			is.New(t).Equal(IsLoopbackHost(host), want)
		})
	}
}

func TestCheckSecureURL(t *testing.T) {
	for in, ok := range map[string]bool{
		"https://as.example":       true,
		"http://localhost:9000/as": true,
		"http://127.0.0.1/":        true,
		"http://[::1]:8080":        true,
		"http://as.example":        false,
		"http://127.0.0.1.evil.io": false,
		"ftp://as.example":         false,
	} {
		t.Run(in, func(t *testing.T) {
			u, _ := url.Parse(in)
			is.New(t).Equal(checkSecureURL("authorization server", u) == nil, ok)
		})
	}
}

func TestResourceCovers(t *testing.T) {
	server, _ := url.Parse("https://h/mcp/v1?tenant=t1")
	for prm, want := range map[string]bool{
		"https://h/mcp/v1?tenant=t1": true,
		"https://H:443/mcp/v1/":      true, // case, default port, trailing slash
		"https://h/mcp":              true, // a parent path
		"https://h":                  true, // the origin
		"https://h/mc":               false,
		"https://h/mcp/v1/x":         false,
		"https://h/mcp/v1?tenant=t2": false,
		"https://evil.example/mcp":   false,
		"http://h/mcp/v1":            false,
		"https://h/mcp#f":            false,
		"not a url":                  false,
	} {
		t.Run(prm, func(t *testing.T) {
			is.New(t).Equal(resourceCovers(prm, server), want)
		})
	}
}
