package frame

// NewRequest builds {"jsonrpc":"2.0","id":<id>,"method":<method>,"params":<params>},
// without "params" when params is nil; params must be valid JSON or nil.
// It is how a stage writes a request of its own (see package frame/mcp for
// MCP's).
func NewRequest(id ID, method string, params []byte) Message {
	b := make([]byte, 0, 48+len(id)+len(method)+len(params))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id.Raw()...)
	b = append(b, `,"method":`...)
	b = appendString(b, method)
	return finishMessage(b, params)
}

// NewNotification builds {"jsonrpc":"2.0","method":<method>,"params":<params>},
// without "params" when params is nil; params must be valid JSON or nil.
func NewNotification(method string, params []byte) Message {
	b := make([]byte, 0, 40+len(method)+len(params))
	b = append(b, `{"jsonrpc":"2.0","method":`...)
	b = appendString(b, method)
	return finishMessage(b, params)
}

// finishMessage appends params (if any) and the closing brace to b, and
// returns the message.
func finishMessage(b, params []byte) Message {
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, oneLine(params, false)...)
	}
	b = append(b, '}')
	b, _ = fixUTF8(b) // the id or params may hold invalid UTF-8
	return fromValid(b)
}
