package mcp

import "github.com/tidwall/gjson"

// MetaPrefix is the reserved prefix of MCP's own _meta keys.
const MetaPrefix = "io.modelcontextprotocol/"

// The _meta keys 2026-07-28 introduced. A request carries the first four
// (protocol version and client capabilities required), a result the
// server's identity, a listen's frames their subscription.
const (
	MetaProtocolVersion    = MetaPrefix + "protocolVersion"
	MetaClientCapabilities = MetaPrefix + "clientCapabilities"
	MetaClientInfo         = MetaPrefix + "clientInfo"
	MetaLogLevel           = MetaPrefix + "logLevel"
	MetaServerInfo         = MetaPrefix + "serverInfo"
	MetaSubscriptionID     = MetaPrefix + "subscriptionId"
)

// MetaTasksExtension is the extension id the session era's tasks
// capability moved to in 2026-07-28 (under capabilities.extensions).
const MetaTasksExtension = MetaPrefix + "tasks"

// The gjson/sjson paths of the _meta keys where messages carry them: the
// key as gjson.Escape writes it, spelled out so that no path is built per
// message.
const (
	// ParamsProtocolVersion is a request's MetaProtocolVersion.
	ParamsProtocolVersion = `params._meta.io\.modelcontextprotocol\/protocolVersion`
	// ParamsClientCapabilities is a request's MetaClientCapabilities.
	ParamsClientCapabilities = `params._meta.io\.modelcontextprotocol\/clientCapabilities`
	// ParamsClientInfo is a request's MetaClientInfo.
	ParamsClientInfo = `params._meta.io\.modelcontextprotocol\/clientInfo`
	// ParamsLogLevel is a request's MetaLogLevel.
	ParamsLogLevel = `params._meta.io\.modelcontextprotocol\/logLevel`
	// ParamsSubscriptionID is a listen notification's
	// MetaSubscriptionID.
	ParamsSubscriptionID = `params._meta.io\.modelcontextprotocol\/subscriptionId`
	// ResultSubscriptionID is a listen's final result's
	// MetaSubscriptionID.
	ResultSubscriptionID = `result._meta.io\.modelcontextprotocol\/subscriptionId`
	// ResultServerInfo is a result's MetaServerInfo.
	ResultServerInfo = `result._meta.io\.modelcontextprotocol\/serverInfo`
)

// IsModernMetaKey reports whether key is one of the _meta keys 2026-07-28
// introduced (MetaProtocolVersion … MetaSubscriptionID). Other keys of
// the reserved prefix (a session-era task's, an extension's) are not.
func IsModernMetaKey(key string) bool {
	switch key {
	case MetaProtocolVersion, MetaClientCapabilities, MetaClientInfo, MetaLogLevel, MetaServerInfo, MetaSubscriptionID:
		return true
	}
	return false
}

// Claims returns the protocol version and the client capabilities a
// 2026-07-28 request claims in its params._meta, meta (MetaProtocolVersion
// and MetaClientCapabilities), read in one pass over meta rather than a
// path walk for each; a missing one, or a meta that is not an object,
// reads as not there. frame refuses a message that gives a name there
// twice, so each is the only one, as a path would find it.
func Claims(meta gjson.Result) (version, caps gjson.Result) {
	if !meta.IsObject() {
		return version, caps
	}
	meta.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case MetaProtocolVersion:
			if !version.Exists() {
				version = v
			}
		case MetaClientCapabilities:
			if !caps.Exists() {
				caps = v
			}
		}
		return !version.Exists() || !caps.Exists()
	})
	return version, caps
}
