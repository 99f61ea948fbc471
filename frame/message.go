// Package frame holds the bytes of MCP: a JSON-RPC [Message] kept as the
// exact bytes that arrived, ids as raw JSON tokens, error envelopes, and the
// two framings MCP uses on the wire — newline-delimited JSON on stdio
// ([Reader], [Writer]) and server-sent events on HTTP ([SSEReader],
// [WriteSSE]).
//
// Nothing in this package re-encodes a message. A Message is read lazily with
// gjson and edited with sjson, so whatever a stage does not mean to change
// stays byte-identical: key order, whitespace inside a line, `1.50`, unknown
// fields and, below the levels where the gateway reads (see
// [EnvelopeError]), duplicate keys all survive a trip through the gateway.
// A message is read once, without recursion, and refused when it nests
// deeper than a limit ([DefaultMaxDepth]) or repeats a member name where
// the gateway and its peer could read two different messages. Frame
// makes two rewrites, both when a message is parsed, so that every message
// leaving the gateway is one line of valid JSON: a message that arrived
// spread over several lines (pretty-printed JSON, a multi-line SSE payload)
// is compacted to one line, which removes only insignificant whitespace;
// and a byte that is not valid UTF-8, which JSON does not allow, becomes
// U+FFFD, the character encoding/json reads it as.
//
// What MCP says of those messages — its revisions, method names, _meta
// keys and the messages the gateway sends of its own — is package
// frame/mcp's, which builds on this one.
package frame

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"net/http"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Kind classifies a JSON-RPC message by its top-level shape.
type Kind uint8

const (
	// Invalid is valid JSON that is not a valid JSON-RPC message: a
	// scalar, an object with neither a method nor a result or an error, or
	// one that breaks a rule of its envelope ([EnvelopeError] lists them;
	// [Message.Err] says which).
	Invalid Kind = iota
	// Request has a method and an id.
	Request
	// Notification has a method and no id.
	Notification
	// Result has an id and a result.
	Result
	// Error has an id and an error.
	Error
	// Batch is a JSON array (batches are legal in MCP 2025-03-26 only).
	Batch
)

// String returns the lower-case name of the kind.
func (k Kind) String() string {
	switch k {
	case Request:
		return "request"
	case Notification:
		return "notification"
	case Result:
		return "result"
	case Error:
		return "error"
	case Batch:
		return "batch"
	}
	return "invalid"
}

// IsResponse reports whether k is a Result or an Error.
func (k Kind) IsResponse() bool { return k == Result || k == Error }

// ID is a JSON-RPC id as its raw JSON token: `7`, `"7"` and `7.0` are three
// different ids, and `null` is the null id. The empty ID means the message has
// no id at all. Correlate on ID, never on a decoded value.
type ID string

// IsZero reports whether the id is absent.
func (id ID) IsZero() bool { return id == "" }

// IsNull reports whether the id is the JSON null token.
func (id ID) IsNull() bool { return id == "null" }

// Raw returns the token as bytes ready to be spliced into JSON; an absent id
// is rendered as null.
func (id ID) Raw() []byte {
	if id == "" {
		return []byte("null")
	}
	return []byte(id)
}

// String returns the raw token ("" for an absent id).
func (id ID) String() string { return string(id) }

// StringID returns the ID of the JSON string s.
func StringID(s string) ID {
	b, _ := json.Marshal(s)
	return ID(b)
}

// IntID returns the ID of the JSON integer n.
func IntID(n int64) ID { return ID(fmt.Sprint(n)) }

// Message is one JSON-RPC message (or a batch) as the exact bytes that
// arrived, plus a side channel of HTTP headers that is never serialised.
//
// A Message is a small value; copying it shares the bytes. The bytes are
// read-only for everybody: never append to [Message.Bytes] or edit it in
// place. Edits go through [Message.Set], which returns a new Message.
//
// The zero Message is invalid and has no bytes.
type Message struct {
	raw []byte
	hdr http.Header
	id  ID // for an Invalid message, the id to answer it under
	// method is a request's or notification's method; for an Invalid
	// message, what its reason names (the member given twice).
	method string
	kind   Kind
	why    reason // why an Invalid message is
	shape  Kind   // the shape of an Invalid message
	// paramsAt and paramsLen locate the value of the envelope's params
	// member in raw when it is an object and the only params (paramsLen 0
	// otherwise), so that reads under params skip the walk to it; idAt is
	// where the id's value starts (0: not known), so that a new id is
	// spliced in without one.
	paramsAt, paramsLen, idAt uint32
	// metaAt and metaLen locate the value of params._meta, from paramsAt,
	// when params is located, _meta is an object and the only one
	// (metaLen 0 otherwise), so that reads under it skip the walk to it.
	metaAt, metaLen uint32
	// metaNames is the name signature of _meta's members (see nameBit),
	// so that a read of a member it lacks reads nothing.
	metaNames uint64
}

