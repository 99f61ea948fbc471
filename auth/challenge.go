package auth

import (
	"net/http"
	"slices"
	"strings"
)

// Challenge is one authentication challenge from a WWW-Authenticate header
// (RFC 9110 §11.6.1): a scheme and either auth-params or a token68.
type Challenge struct {
	// Scheme is the auth-scheme as sent ("Bearer", "Negotiate", …); compare
	// it with strings.EqualFold.
	Scheme string
	// Params holds the auth-params with lowercased names and unquoted
	// values. A repeated name keeps its first value.
	Params map[string]string
	// Token68 is the token68 form of the credentials, when the challenge
	// used it instead of params.
	Token68 string
}

// ParseWWWAuthenticate parses the values of WWW-Authenticate header fields
// into challenges. It is lenient, as a client must be with what servers
// send: unparseable bytes are skipped, never a reason to fail, so the result
// holds every challenge that could be read.
func ParseWWWAuthenticate(values []string) []Challenge {
	var out []Challenge
	for _, v := range values {
		p := challengeParser{s: v}
		out = p.parse(out)
	}
	return out
}

// ChallengeParam returns the value of param (lowercase) in the first
// challenge that has it, preferring Bearer challenges, and whether one did.
func ChallengeParam(cs []Challenge, param string) (string, bool) {
	for pass := 0; pass < 2; pass++ {
		for _, c := range cs {
			if (pass == 0) != strings.EqualFold(c.Scheme, "Bearer") {
				continue
			}
			if v, ok := c.Params[param]; ok {
				return v, true
			}
		}
	}
	return "", false
}

// challengeHints is what a 401 or 403 tells a client about signing in.
type challengeHints struct {
	resourceMetadata string   // RFC 9728 §5.1 resource_metadata
	scopes           []string // scope, split
	err              string   // error, e.g. insufficient_scope
}

// hintsFrom reads the OAuth hints of a response's WWW-Authenticate fields.
func hintsFrom(h http.Header) challengeHints {
	cs := ParseWWWAuthenticate(h.Values("WWW-Authenticate"))
	var hints challengeHints
	hints.resourceMetadata, _ = ChallengeParam(cs, "resource_metadata")
	if s, ok := ChallengeParam(cs, "scope"); ok {
		hints.scopes = splitScopes(s)
	}
	hints.err, _ = ChallengeParam(cs, "error")
	return hints
}

// splitScopes splits a space-delimited scope string, dropping empties and
// duplicates.
func splitScopes(s string) []string {
	var out []string
	for _, f := range strings.Fields(s) {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// challengeParser is a cursor over one header value.
type challengeParser struct {
	s string
	i int
}

func (p *challengeParser) eof() bool { return p.i >= len(p.s) }

func (p *challengeParser) peek() byte {
	if p.eof() {
		return 0
	}
	return p.s[p.i]
}

// skipWS skips spaces and tabs.
func (p *challengeParser) skipWS() {
	for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// skipListSeparators skips whitespace and empty list elements.
func (p *challengeParser) skipListSeparators() {
	for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == ',') {
		p.i++
	}
}

// token reads a token (RFC 9110 tchar+), or "" if none starts here.
func (p *challengeParser) token() string {
	start := p.i
	for !p.eof() && isTchar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// token68 reads a token68 and reports whether one ends here: its characters,
// then any '=' padding, then only whitespace before a ',' or the end.
func (p *challengeParser) token68() (string, bool) {
	start := p.i
	for !p.eof() && isToken68Char(p.s[p.i]) {
		p.i++
	}
	if p.i == start {
		return "", false
	}
	for !p.eof() && p.s[p.i] == '=' {
		p.i++
	}
	end := p.i
	p.skipWS()
	if !p.eof() && p.peek() != ',' {
		p.i = start
		return "", false
	}
	return p.s[start:end], true
}

// quoted reads a quoted-string starting at '"' and returns it unescaped. An
// unterminated string runs to the end of the value.
func (p *challengeParser) quoted() string {
	p.i++ // opening quote
	var b strings.Builder
	for !p.eof() {
		c := p.s[p.i]
		p.i++
		switch c {
		case '"':
			return b.String()
		case '\\':
			if !p.eof() {
				b.WriteByte(p.s[p.i])
				p.i++
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// parse appends the challenges of the whole value to out.
func (p *challengeParser) parse(out []Challenge) []Challenge {
	for {
		p.skipListSeparators()
		if p.eof() {
			return out
		}
		scheme := p.token()
		if scheme == "" {
			p.i++ // not a challenge: skip the byte and resynchronise
			continue
		}
		c := Challenge{Scheme: scheme}
		sawSpace := !p.eof() && (p.peek() == ' ' || p.peek() == '\t')
		p.skipWS()
		if sawSpace {
			p.params(&c)
		}
		out = append(out, c)
	}
}

// params reads the auth-params (or token68) of the challenge c, stopping
// before the scheme of the next challenge.
func (p *challengeParser) params(c *Challenge) {
	first := true
	for {
		p.skipWS()
		if p.eof() {
			return
		}
		save := p.i
		name := p.token()
		p.skipWS()
		if name == "" || p.peek() != '=' {
			// Not a param. First thing after the scheme: maybe a token68.
			p.i = save
			if first {
				if t, ok := p.token68(); ok {
					c.Token68 = t
					return
				}
			}
			if name == "" && p.peek() != ',' {
				p.i++ // garbage: skip it and try again
				continue
			}
			return // a new challenge starts here, or the list continues
		}
		p.i++ // '='
		p.skipWS()
		var value string
		switch {
		case p.peek() == '"':
			value = p.quoted()
		default:
			value = p.token()
			if value == "" && first && (p.eof() || p.peek() == ',' || p.peek() == '=') {
				// "abc=" or "abc==": a padded token68, not a param.
				p.i = save
				if t, ok := p.token68(); ok {
					c.Token68 = t
					return
				}
				p.i = save + len(name) + 1
			}
		}
		first = false
		if c.Params == nil {
			c.Params = make(map[string]string, 4)
		}
		key := strings.ToLower(name)
		if _, dup := c.Params[key]; !dup {
			c.Params[key] = value
		}
		p.skipWS()
		if p.peek() != ',' {
			if p.eof() {
				return
			}
			// Junk after a value: skip to the next comma.
			for !p.eof() && p.peek() != ',' {
				p.i++
			}
		}
		// A comma: the next element is another param of this challenge if
		// it reads as name=, else the next challenge.
		p.skipListSeparators()
		look := p.i
		n := p.token()
		p.skipWS()
		isParam := n != "" && p.peek() == '='
		p.i = look
		if !isParam {
			return
		}
	}
}

// isTchar reports whether c may appear in an RFC 9110 token.
func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// isToken68Char reports whether c may appear in a token68 before padding.
func isToken68Char(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("-._~+/", c) >= 0
}
