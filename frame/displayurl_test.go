package frame_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestDisplayURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://example.com/mcp":                         "https://example.com/mcp",
		"https://user:secret@example.com:8443/a/b":        "https://example.com:8443/a/b",
		"https://example.com/mcp?token=secret&x=1":        "https://example.com/mcp?…",
		"https://example.com/mcp?":                        "https://example.com/mcp?…",
		"https://example.com/cb?code=abc#state=x":         "https://example.com/cb?…",
		"http://[::1]:8080/sse#frag":                      "http://[::1]:8080/sse",
		"https://example.com/a%2Fb":                       "https://example.com/a%2Fb",
		"mailto:someone@example.com":                      "mailto:",
		"https://exa mple.com/%zz":                        "(invalid URL)",
		"https://example.com/mcp?access_token=eyJhbGciOi": "https://example.com/mcp?…",
	} {
		is.New(t).Equal(frame.DisplayURLString(in), want)
	}
}
