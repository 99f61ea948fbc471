package mcp

// The revisions of MCP, named by their dates (revisions compare as
// strings, oldest first).
const (
	Version20241105 = "2024-11-05"
	Version20250326 = "2025-03-26"
	Version20250618 = "2025-06-18"
	Version20251125 = "2025-11-25"
	Version20260728 = "2026-07-28"
)

const (
	// ModernVersion is the newest revision the gateway speaks, the one it
	// asks for first in server/discover: no handshake, _meta on every
	// request.
	ModernVersion = Version20260728
	// LatestSessionEraVersion is the newest revision of the session era
	// (initialize, sessions): what the gateway's own initialize asks for,
	// and what a session-era client that asks for a version unknown to
	// the gateway is offered.
	LatestSessionEraVersion = Version20251125
	// UnversionedVersion is the revision a session-era request without an
	// MCP-Protocol-Version header is taken to speak (the header came with
	// 2025-06-18).
	UnversionedVersion = Version20250326
)

// Feature is what a revision has, one bit each; a revision's features are
// their union.
type Feature uint32

// The features of the revisions.
const (
	// Handshake: a connection opens with initialize and
	// notifications/initialized; the era of sessions.
	Handshake Feature = 1 << iota
	// Sessions: the server keeps state per connection (Mcp-Session-Id on
	// Streamable HTTP, the POST URL on HTTP+SSE); a client may ping, set
	// its log level, subscribe to resources.
	Sessions
	// ServerRequests: the server sends requests of its own (roots/list,
	// sampling/createMessage, elicitation/create, ping).
	ServerRequests
	// HTTPSSE: the HTTP+SSE transport (a GET stream whose endpoint event
	// names the POST URL).
	HTTPSSE
	// StreamableHTTP: the Streamable HTTP transport (one endpoint).
	StreamableHTTP
	// Batches: a POST may carry a JSON-RPC batch. 2025-03-26 names them
	// in its schema; 2024-11-05 takes them as JSON-RPC 2.0 does.
	Batches
	// Resumption: SSE event ids and a GET with Last-Event-ID.
	Resumption
	// VersionHeader: requests after initialize carry MCP-Protocol-Version.
	VersionHeader
	// PrimingEvents: a request's event stream opens with an event that
	// has an id and no data, so that a client can resume before the first
	// message.
	PrimingEvents
	// MetaHandshake: no handshake; every request carries the protocol
	// version and client capabilities in _meta ([MetaProtocolVersion],
	// [MetaClientCapabilities]), and MCP-Protocol-Version must equal it.
	MetaHandshake
	// RoutingHeaders: a request carries Mcp-Method, Mcp-Name and
	// Mcp-Param-* headers that must equal its body.
	RoutingHeaders
	// Discover: server/discover tells what a server speaks; a refused
	// version is answered -32022 naming the supported ones.
	Discover
	// InputRequired: MRTR; tools/call, prompts/get and resources/read
	// may answer resultType input_required instead of the server sending
	// requests.
	InputRequired
	// Listen: change notifications come only on a subscriptions/listen.
	Listen
	// CacheHints: every result carries resultType, the cacheable ones
	// ttlMs and cacheScope.
	CacheHints
)

// sessionEra is what every revision of the session era has.
const sessionEra = Handshake | Sessions | ServerRequests

// stateless is what the revisions from 2026-07-28 on have.
const stateless = StreamableHTTP | VersionHeader | MetaHandshake | RoutingHeaders | Discover | InputRequired | Listen | CacheHints

// Revision is one revision of MCP and what it has.
type Revision struct {
	Version  string
	Features Feature
}

// revisions are the revisions of MCP, oldest first. Never written.
var revisions = [...]Revision{
	{Version20241105, sessionEra | HTTPSSE | Batches},
	{Version20250326, sessionEra | StreamableHTTP | Batches | Resumption},
	{Version20250618, sessionEra | StreamableHTTP | Resumption | VersionHeader},
	{Version20251125, sessionEra | StreamableHTTP | Resumption | VersionHeader | PrimingEvents},
	{Version20260728, stateless},
}

// Revisions returns the revisions of MCP, oldest first (a copy).
func Revisions() []Revision { return append([]Revision(nil), revisions[:]...) }

// Lookup returns the revision named v; ok is false when v names none.
func Lookup(v string) (r Revision, ok bool) {
	for _, r := range revisions {
		if r.Version == v {
			return r, true
		}
	}
	return Revision{}, false
}

// Has reports whether r has every feature of f.
func (r Revision) Has(f Feature) bool { return r.Features&f == f && f != 0 }

// SessionEra reports whether r is a revision of the session era (it opens
// with initialize).
func (r Revision) SessionEra() bool { return r.Has(Handshake) }

// Known reports whether v names a revision of MCP: one an
// MCP-Protocol-Version header may carry.
func Known(v string) bool {
	_, ok := Lookup(v)
	return ok
}

// Has reports whether revision v is known and has every feature of f.
func Has(v string, f Feature) bool {
	r, ok := Lookup(v)
	return ok && r.Has(f)
}

// IsSessionEra reports whether v names a revision of the session era:
// 2024-11-05, 2025-03-26, 2025-06-18 or 2025-11-25.
func IsSessionEra(v string) bool { return Has(v, Handshake) }

// IsStateless reports whether v names a revision of the era 2026-07-28
// began: no handshake, _meta on every request.
func IsStateless(v string) bool { return Has(v, MetaHandshake) }

// StatelessVersions returns the revisions of the era 2026-07-28 began,
// newest first: the order the gateway prefers them in.
func StatelessVersions() []string {
	var out []string
	for i := len(revisions) - 1; i >= 0; i-- {
		if revisions[i].Has(MetaHandshake) {
			out = append(out, revisions[i].Version)
		}
	}
	return out
}