// Errors returned by [Parse].
var (
	// ErrSyntax means the bytes are not valid JSON.
	ErrSyntax = errors.New("invalid JSON")
	// ErrEmpty means the bytes hold nothing but whitespace.
	ErrEmpty = errors.New("empty message")
)

// Parse validates b and returns it as a Message. It copies b, so the caller
// may reuse its buffer. Surrounding whitespace is trimmed and a message
// spread over several lines is compacted to one; a byte that is not valid
// UTF-8 (which can only sit inside a string) becomes U+FFFD, as
// encoding/json reads it. Every other byte is kept. Valid JSON that is not a
// valid JSON-RPC message parses with Kind [Invalid]; [Message.Err] says why.
//
// Parse reads b once, without recursion, whatever b holds. JSON nested
// deeper than [DefaultMaxDepth] is refused with an *[EnvelopeError] that
// matches [ErrTooDeep] and says who may be waiting for an answer (the
// members of the envelope are still read). A member name given twice in
// one of the first three levels of the message's objects — the envelope,
// its params, result or error, and the objects in those — makes the
// message [Invalid]: the gateway reads the first of two members, and the
// peer's parser may keep the last. Parse is [Parser.Parse] with the zero
// Parser.
func Parse(b []byte) (Message, error) { return Parser{}.parse(b, true) }

// ParseOwned is [Parse] for a buffer the caller hands over and never touches
// again: it is kept, not copied, when it is already one line of valid
// UTF-8. Use it for a freshly read body or event to save a copy of a large
// message.
func ParseOwned(b []byte) (Message, error) { return Parser{}.parse(b, false) }

// Parse is [Parse] under p's limits.
func (p Parser) Parse(b []byte) (Message, error) { return p.parse(b, true) }

// ParseOwned is [ParseOwned] under p's limits.
func (p Parser) ParseOwned(b []byte) (Message, error) { return p.parse(b, false) }

func (p Parser) parse(b []byte, mustCopy bool) (Message, error) {
	return parseDepth(b, mustCopy, p.Depth())
}

// parseDepth is Parse with the nesting limit maxDepth (-1: none, for a
// batch's elements, which nest less deeply than their batch).
func parseDepth(b []byte, mustCopy bool, maxDepth int) (Message, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return Message{}, ErrEmpty
	}
	var s scanner
	switch err := s.scan(b, maxDepth, true); err {
	case nil:
	case ErrTooDeep:
		return Message{}, tooDeep(b, &s.env, maxDepth)
	default:
		return Message{}, ErrSyntax
	}
	var m Message
	if raw, same := normalize(b, mustCopy); same {
		m = classify(raw, &s.env) // what the scan read of the envelope holds for raw
	} else {
		m = fromValid(raw)
	}
	if s.repeated {
		m = m.invalidate(duplicateMember, s.dup)
	}
	return m, nil
}

// MustParse is Parse for bytes the program wrote itself: literals in tests
// and examples, and messages the gateway builds from a fixed template and
// parts that are already valid JSON (a raw id token, a validated params
// object). It panics on error, which means the caller built invalid JSON:
// a bug, never a peer's input. Bytes from a peer go through [Parse].
func MustParse(s string) Message {
	m, err := Parse([]byte(s))
	if err != nil {
		panic(fmt.Sprintf("frame.MustParse(%q): %v", s, err))
	}
	return m
}

