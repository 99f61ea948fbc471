package frame

// What MCP is, as far as the gateway's era logic needs it: revisions,
// method names and the _meta keys of 2026-07-28 (the digest, §1 and §4).
// Stages name these constants instead of spelling the strings, so that a
// new revision is a change here.

// Protocol revisions.
const (
	// ModernVersion is MCP's 2026-07-28 revision: no handshake, _meta on
	// every request.
	ModernVersion = "2026-07-28"
	// LatestSessionEraVersion is the newest revision of the session era
	// (initialize, sessions).
	LatestSessionEraVersion = "2025-11-25"
)

// IsSessionEraVersion reports whether v names a revision of the session
// era: 2024-11-05, 2025-03-26, 2025-06-18 or 2025-11-25.
func IsSessionEraVersion(v string) bool {
	switch v {
	case "2024-11-05", "2025-03-26", "2025-06-18", LatestSessionEraVersion:
		return true
	}
	return false
}

// Method names the era logic reads.
const (
	// MethodInitialize opens a session-era connection; a 2026-07-28 server
	// does not know it.
	MethodInitialize = "initialize"
	// MethodInitialized is the session era's notification after
	// initialize.
	MethodInitialized = "notifications/initialized"
	// MethodDiscover asks a 2026-07-28 server what it speaks; a session-era
	// server does not know it.
	MethodDiscover = "server/discover"
	// MethodListen is 2026-07-28's subscriptions/listen.
	MethodListen = "subscriptions/listen"
)

// The _meta keys MCP 2026-07-28 introduced. A request carries the first
// four (protocol version and client capabilities required), a result the
// server's identity, a listen's frames their subscription.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// IsModernMetaKey reports whether key is one of the _meta keys 2026-07-28
// introduced (MetaProtocolVersion … MetaSubscriptionID). Other keys of
// the reserved io.modelcontextprotocol/ prefix (a session-era task's, an
// extension's) are not.
func IsModernMetaKey(key string) bool {
	switch key {
	case MetaProtocolVersion, MetaClientCapabilities, MetaClientInfo, MetaLogLevel, MetaServerInfo, MetaSubscriptionID:
		return true
	}
	return false
}
