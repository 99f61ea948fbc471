package frame

// What MCP says of the requests a server sends its client (the digest,
// §5): their method names, and which client requests may be answered by
// asking for them. Stages name these instead of spelling the strings.

// The requests a server of the session era sends its client, and that a
// 2026-07-28 server asks for in an input_required result instead.
const (
	// MethodRootsList asks the client for its roots.
	MethodRootsList = "roots/list"
	// MethodCreateMessage asks the client to sample its language model.
	MethodCreateMessage = "sampling/createMessage"
	// MethodElicit asks the client to ask its user.
	MethodElicit = "elicitation/create"
)

// IsInputRequest reports whether method is one a server may ask of its
// client within a call: roots/list, sampling/createMessage or
// elicitation/create (the methods allowed in inputRequests).
func IsInputRequest(method string) bool {
	switch method {
	case MethodRootsList, MethodCreateMessage, MethodElicit:
		return true
	}
	return false
}

// TakesInput reports whether a request of method may be answered
// input_required, and so whether a session-era server's requests during
// it may be its: tools/call, prompts/get and resources/read.
func TakesInput(method string) bool {
	switch method {
	case "tools/call", "prompts/get", "resources/read":
		return true
	}
	return false
}