// normalize returns valid JSON b as the bytes of a message: valid UTF-8
// (see fixUTF8) on one line (see oneLine). b is returned as it is when it is
// both already, copied if mustCopy; same reports that case.
func normalize(b []byte, mustCopy bool) (out []byte, same bool) {
	same = true
	if fixed, ok := fixUTF8(b); ok {
		b, mustCopy, same = fixed, false, false
	}
	out = oneLine(b, mustCopy)
	return out, same && len(out) == len(b)
}

// oneLine returns valid JSON b as a single line. In valid JSON a CR or LF can
// only be insignificant whitespace (inside strings they must be escaped), so
// a line break means the value was pretty-printed and is compacted. When b is
// already one line it is returned as is, copied if mustCopy.
func oneLine(b []byte, mustCopy bool) []byte {
	if bytes.IndexByte(b, '\n') < 0 && bytes.IndexByte(b, '\r') < 0 {
		if mustCopy {
			return bytes.Clone(b)
		}
		return b
	}
	var buf bytes.Buffer
	buf.Grow(len(b))
	if err := json.Compact(&buf, b); err != nil {
		// Unreachable for valid JSON; fall back to dropping the breaks.
		buf.Reset()
		for _, c := range b {
			if c != '\n' && c != '\r' {
				buf.WriteByte(c)
			}
		}
	}
	return buf.Bytes()
}

// view returns raw as a gjson document without copying. Results taken from
// it point into raw, which is safe because message bytes are never mutated.
func view(raw []byte) gjson.Result {
	return gjson.Parse(unsafe.String(unsafe.SliceData(raw), len(raw)))
}

// knownMethods are interned so classifying a message allocates nothing for
// its method name.
var knownMethods = func() map[string]string {
	ms := []string{
		"initialize", "ping", "server/discover", "subscriptions/listen",
		"tools/list", "tools/call", "prompts/list", "prompts/get",
		"resources/list", "resources/read", "resources/templates/list",
		"resources/subscribe", "resources/unsubscribe", "completion/complete",
		"logging/setLevel", "sampling/createMessage", "elicitation/create",
		"roots/list", "notifications/initialized", "notifications/cancelled",
		"notifications/progress", "notifications/message",
		"notifications/tools/list_changed", "notifications/prompts/list_changed",
		"notifications/resources/list_changed", "notifications/resources/updated",
		"notifications/roots/list_changed", "notifications/subscriptions/acknowledged",
	}
	m := make(map[string]string, len(ms))
	for _, s := range ms {
		m[s] = s
	}
	return m
}()

func internMethod(s string) string {
	if k, ok := knownMethods[s]; ok {
		return k
	}
	return strings.Clone(s)
}

// Bytes returns the message bytes: one line, no trailing newline. They are
// shared and must not be modified.
func (m Message) Bytes() []byte { return m.raw }

// String returns the message bytes as a string (a copy).
func (m Message) String() string { return string(m.raw) }

// Len returns the size of the message in bytes.
func (m Message) Len() int { return len(m.raw) }

// Contains reports whether s is within the message's bytes, as they stand
// (a JSON escape is not the character it stands for): a quick test before
// a read that can only find a token that is there as it stands.
func (m Message) Contains(s string) bool {
	return strings.Contains(unsafe.String(unsafe.SliceData(m.raw), len(m.raw)), s)
}

// Kind returns the message's shape.
func (m Message) Kind() Kind { return m.kind }

// ID returns the raw id token of a request or response, or "" for a
// notification, a batch or an invalid message.
func (m Message) ID() ID {
	if m.kind == Invalid {
		return ""
	}
	return m.id
}

// Method returns the method of a request or notification, or "".
func (m Message) Method() string {
	if m.kind == Invalid {
		return ""
	}
	return m.method
}

// IsRequest reports whether m is a request.
func (m Message) IsRequest() bool { return m.kind == Request }

