package mw

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// The _meta keys a 2026-07-28 request carries in place of the session
// era's handshake (see [InjectMeta]).
const (
	MetaProtocolVersion    = mcp.MetaProtocolVersion
	MetaClientCapabilities = mcp.MetaClientCapabilities
	MetaClientInfo         = mcp.MetaClientInfo
	MetaLogLevel           = mcp.MetaLogLevel
	MetaServerInfo         = mcp.MetaServerInfo
)

// metaTasksExtension is where a session-era client's tasks capability goes
// among a 2026-07-28 client's capabilities: tasks became an extension.
const metaTasksExtension = mcp.MetaTasksExtension

// MetaOptions configures [InjectMeta].
type MetaOptions struct {
	// ClientVersion is the version in the clientInfo the gateway declares
	// for itself ("mcp-stdio") when the client said nothing of itself;
	// "" means "unknown".
	ClientVersion string
	// Logger receives a debug line for a request it cannot stamp; nil
	// discards.
	Logger *slog.Logger
}

// InjectMeta returns the stage that makes a session-era client's requests
// 2026-07-28 requests: the relay's chain for a 2026-07-28 server lists it
// (see the package documentation), inside [LocalAnswers], which answers
// the handshake this stage stands in for.
//
// It acts only while the connection ([ConnOf]) speaks 2026-07-28, and
// only on server-bound requests of a session-era client ([ClassifyEra]:
// a request whose params._meta already names the protocol version comes
// from a 2026-07-28 client and passes untouched). To each it adds, under
// params._meta:
//
//   - io.modelcontextprotocol/protocolVersion: the modern version the
//     probe settled on ([Conn.Discovery]), [ModernVersion] when none;
//   - io.modelcontextprotocol/clientCapabilities: the capabilities of the
//     client's initialize ([Conn.ClientInitialize]), with tasks moved
//     under extensions as io.modelcontextprotocol/tasks; without an
//     initialize, those a 2026-07-28 client declared last
//     ([Conn.ClientMeta]); {} when the client declared none;
//   - io.modelcontextprotocol/clientInfo: the initialize's clientInfo;
//     without one, the clientInfo a 2026-07-28 client sent last; without
//     that, the gateway's own ({"name":"mcp-stdio","version":
//     ClientVersion}).
//
// The requests it stamps are a session-era client's and the gateway's own
// on the client's behalf (the pages of a list, a listen, a re-list): the
// server sees the same client in all of them.
//   - io.modelcontextprotocol/logLevel: the level of the client's last
//     logging/setLevel ([Conn.LogLevel]), when it sent one.
//
// A key _meta already holds is left as it is, and so is every other byte
// of the request (progressToken, traceparent, unknown keys, their order
// and spelling). A request whose params or _meta is not an object is
// passed unchanged. Notifications, responses and client-bound traffic
// pass untouched.
func InjectMeta(o MetaOptions) Middleware {
	log := loggerOrDiscard(o.Logger)
	return ServerBound(func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, m frame.Message) error {
			c := ConnOf(ctx)
			if c == nil || c.Era() != EraStateless || m.Kind() != frame.Request || ClassifyEra(m) != EraSession {
				return next.Handle(ctx, m)
			}
			_, version := c.Discovery()
			out, err := withModernMeta(m, clientFactsOf(c, frame.Message{}, o.ClientVersion), version, c.LogLevel())
			if err != nil {
				log.Debug("request not stamped with _meta", "method", m.Method(), "id", m.ID().String(), "err", err)
				return next.Handle(ctx, m)
			}
			return next.Handle(ctx, out)
		})
	})
}

// errNotObject reports a params or _meta that is not an object.
type errNotObject string

func (e errNotObject) Error() string { return string(e) + " is not an object" }

// clientFacts is what a 2026-07-28 request says of its client: the raw
// clientInfo object (nil: the key is left out) and client capabilities
// (nil: {}).
type clientFacts struct {
	info, caps []byte
}

