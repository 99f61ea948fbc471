package mw

import (
	"context"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// reservedMetaPrefix starts every _meta key MCP reserves for itself; the
// 2026-07-28 request keys ([MetaProtocolVersion], …) carry it.
const reservedMetaPrefix = mcp.MetaPrefix

// StripModernMeta returns the era bridge that makes the requests of a
// 2026-07-28 client fit for a server of the session era, which has no use
// for their per-request _meta and may refuse it (a dual-era Python server
// answers -32600 on a session-era connection). Serve lists it nearest the
// child in the entry chain of a child that speaks only the session era,
// and the relay in its session-era chain for the lines of a 2026-07-28
// host (see the package documentation).
//
// Server-bound, from each request and notification of a 2026-07-28
// client ([ClassifyEra]) it removes every params._meta key that starts
// with "io.modelcontextprotocol/" (the protocol version, the client's
// capabilities and info, the log level, …), and _meta itself when no key
// is left. Nothing else is touched: the other keys (progressToken,
// traceparent, a vendor's), their order and every byte between them stay
// as the client wrote them, and so do inputResponses and requestState,
// which belong to the MRTR stage outside. A message with no such key —
// and every message of a session-era client, whose _meta may hold keys
// of that prefix that its server does know (a task's) — passes as the
// same bytes. Client-bound traffic passes untouched.
func StripModernMeta() Middleware {
	return ServerBound(func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, m frame.Message) error {
			if k := m.Kind(); (k != frame.Request && k != frame.Notification) || ClassifyEra(m) != EraStateless {
				return next.Handle(ctx, m)
			}
			return next.Handle(ctx, withoutModernMeta(m))
		})
	})
}

// metaMember is one member of a _meta object: the offsets of its key's
// opening quote and of the end of its value, in the message's bytes.
type metaMember struct {
	start, end int
	drop       bool
}

// withoutModernMeta returns m without the reserved keys of params._meta
// (see StripModernMeta); m itself when it has none, or when the edit
// cannot be made in place.
func withoutModernMeta(m frame.Message) frame.Message {
	return withoutMetaKeys(m, "params._meta", isReservedMetaKey)
}

// isReservedMetaKey reports whether a _meta key is of the prefix MCP
// reserves.
func isReservedMetaKey(key string) bool { return strings.HasPrefix(key, reservedMetaPrefix) }

// withoutMetaKeys returns m without the members of the _meta object at
// path (a gjson path such as "params._meta") whose key drop picks, and
// without that _meta when no member is left; every other byte stays. It
// returns m itself when nothing is dropped, or when the edit cannot be
// made in place.
func withoutMetaKeys(m frame.Message, path string, drop func(key string) bool) frame.Message {
	meta := m.Get(path)
	if !meta.IsObject() {
		return m
	}
	raw := m.Bytes()
	var members []metaMember
	drops, bad := 0, false
	meta.ForEach(func(key, value gjson.Result) bool {
		mm := metaMember{start: key.Index, end: value.Index + len(value.Raw), drop: drop(key.Str)}
		if !located(raw, key) || !located(raw, value) {
			bad = true
			return false
		}
		if mm.drop {
			drops++
		}
		members = append(members, mm)
		return true
	})
	if drops == 0 || bad || !located(raw, meta) {
		return m
	}
	if drops == len(members) {
		out, err := m.Delete(path)
		if err != nil {
			return m
		}
		return out
	}
	// Keep the members that stay, each with the separator that came
	// before it (the first kept one with the object's opening).
	objEnd := meta.Index + len(meta.Raw)
	out := make([]byte, 0, len(raw))
	out = append(out, raw[:members[0].start]...)
	first := true
	for i, mm := range members {
		if mm.drop {
			continue
		}
		if !first {
			out = append(out, raw[members[i-1].end:mm.start]...)
		}
		first = false
		out = append(out, raw[mm.start:mm.end]...)
	}
	out = append(out, raw[members[len(members)-1].end:objEnd]...)
	out = append(out, raw[objEnd:]...)
	edited, err := frame.ParseOwned(out)
	if err != nil {
		return m
	}
	return edited.WithHeaders(m.Header())
}
