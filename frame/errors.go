package frame

import (
	"encoding/json"
	"strconv"
)

// JSON-RPC and MCP error codes the gateway uses or recognises.
const (
	CodeParseError     = -32700 // the bytes are not JSON
	CodeInvalidRequest = -32600 // JSON, but not a valid request
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeGateway is the gateway's own failure to deliver a request: an HTTP
	// status, a lost session, a broken stream.
	CodeGateway = -32000
	// CodeReauthorizing means a fresh sign-in was started; retry later.
	CodeReauthorizing = -32002
	// CodeHeaderMismatch is MCP 2026-07-28's HeaderMismatch.
	CodeHeaderMismatch = -32020
	// CodeMissingCapability is MCP 2026-07-28's MissingRequiredClientCapability.
	CodeMissingCapability = -32021
	// CodeUnsupportedVersion is MCP 2026-07-28's UnsupportedProtocolVersion.
	CodeUnsupportedVersion = -32022
)

// ErrorResponse builds the error response
// {"jsonrpc":"2.0","id":<id>,"error":{"code":<code>,"message":<msg>}}.
// An absent id is written as null. Invalid UTF-8 is replaced as [Parse]
// does.
func ErrorResponse(id ID, code int, msg string) Message {
	return ErrorResponseData(id, code, msg, nil)
}

// ErrorResponseData is [ErrorResponse] with an error "data" member; data must
// be valid JSON or nil.
func ErrorResponseData(id ID, code int, msg string, data []byte) Message {
	b := make([]byte, 0, 64+len(id)+len(msg)+len(data))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id.Raw()...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = appendString(b, msg)
	if len(data) > 0 && validUnbounded(data) {
		b = append(b, `,"data":`...)
		b = append(b, oneLine(data, false)...)
	}
	b = append(b, "}}"...)
	b, _ = fixUTF8(b) // the id or data may hold invalid UTF-8 (an id probed from a cut line)
	return fromValid(b)
}

// ResultResponse builds {"jsonrpc":"2.0","id":<id>,"result":<result>};
// result must be valid JSON.
func ResultResponse(id ID, result []byte) Message {
	b := make([]byte, 0, 40+len(id)+len(result))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id.Raw()...)
	b = append(b, `,"result":`...)
	b = append(b, oneLine(result, false)...)
	b = append(b, '}')
	b, _ = fixUTF8(b) // the id or result may hold invalid UTF-8
	return fromValid(b)
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	q, err := json.Marshal(s)
	if err != nil { // unreachable for a string
		return append(b, `""`...)
	}
	return append(b, q...)
}

// ErrorCode returns the code of an error response and whether m is one.
func (m Message) ErrorCode() (int, bool) {
	if m.kind != Error {
		return 0, false
	}
	return int(m.Get("error.code").Int()), true
}