// clientFactsOf returns what the gateway's 2026-07-28 requests say of the
// client of c (see InjectMeta): what its session-era initialize said —
// init, when it is one, else the one c recorded — else what a 2026-07-28
// client said in its requests' _meta, else the gateway's own clientInfo
// (with version ownVersion) and no capabilities. c may be nil.
func clientFactsOf(c *Conn, init frame.Message, ownVersion string) clientFacts {
	if init.Len() == 0 && c != nil {
		init, _ = c.ClientInitialize()
	}
	if init.Len() > 0 {
		f := clientFacts{caps: modernCapabilities(init)}
		if info := init.Get("params.clientInfo"); info.IsObject() {
			f.info = []byte(info.Raw)
		}
		return f
	}
	var f clientFacts
	if c != nil {
		f.info, f.caps = c.ClientMeta()
	}
	if f.info == nil {
		f.info = ownClientInfo(ownVersion)
	}
	return f
}

// GatewayName is the name in the clientInfo the gateway declares for
// itself, and in its own initialize.
const GatewayName = "mcp-stdio"

// ownClientInfo returns the gateway's own clientInfo object: GatewayName
// and version ("" means "unknown").
func ownClientInfo(version string) []byte {
	if version == "" {
		version = "unknown"
	}
	return metaObject([]metaEntry{{"name", jsonString(GatewayName)}, {"version", jsonString(version)}})
}

// withModernMeta returns m with the 2026-07-28 request keys added to
// params._meta (see InjectMeta): version ("" means ModernVersion), the
// client's capabilities and clientInfo as f says, and level ("" for
// none). Keys already there are kept.
func withModernMeta(m frame.Message, f clientFacts, version, level string) (frame.Message, error) {
	params := m.Params()
	if params.Exists() && !params.IsObject() {
		return m, errNotObject("params")
	}
	meta := params.Get("_meta")
	if meta.Exists() && !meta.IsObject() {
		return m, errNotObject("params._meta")
	}
	entries := modernMetaEntries(f, version, level)
	if !meta.Exists() {
		return m.Set("params._meta", metaObject(entries))
	}
	out := m
	for _, e := range entries {
		if meta.Get(gjson.Escape(e.key)).Exists() {
			continue
		}
		var err error
		if out, err = out.Set("params._meta."+gjson.Escape(e.key), e.raw); err != nil {
			return m, err
		}
	}
	return out, nil
}

// metaEntry is one key of a 2026-07-28 request's _meta and its raw value.
type metaEntry struct {
	key string
	raw []byte
}

// modernMetaEntries returns the keys InjectMeta adds, in order.
func modernMetaEntries(f clientFacts, version, level string) []metaEntry {
	if version == "" {
		version = ModernVersion
	}
	caps := f.caps
	if caps == nil {
		caps = []byte("{}")
	}
	entries := make([]metaEntry, 0, 4)
	entries = append(entries,
		metaEntry{MetaProtocolVersion, jsonString(version)},
		metaEntry{MetaClientCapabilities, caps},
	)
	if f.info != nil {
		entries = append(entries, metaEntry{MetaClientInfo, f.info})
	}
	if level != "" {
		entries = append(entries, metaEntry{MetaLogLevel, jsonString(level)})
	}
	return entries
}

// modernCapabilities returns the capabilities of a session-era initialize
// as a 2026-07-28 client declares them: the same object, its tasks entry
// moved to extensions["io.modelcontextprotocol/tasks"] (unless that is
// set already). {} when init has no capabilities object.
func modernCapabilities(init frame.Message) []byte {
	if init.Len() == 0 {
		return []byte("{}")
	}
	caps := init.Get("params.capabilities")
	if !caps.IsObject() {
		return []byte("{}")
	}
	raw := []byte(caps.Raw)
	tasks := caps.Get("tasks")
	if !tasks.Exists() {
		return raw
	}
	out, err := sjson.DeleteBytes(raw, "tasks")
	if err != nil {
		return raw
	}
	path := "extensions." + gjson.Escape(metaTasksExtension)
	if ext := gjson.GetBytes(out, "extensions"); ext.Exists() && !ext.IsObject() {
		return out // an extensions that is not an object is kept as the client wrote it
	}
	if gjson.GetBytes(out, path).Exists() {
		return out
	}
	if moved, err := sjson.SetRawBytes(out, path, []byte(tasks.Raw)); err == nil {
		return moved
	}
	return out
}

// metaObject returns the JSON object of entries, in order.
func metaObject(entries []metaEntry) []byte {
	b := []byte{'{'}
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, jsonString(e.key)...)
		b = append(b, ':')
		b = append(b, e.raw...)
	}
	return append(b, '}')
}

// jsonString returns s as a JSON string.
func jsonString(s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}
