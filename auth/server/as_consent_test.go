package server

import (
	"strings"
	"testing"

	"github.com/matryer/is"
)

// Every value the consent page shows is inert: a client name, scope or
// message full of markup reaches the page as text, in element text and in
// the form's quoted attributes alike.
func TestConsentPageEscapesEveryValue(t *testing.T) {
	is := is.New(t)
	hostile := `"><script>alert(1)</script><a href='x'>&`
	var b strings.Builder
	consentPage(&b, consentValues{
		clientName: hostile, resource: hostile, redirectHost: hostile,
		scopes: []string{hostile, "read"}, message: hostile,
		request: hostile, csrf: hostile,
	})
	page := b.String()
	is.True(!strings.Contains(page, "<script"))        // no markup from a value
	is.Equal(strings.Count(page, "&#34;&gt;&lt;"), 7)  // no attribute broken out of
	is.True(!strings.Contains(page, "href='x'"))       // no quote left raw
	is.Equal(strings.Count(page, "&lt;script&gt;"), 7) // all seven places show it as text
	is.True(strings.Contains(page, `name="code"`))     // the one-time code form without passwords
	is.True(strings.Contains(page, "<code>read</code>"))

	b.Reset()
	consentPage(&b, consentValues{passwords: true})
	is.True(strings.Contains(b.String(), `name="password"`))
	is.True(!strings.Contains(b.String(), `class="err"`)) // no message, no alert

	b.Reset()
	writeErrorPage(&b, hostile)
	is.True(!strings.Contains(b.String(), "<script"))
	is.True(strings.Contains(b.String(), "&lt;script&gt;"))
}
