package transport

import (
	"errors"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// refusal returns how to answer a message from a client whose envelope is
// invalid (err matches frame.ErrNotJSONRPC): -32600 with the reason, under
// the message's id when it is shaped as a request whose id is fine (its
// sender waits for that id), else under null.
func refusal(err error) (id frame.ID, msg string) {
	var env *frame.EnvelopeError
	if !errors.As(err, &env) {
		return "", "invalid request: not a JSON-RPC message"
	}
	if env.Shape == frame.Request {
		id = env.ID
	}
	return id, "invalid request: " + env.Reason
}

// standIn returns the error response that takes the place of a message
// from a server whose envelope is invalid (err matches
// frame.ErrNotJSONRPC) but which is shaped as a response and names a
// request id that is fine: the request it answers then gets -32603 with
// the reason instead of waiting for an answer that was dropped. ok is false
// for any other bad message, which is dropped.
func standIn(err error) (m frame.Message, ok bool) {
	var env *frame.EnvelopeError
	if !errors.As(err, &env) || !env.Shape.IsResponse() || env.ID.IsZero() {
		return frame.Message{}, false
	}
	return frame.ErrorResponse(env.ID, frame.CodeInternalError, "invalid response from the server: "+env.Reason), true
}
