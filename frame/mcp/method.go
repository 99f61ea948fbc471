package mcp

// Method names.
const (
	// The session era's handshake and liveness.
	MethodInitialize  = "initialize"
	MethodInitialized = "notifications/initialized"
	MethodPing        = "ping"

	// Either side's cancel and progress.
	MethodCancelled = "notifications/cancelled"
	MethodProgress  = "notifications/progress"

	// What 2026-07-28 added.
	MethodDiscover     = "server/discover"
	MethodListen       = "subscriptions/listen"
	MethodAcknowledged = "notifications/subscriptions/acknowledged"

	// A client's requests.
	MethodToolsList         = "tools/list"
	MethodToolsCall         = "tools/call"
	MethodPromptsList       = "prompts/list"
	MethodPromptsGet        = "prompts/get"
	MethodResourcesList     = "resources/list"
	MethodResourcesRead     = "resources/read"
	MethodResourceTemplates = "resources/templates/list"
	MethodSubscribe         = "resources/subscribe"
	MethodUnsubscribe       = "resources/unsubscribe"
	MethodComplete          = "completion/complete"
	MethodSetLevel          = "logging/setLevel"

	// A server's requests (the session era), and what a 2026-07-28
	// server asks for in an input_required result instead.
	MethodRootsList     = "roots/list"
	MethodCreateMessage = "sampling/createMessage"
	MethodElicit        = "elicitation/create"

	// A server's notifications.
	MethodLog                  = "notifications/message"
	MethodToolsListChanged     = "notifications/tools/list_changed"
	MethodPromptsListChanged   = "notifications/prompts/list_changed"
	MethodResourcesListChanged = "notifications/resources/list_changed"
	MethodResourceUpdated      = "notifications/resources/updated"
	MethodElicitationComplete  = "notifications/elicitation/complete"

	// A client's notification of the session era.
	MethodRootsListChanged = "notifications/roots/list_changed"
)

// Class is what MCP says of a method, one bit each.
type Class uint32

// The classes.
const (
	// Request: the method is sent as a request (with an id).
	Request Class = 1 << iota
	// Notification: the method is sent as a notification.
	Notification
	// FromClient: a client sends it.
	FromClient
	// FromServer: a server sends it.
	FromServer
	// Cacheable: a complete result carries ttlMs and cacheScope
	// (2026-07-28, server/utilities/caching: six methods).
	Cacheable
	// ReplaySafe: sending it a second time after the first may have
	// reached the server has no effect beyond sending it once.
	ReplaySafe
	// Paginated: the result is one page of a list ([ListKey]).
	Paginated
	// NeedsSession: only the session era has it; 2026-07-28 removed it
	// (a stateless server does not know it).
	NeedsSession
	// StatelessOnly: only 2026-07-28 and later have it; a session-era
	// server does not know it.
	StatelessOnly
	// TakesInput: a request that may be answered input_required, and so
	// during which a session-era server's requests may be its.
	TakesInput
	// InputRequest: a server may ask it of its client within a call (the
	// methods allowed in inputRequests).
	InputRequest
)

// Has reports whether c has every class of o.
func (c Class) Has(o Class) bool { return c&o == o && o != 0 }

// ClassOf returns the classes of method; 0 for a method MCP does not
// define.
func ClassOf(method string) Class {
	const (
		clientRequest = Request | FromClient
		serverRequest = Request | FromServer
		read          = clientRequest | ReplaySafe
	)
	switch method {
	case MethodInitialize:
		return clientRequest | ReplaySafe | NeedsSession // a duplicate session is just abandoned
	case MethodInitialized:
		return Notification | FromClient | NeedsSession
	case MethodPing:
		return Request | FromClient | FromServer | ReplaySafe | NeedsSession
	case MethodCancelled:
		return Notification | FromClient | FromServer
	case MethodProgress:
		return Notification | FromClient | FromServer
	case MethodDiscover:
		return read | Cacheable | StatelessOnly
	case MethodListen:
		return clientRequest | StatelessOnly
	case MethodAcknowledged:
		return Notification | FromServer | StatelessOnly
	case MethodToolsList, MethodPromptsList, MethodResourcesList, MethodResourceTemplates:
		return read | Cacheable | Paginated
	case MethodToolsCall:
		return clientRequest | TakesInput
	case MethodPromptsGet:
		return read | TakesInput
	case MethodResourcesRead:
		return read | Cacheable | TakesInput
	case MethodSubscribe, MethodUnsubscribe: // subscribing twice is subscribing
		return read | NeedsSession
	case MethodComplete:
		return read
	case MethodSetLevel: // idempotent
		return read | NeedsSession
	case MethodRootsList, MethodCreateMessage, MethodElicit:
		return serverRequest | InputRequest
	case MethodLog, MethodToolsListChanged, MethodPromptsListChanged, MethodResourcesListChanged, MethodResourceUpdated:
		return Notification | FromServer
	case MethodElicitationComplete:
		return Notification | FromServer | NeedsSession
	case MethodRootsListChanged:
		return Notification | FromClient | NeedsSession
	}
	return 0
}

// IsCacheable reports whether a complete result of method must carry
// ttlMs and cacheScope: server/discover, tools/list, prompts/list,
// resources/list, resources/templates/list and resources/read.
func IsCacheable(method string) bool { return ClassOf(method).Has(Cacheable) }

// IsReplaySafe reports whether a request of method may be sent a second
// time after the first may have reached the server. tools/call never is:
// a tool may act on the world.
func IsReplaySafe(method string) bool { return ClassOf(method).Has(ReplaySafe) }

// ListKey returns the member of a paginated list method's result that
// holds the list ("tools", "prompts", "resources", "resourceTemplates"),
// "" for another method.
func ListKey(method string) string {
	switch method {
	case MethodToolsList:
		return "tools"
	case MethodResourcesList:
		return "resources"
	case MethodResourceTemplates:
		return "resourceTemplates"
	case MethodPromptsList:
		return "prompts"
	}
	return ""
}

// Defines reports whether revision v has method, as far as the eras go: a
// method of the session era only ([NeedsSession]) in its revisions, one
// of 2026-07-28 on ([StatelessOnly]) in those, any other known method in
// every revision. It is false for an unknown revision or method.
func Defines(v, method string) bool {
	r, ok := Lookup(v)
	c := ClassOf(method)
	switch {
	case !ok || c == 0:
		return false
	case c.Has(NeedsSession):
		return r.SessionEra()
	case c.Has(StatelessOnly):
		return !r.SessionEra()
	}
	return true
}

// NameMember returns the member of a request's params that its Mcp-Name
// header mirrors (2026-07-28, Streamable HTTP): "name" for tools/call and
// prompts/get, "uri" for resources/read, "" for a method without one.
func NameMember(method string) string {
	switch method {
	case MethodToolsCall, MethodPromptsGet:
		return "name"
	case MethodResourcesRead:
		return "uri"
	}
	return ""
}

// IsStatelessClientRequest reports whether method is a request a client
// of the era 2026-07-28 began may send: server/discover,
// subscriptions/listen, the lists, tools/call, prompts/get,
// resources/read and completion/complete.
func IsStatelessClientRequest(method string) bool {
	c := ClassOf(method)
	return c.Has(Request|FromClient) && !c.Has(NeedsSession)
}

// NamePath is [NameMember] as a path from the message's root
// ("params.name", "params.uri"), "" for a method without one.
func NamePath(method string) string {
	switch method {
	case MethodToolsCall, MethodPromptsGet:
		return "params.name"
	case MethodResourcesRead:
		return "params.uri"
	}
	return ""
}
