package frame

import "net/url"

// DisplayURL is u fit for a message or a log line: no user information, a
// query shown only as "?…" (it may carry tokens or codes), no fragment.
// Scheme, host, port and path are as given.
func DisplayURL(u *url.URL) string {
	c := *u
	c.User = nil
	if c.RawQuery != "" || c.ForceQuery {
		c.RawQuery, c.ForceQuery = "…", false
	}
	c.Fragment, c.RawFragment = "", ""
	c.Opaque = ""
	return c.String()
}

// DisplayURLString is [DisplayURL] of the URL s; a string that is not a
// URL shows as "(invalid URL)", never as itself.
func DisplayURLString(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(invalid URL)"
	}
	return DisplayURL(u)
}