// Get reads path (gjson syntax) from the message. The result points into the
// message's bytes and must be treated as read-only.
func (m Message) Get(path string) gjson.Result {
	if len(m.raw) == 0 {
		return gjson.Result{}
	}
	if rest, ok := strings.CutPrefix(path, "params."); ok && m.paramsLen > 0 && plainPath(rest) {
		if m.metaLen > 0 && strings.HasPrefix(rest, "_meta") {
			switch sub := rest[len("_meta"):]; {
			case sub == "":
				return gjson.Result{Type: gjson.JSON, Raw: m.metaRaw(), Index: int(m.paramsAt + m.metaAt)}
			case sub[0] == '.' && len(sub) > 1 && sub[1] != '.':
				// rest is a plain path, and so is what follows "_meta."
				// when plainPath would take it: not empty, no leading '.'.
				if name, _, _ := strings.Cut(sub[1:], "."); m.metaNames&nameBit(name) == 0 && strings.IndexByte(name, '\\') < 0 {
					return gjson.Result{} // _meta has no member of that name
				}
				return at(gjson.Get(m.metaRaw(), sub[1:]), int(m.paramsAt+m.metaAt))
			}
		}
		return at(gjson.Get(m.paramsRaw(), rest), int(m.paramsAt))
	}
	return view(m.raw).Get(path)
}

// at returns r, read from bytes that start at byte offset of the message,
// with its index in the message.
func at(r gjson.Result, offset int) gjson.Result {
	if r.Index > 0 { // 0: not found, or no index
		r.Index += offset
	}
	return r
}

// metaRaw returns the bytes of params._meta; m.metaLen must not be 0.
func (m Message) metaRaw() string {
	from := m.paramsAt + m.metaAt
	raw := m.raw[from : from+m.metaLen]
	return unsafe.String(unsafe.SliceData(raw), len(raw))
}

// Params returns the message's params member, as Get("params") does,
// without reading the members before it when the message was parsed with
// params an object.
func (m Message) Params() gjson.Result {
	if m.paramsLen == 0 {
		return m.Get("params")
	}
	return gjson.Result{Type: gjson.JSON, Raw: m.paramsRaw(), Index: int(m.paramsAt)}
}

// paramsRaw returns the bytes of params; m.paramsLen must not be 0.
func (m Message) paramsRaw() string {
	raw := m.raw[m.paramsAt : m.paramsAt+m.paramsLen]
	return unsafe.String(unsafe.SliceData(raw), len(raw))
}

// plainPath reports whether the gjson path p names members and array
// elements only, with no wildcard, query, modifier, pipe or multipath:
// such a path reads the same from params as "params."+p does from the
// message, index included.
func plainPath(p string) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++ // an escaped character is a plain one
		case '*', '?', '#', '@', '|', '!', '{', '[', '(', ')', '=', '<', '>', '%', '~', ',', ':', '"':
			return false
		}
	}
	return p != "" && p[0] != '.'
}

// Set returns a copy of m with the value at path (sjson syntax) replaced by
// the raw JSON value (compacted to one line, invalid UTF-8 replaced as
// [Parse] does). Every other byte of the message is kept. Keys
// containing '.', '*', '?' or '/' must be escaped with gjson.Escape, or sjson
// nests them.
func (m Message) Set(path string, raw []byte) (Message, error) {
	if len(m.raw) == 0 {
		return Message{}, ErrEmpty
	}
	if !validUnbounded(raw) {
		return Message{}, fmt.Errorf("frame: set %s: %w", path, ErrSyntax)
	}
	out, err := sjson.SetRawBytes(m.raw, path, oneLine(raw, false))
	if err != nil {
		return Message{}, fmt.Errorf("frame: set %s: %w", path, err)
	}
	out, _ = fixUTF8(out) // the value, or a key the path made, may not be valid UTF-8
	n := fromValid(out)
	n.hdr = m.hdr
	return n, nil
}

// Delete returns a copy of m without the value at path. Deleting a path that
// does not exist returns m itself.
func (m Message) Delete(path string) (Message, error) {
	if len(m.raw) == 0 {
		return Message{}, ErrEmpty
	}
	if !m.Get(path).Exists() {
		return m, nil
	}
	out, err := sjson.DeleteBytes(m.raw, path)
	if err != nil {
		return Message{}, fmt.Errorf("frame: delete %s: %w", path, err)
	}
	n := fromValid(out)
	n.hdr = m.hdr
	return n, nil
}

// WithID returns a copy of m whose id is id.
func (m Message) WithID(id ID) (Message, error) {
	if out, ok := m.spliceID(id); ok {
		return out, nil
	}
	return m.Set("id", id.Raw())
}

