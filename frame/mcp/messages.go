package mcp

import (
	"encoding/json"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// The messages the gateway sends of its own. Raw arguments (capabilities,
// clientInfo, _meta) must be valid JSON; ids are raw tokens
// ([frame.ID]).

// Implementation returns the Implementation object
// {"name":<name>,"version":<version>} (an initialize's clientInfo).
func Implementation(name, version string) []byte {
	b := append([]byte(`{"name":`), quote(name)...)
	b = append(b, `,"version":`...)
	b = append(b, quote(version)...)
	return append(b, '}')
}

// InitializeRequest returns the session era's initialize under id,
// asking for version and declaring capabilities and clientInfo (JSON
// objects, see [Implementation]):
//
//	{"jsonrpc":"2.0","id":<id>,"method":"initialize","params":{"protocolVersion":<version>,"capabilities":<capabilities>,"clientInfo":<clientInfo>}}
func InitializeRequest(id frame.ID, version string, capabilities, clientInfo []byte) frame.Message {
	p := make([]byte, 0, 64+len(version)+len(capabilities)+len(clientInfo))
	p = append(p, `{"protocolVersion":`...)
	p = append(p, quote(version)...)
	p = append(p, `,"capabilities":`...)
	p = append(p, capabilities...)
	p = append(p, `,"clientInfo":`...)
	p = append(p, clientInfo...)
	p = append(p, '}')
	return frame.NewRequest(id, MethodInitialize, p)
}

// InitializedNotification returns notifications/initialized, what follows
// a successful initialize.
func InitializedNotification() frame.Message {
	return frame.NewNotification(MethodInitialized, nil)
}

// DiscoverRequest returns server/discover under id, its params holding
// only meta (the _meta object of a 2026-07-28 request: protocol version,
// client capabilities, …).
func DiscoverRequest(id frame.ID, meta []byte) frame.Message {
	p := make([]byte, 0, 10+len(meta))
	p = append(p, `{"_meta":`...)
	p = append(p, meta...)
	p = append(p, '}')
	return frame.NewRequest(id, MethodDiscover, p)
}

// DiscoverRetryVersion is the decision on an answer to server/discover
// (or to any 2026-07-28 request) that refused its version: when m is an
// error -32022 (UnsupportedProtocolVersion) whose data.supported lists
// one of ours, the first such it lists is the version to ask again at.
// ok is false for any other message: a different error, or a -32022
// listing none of ours. Ask again once: a second -32022 means the server
// speaks the stateless era and will not say at which version.
func DiscoverRetryVersion(m frame.Message, ours []string) (version string, ok bool) {
	if code, isErr := m.ErrorCode(); !isErr || code != frame.CodeUnsupportedVersion {
		return "", false
	}
	for _, got := range m.Get("error.data.supported").Array() {
		if got.Type != gjson.String {
			continue
		}
		for _, v := range ours {
			if got.Str == v {
				return v, true
			}
		}
	}
	return "", false
}

// CancelledNotification returns notifications/cancelled for the request
// requestID, with reason when it is not "".
func CancelledNotification(requestID frame.ID, reason string) frame.Message {
	p := make([]byte, 0, 32+len(requestID)+len(reason))
	p = append(p, `{"requestId":`...)
	p = append(p, requestID.Raw()...)
	if reason != "" {
		p = append(p, `,"reason":`...)
		p = append(p, quote(reason)...)
	}
	p = append(p, '}')
	return frame.NewNotification(MethodCancelled, p)
}

// PingRequest returns ping under id (the session era's liveness check).
func PingRequest(id frame.ID) frame.Message {
	return frame.NewRequest(id, MethodPing, nil)
}

// quote returns s as a JSON string.
func quote(s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}
