package golden

import (
	"bytes"
	"fmt"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// The server script language. A script is a list of entries; each answers
// the next request of its shape, in order. Blank lines and lines starting
// with '#' are ignored between and inside entries.
//
//	POST tools/call            match line: HTTP method and, for POST, the shape
//	200 text/event-stream      status line: code and optional Content-Type
//	Mcp-Session-Id: s1         response headers, one per line
//	| event: message           body lines: '|', one optional space, the bytes
//	| data: {"jsonrpc":...}
//	|
//	delay 10s                  body directives, run in order
//
// Match line: "POST <shape> [id=<raw id>]", "GET" or "DELETE" (any method
// works). The shape of a POST is the JSON-RPC method of its body, or
// "response" (a result or an error), "batch" (an array), "invalid" (anything
// else), or "*" (any POST). id= also requires the body's raw top-level id
// (`1` and `"1"` differ). A request takes the first unused entry that
// matches; a request that matches none fails the test and gets a 500.
//
// Status line: "<code> [content type]", or instead one of
//
//	refused   the connection is refused: RoundTrip returns a dial error, the
//	          way net/http reports a request that never left
//	reset     the connection is reset after the request was written:
//	          RoundTrip returns a read error, so the request may have arrived
//
// (refused and reset entries have no headers or body).
//
// Body lines are sent as written, each followed by "\n" ("\r\n" after
// "eol crlf"). Directives:
//
//	delay <duration>  pause the body (fake time; time.ParseDuration syntax)
//	break             end the body with an error (the connection breaks)
//	hold              keep the body open: it carries what other entries
//	                  push, until one of them ends it or the client goes away
//	push <json>       send "event: message\ndata: <json>\n\n" on the most
//	                  recently opened body that holds
//	end-stream        end that held body (a clean end of stream)
//	push id=<raw id> <json>, end-stream id=<raw id>
//	                  the same on the held body that answers the request
//	                  with that raw JSON-RPC id (for two held at once)
//	eol crlf|lf       line ending for the body lines that follow
//
// Without break or hold, a body ends cleanly after its last item.

// entry is one scripted answer.
type entry struct {
	line   int    // line of the match line in the server section, 1-based
	method string // HTTP method
	shape  string // POST only: see above; "" for other methods
	id     string // raw JSON-RPC id to match; "" matches any
	fail   string // "refused" or "reset", else ""
	status int
	header http.Header
	body   []item
	used   bool
}

func (e *entry) String() string {
	s := e.method
	if e.shape != "" {
		s += " " + e.shape
	}
	if e.id != "" {
		s += " id=" + e.id
	}
	return fmt.Sprintf("%s (server line %d)", s, e.line)
}

// matches reports whether e answers a request with this HTTP method and
// body.
func (e *entry) matches(method string, body []byte) bool {
	if e.used || e.method != method {
		return false
	}
	if e.shape != "" && e.shape != "*" && e.shape != shapeOf(body) {
		return false
	}
	if e.id != "" && gjson.GetBytes(body, "id").Raw != e.id {
		return false
	}
	return true
}

// shapeOf classifies a request body for matching.
func shapeOf(body []byte) string {
	v := gjson.ParseBytes(bytes.TrimSpace(body))
	switch {
	case !gjson.ValidBytes(body):
		return "invalid"
	case v.IsArray():
		return "batch"
	case !v.IsObject():
		return "invalid"
	}
	if m := v.Get("method"); m.Type == gjson.String {
		return m.Str
	}
	if v.Get("result").Exists() || v.Get("error").Exists() {
		return "response"
	}
	return "invalid"
}

type itemKind int

const (
	itemData itemKind = iota
	itemDelay
	itemBreak
	itemHold
	itemPush
	itemEndStream
)

// item is one step of a scripted body.
type item struct {
	kind   itemKind
	data   []byte        // itemData: bytes to send; itemPush: the JSON
	d      time.Duration // itemDelay
	target string        // itemPush, itemEndStream: raw id of the held body's request; "" for the latest
}

// parseScript parses a server section.
func parseScript(src []byte) ([]*entry, error) {
	var (
		entries []*entry
		cur     *entry
		state   int // 0: want a match line; 1: want a status line; 2: headers; 3: body
		eol     = "\n"
	)
	lines := strings.Split(string(src), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	for i, line := range lines {
		no := i + 1
		errf := func(format string, args ...any) error {
			return fmt.Errorf("server line %d: %s: %q", no, fmt.Sprintf(format, args...), line)
		}
		line = strings.TrimSuffix(line, "\r")
		if strings.HasPrefix(line, "|") {
			if state < 2 {
				return nil, errf("body line before a status line")
			}
			if cur.fail != "" {
				return nil, errf("a %s entry has no body", cur.fail)
			}
			text := strings.TrimPrefix(line[1:], " ")
			cur.body = appendData(cur.body, text+eol)
			state = 3
			continue
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		word, rest, _ := strings.Cut(trimmed, " ")
		rest = strings.TrimSpace(rest)
		if isHTTPMethod(word) {
			if state == 1 {
				return nil, errf("entry %s has no status line", cur)
			}
			e, err := parseMatch(word, rest)
			if err != nil {
				return nil, errf("%v", err)
			}
			e.line = no
			cur, state, eol = e, 1, "\n"
			entries = append(entries, e)
			continue
		}
		switch state {
		case 0:
			return nil, errf("want a match line (POST <shape>, GET, DELETE)")
		case 1:
			if err := parseStatus(cur, word, rest); err != nil {
				return nil, errf("%v", err)
			}
			state = 2
			continue
		}
		if cur.fail != "" {
			return nil, errf("a %s entry has no headers or body", cur.fail)
		}
		if it, ok, err := parseDirective(word, rest); err != nil {
			return nil, errf("%v", err)
		} else if ok {
			if word == "eol" {
				eol = string(it.data)
			} else {
				cur.body = append(cur.body, it)
			}
			state = 3
			continue
		}
		if state == 3 {
			return nil, errf("unknown body directive (body lines start with '|')")
		}
		name, value, ok := strings.Cut(trimmed, ":")
		if !ok || !isToken(name) {
			return nil, errf("want a header line 'Name: value', a body line '| …' or a directive")
		}
		cur.header.Add(textproto.CanonicalMIMEHeaderKey(name), strings.TrimSpace(value))
	}
	if state == 1 {
		return nil, fmt.Errorf("server: entry %s has no status line", cur)
	}
	return entries, nil
}

// appendData adds body bytes, joining consecutive lines into one chunk.
func appendData(body []item, s string) []item {
	if n := len(body); n > 0 && body[n-1].kind == itemData {
		body[n-1].data = append(body[n-1].data, s...)
		return body
	}
	return append(body, item{kind: itemData, data: []byte(s)})
}

func isHTTPMethod(w string) bool {
	switch w {
	case http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodPut, http.MethodPatch, http.MethodHead, http.MethodOptions:
		return true
	}
	return false
}

func parseMatch(method, rest string) (*entry, error) {
	e := &entry{method: method, header: http.Header{}}
	fields := strings.Fields(rest)
	if method == http.MethodPost {
		if len(fields) == 0 {
			return nil, fmt.Errorf("POST needs a shape (a JSON-RPC method, response, batch, invalid or *)")
		}
		e.shape, fields = fields[0], fields[1:]
	}
	for _, f := range fields {
		raw, ok := strings.CutPrefix(f, "id=")
		if !ok || !gjson.Valid(raw) {
			return nil, fmt.Errorf("unknown match qualifier %q (want id=<raw JSON id>)", f)
		}
		e.id = raw
	}
	return e, nil
}

func parseStatus(e *entry, word, rest string) error {
	switch word {
	case "refused", "reset":
		if rest != "" {
			return fmt.Errorf("%s takes nothing after it", word)
		}
		e.fail = word
		return nil
	}
	code, err := strconv.Atoi(word)
	if err != nil || code < 100 || code > 999 {
		return fmt.Errorf("want a status line '<code> [content type]', refused or reset")
	}
	e.status = code
	if rest != "" {
		e.header.Set("Content-Type", rest)
	}
	return nil
}

// parseDirective parses a body directive; ok is false when word names none.
func parseDirective(word, rest string) (it item, ok bool, err error) {
	noArg := func(k itemKind) (item, bool, error) {
		if rest != "" {
			return item{}, true, fmt.Errorf("%s takes no argument", word)
		}
		return item{kind: k}, true, nil
	}
	switch word {
	case "delay":
		d, err := time.ParseDuration(rest)
		if err != nil || d <= 0 {
			return item{}, true, fmt.Errorf("delay wants a positive duration such as 10s")
		}
		return item{kind: itemDelay, d: d}, true, nil
	case "break":
		return noArg(itemBreak)
	case "hold":
		return noArg(itemHold)
	case "end-stream":
		target, rest, err := cutTarget(rest)
		if err != nil {
			return item{}, true, err
		}
		if rest != "" {
			return item{}, true, fmt.Errorf("end-stream takes only id=<raw id>")
		}
		return item{kind: itemEndStream, target: target}, true, nil
	case "push":
		target, rest, err := cutTarget(rest)
		if err != nil {
			return item{}, true, err
		}
		if !gjson.Valid(rest) || strings.ContainsAny(rest, "\r\n") {
			return item{}, true, fmt.Errorf("push wants one line of valid JSON")
		}
		return item{kind: itemPush, data: []byte(rest), target: target}, true, nil
	case "eol":
		switch rest {
		case "crlf":
			return item{data: []byte("\r\n")}, true, nil
		case "lf":
			return item{data: []byte("\n")}, true, nil
		}
		return item{}, true, fmt.Errorf("eol wants crlf or lf")
	}
	return item{}, false, nil
}

// cutTarget cuts a leading "id=<raw id>" off a push or end-stream
// argument: the raw JSON-RPC id of the request whose held body is meant.
func cutTarget(rest string) (target, after string, err error) {
	f, after, _ := strings.Cut(rest, " ")
	raw, ok := strings.CutPrefix(f, "id=")
	if !ok {
		return "", rest, nil
	}
	if !gjson.Valid(raw) {
		return "", "", fmt.Errorf("id= wants a raw JSON id such as 1 or \"a\"")
	}
	return raw, strings.TrimSpace(after), nil
}

// isToken reports whether s is an HTTP token (RFC 9110), as header names
// are.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