// spliceID is WithID for the common case, a request or response whose id
// gives way to another id a request may have: the new id's bytes take the
// old one's place, which is what Set writes, without Set's scans of the
// whole message (the kind cannot change, nor can the rest of the bytes).
// It reports false when the case is not that one.
func (m Message) spliceID(id ID) (Message, bool) {
	switch m.kind {
	case Request, Result, Error:
	default:
		return Message{}, false
	}
	if m.id == "" || !requestIDToken(string(id)) {
		return Message{}, false
	}
	var r gjson.Result
	if at := int(m.idAt); at > 0 && at+len(m.id) <= len(m.raw) && string(m.raw[at:at+len(m.id)]) == string(m.id) {
		r.Index, r.Raw = at, string(m.id)
	} else {
		r = view(m.raw).Get("id") // the first "id": the one the envelope read
	}
	if r.Index <= 0 || r.Raw != string(m.id) {
		return Message{}, false
	}
	out := make([]byte, 0, len(m.raw)-len(r.Raw)+len(id))
	out = append(out, m.raw[:r.Index]...)
	out = append(out, id...)
	out = append(out, m.raw[r.Index+len(r.Raw):]...)
	n := m
	n.raw = out
	n.id = ID(unsafe.String(&out[r.Index], len(id))) // a view of n's bytes, as a parsed message's id is
	n.idAt = uint32(r.Index)
	if n.paramsLen > 0 && int(n.paramsAt) > r.Index { // params comes after the id
		shifted := int(n.paramsAt) + len(id) - len(r.Raw)
		if shifted < 0 || uint64(shifted) > math.MaxUint32 {
			n.paramsLen = 0
		} else {
			n.paramsAt = uint32(shifted)
		}
	}
	return n, true
}

// requestIDToken reports whether tok is, as it stands, an id a request may
// have: a JSON string (valid UTF-8, one line) or an integer.
func requestIDToken(tok string) bool {
	if tok == "" {
		return false
	}
	if c := tok[len(tok)-1]; c != '"' && (c < '0' || c > '9') {
		return false // whitespace after the token, or not a token
	}
	switch tok[0] {
	case '"':
		if !utf8.ValidString(tok) {
			return false
		}
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
	default:
		return false
	}
	if !validUnbounded(unsafe.Slice(unsafe.StringData(tok), len(tok))) {
		return false
	}
	switch typeOf(tok) {
	case gjson.String:
		return true
	case gjson.Number:
		return digitsOnly(tok) || isInteger(tok)
	}
	return false
}

// Header returns the message's HTTP side channel: request headers a stage
// wants sent with it (toward a server) or the headers of the HTTP response
// that carried it (toward a client). It is never serialised and may be nil.
// The returned map is shared and must not be modified.
func (m Message) Header() http.Header { return m.hdr }

// WithHeader returns a copy of m whose side channel has key set to value.
func (m Message) WithHeader(key, value string) Message {
	h := make(http.Header, len(m.hdr)+1)
	for k, v := range m.hdr {
		h[k] = v
	}
	h.Set(key, value)
	m.hdr = h
	return m
}

// WithHeaders returns a copy of m carrying h as its side channel. h is kept,
// not copied, and must not be modified afterwards.
func (m Message) WithHeaders(h http.Header) Message {
	m.hdr = h
	return m
}

// Elements yields the messages m carries: m itself, or each element of a
// batch in order, parsed as a Message (an element that is not a JSON-RPC
// message has Kind [Invalid]; a nested array, Kind [Batch]). The elements
// are copies; m is not changed.
func (m Message) Elements() iter.Seq[Message] {
	return func(yield func(Message) bool) {
		if m.kind != Batch {
			yield(m)
			return
		}
		view(m.raw).ForEach(func(_, el gjson.Result) bool {
			e, err := parseDepth([]byte(el.Raw), true, -1) // the batch was held to the limit
			if err != nil {
				e = Message{}
			}
			return yield(e)
		})
	}
}

// FirstRequestID returns the id of the first request m carries — m itself,
// or the first request element of a batch — and whether it carries one.
func (m Message) FirstRequestID() (ID, bool) {
	for el := range m.Elements() {
		if el.kind == Request {
			return el.id, true
		}
	}
	return "", false
}
