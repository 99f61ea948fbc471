package frame

import (
	"encoding/hex"
	"strings"
	"time"
)

// W3C Trace Context (https://www.w3.org/TR/trace-context/): the two HTTP
// header fields that carry a trace across processes, and the names MCP
// gives them in a message's params._meta.
const (
	HeaderTraceParent = "Traceparent"
	HeaderTraceState  = "Tracestate"
	MetaTraceParent   = "traceparent"
	MetaTraceState    = "tracestate"
)

// TraceParent is a parsed traceparent: the trace a message belongs to, the
// span that sent it (the parent of the receiver's span) and the trace
// flags. The zero value is invalid.
type TraceParent struct {
	TraceID [16]byte
	SpanID  [8]byte
	Flags   byte
}

// ParseTraceParent parses a traceparent as W3C Trace Context level 1 says
// a receiver must: version, trace-id, parent-id and trace-flags in
// lowercase hex, separated by '-'; version ff, an all-zero trace-id or
// parent-id, and for version 00 anything beyond the four fields are
// invalid. A later version may append fields after a '-', which are
// ignored. It reports false for anything invalid: such a traceparent is
// ignored, never passed on.
func ParseTraceParent(s string) (TraceParent, bool) {
	var t TraceParent
	if len(s) < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return t, false
	}
	var ver [1]byte
	if !lowerHex(ver[:], s[0:2]) || ver[0] == 0xff {
		return t, false
	}
	if ver[0] == 0 && len(s) != 55 || len(s) > 55 && s[55] != '-' {
		return t, false
	}
	var flags [1]byte
	if !lowerHex(t.TraceID[:], s[3:35]) || !lowerHex(t.SpanID[:], s[36:52]) || !lowerHex(flags[:], s[53:55]) {
		return t, false
	}
	t.Flags = flags[0]
	if t.TraceID == ([16]byte{}) || t.SpanID == ([8]byte{}) {
		return t, false
	}
	return t, true
}

// lowerHex decodes the lowercase hex s into dst, which it fills exactly.
func lowerHex(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	_, err := hex.Decode(dst, []byte(s))
	return err == nil
}

// Valid reports whether t could have been parsed: its ids are not zero.
func (t TraceParent) Valid() bool {
	return t.TraceID != [16]byte{} && t.SpanID != [8]byte{}
}

// Sampled reports the sampled flag.
func (t TraceParent) Sampled() bool { return t.Flags&1 == 1 }

// TraceIDString returns the trace id in lowercase hex, as logs show it.
func (t TraceParent) TraceIDString() string { return hex.EncodeToString(t.TraceID[:]) }

// String returns t as a traceparent of version 00.
func (t TraceParent) String() string {
	b := make([]byte, 0, 55)
	b = append(b, "00-"...)
	b = hex.AppendEncode(b, t.TraceID[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, t.SpanID[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, []byte{t.Flags})
	return string(b)
}

// maxTraceStateMembers is how many list-members a tracestate may have.
const maxTraceStateMembers = 32

// ValidTraceState reports whether s is a tracestate W3C Trace Context
// level 1 allows: at most 32 comma-separated list-members (empty ones
// and spaces or tabs around them allowed), each key=value with a key of
// the grammar's simple or multi-tenant form, appearing once, and a value
// of 1 to 256 printable ASCII characters other than ',' and '=' that
// does not end with a space. An invalid tracestate is ignored, never
// passed on.
func ValidTraceState(s string) bool {
	seen := make([]string, 0, 4)
	for member := range strings.SplitSeq(s, ",") {
		member = strings.Trim(member, " \t")
		if member == "" {
			continue
		}
		key, value, ok := strings.Cut(member, "=")
		if !ok || !validTraceStateKey(key) || !validTraceStateValue(value) {
			return false
		}
		for _, k := range seen {
			if k == key {
				return false
			}
		}
		if len(seen) == maxTraceStateMembers {
			return false
		}
		seen = append(seen, key)
	}
	return true
}

func validTraceStateKey(k string) bool {
	tenant, system, multi := strings.Cut(k, "@")
	if !multi {
		return keyPart(k, 256, false)
	}
	return keyPart(tenant, 241, true) && keyPart(system, 14, false)
}

// keyPart checks one part of a tracestate key: 1 to max characters of
// lowercase letters, digits, '_', '-', '*' and '/', the first a letter
// (or, when digitFirst, a letter or a digit).
func keyPart(s string, max int, digitFirst bool) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9':
			if i == 0 && !digitFirst {
				return false
			}
		case c == '_' || c == '-' || c == '*' || c == '/':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func validTraceStateValue(v string) bool {
	if len(v) == 0 || len(v) > 256 || v[len(v)-1] == ' ' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e || c == ',' || c == '=' {
			return false
		}
	}
	return true
}

// SpanKind is an OpenTelemetry span kind, numbered as OTLP numbers it.
type SpanKind uint8

// The span kinds the gateway records.
const (
	SpanServer SpanKind = 2 // serve: a request it received
	SpanClient SpanKind = 3 // relay: a request it sent
)

// Span is one finished span, as the gateway hands it to an exporter: a
// plain record, with string attributes only.
type Span struct {
	// TraceParent is the span's own context: its trace, its id, its flags.
	TraceParent
	// Parent is the parent span's id; zero for a root span.
	Parent [8]byte
	// TraceState is the tracestate it was started with ("" for none).
	TraceState string
	Name       string
	Kind       SpanKind
	Start, End time.Time
	// Attrs are the span's attributes, in pairs: key, value, key, value…
	Attrs []string
	// Error marks a span whose request failed; Message says how.
	Error   bool
	Message string
}
