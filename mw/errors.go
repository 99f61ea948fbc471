package mw

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// ErrorFor returns the error response that answers request req when
// delivering it failed with err. It is what the edge of a pipeline sends
// when Handle returns an error, so that the client never waits forever:
//
//   - a request the client cancelled ([frame.ErrCancelled]) gets no answer:
//     the zero Message;
//   - a [frame.StatusError] whose body is the server's own JSON-RPC error for
//     the request is passed on as the server wrote it;
//   - any other status becomes -32000 "HTTP <code>";
//   - [frame.ErrSessionLost] becomes -32000 "session lost";
//   - a timeout becomes -32000 "request timed out";
//   - everything else becomes -32000 with the error's text.
func ErrorFor(req frame.Message, err error) frame.Message {
	id := req.ID()
	var st *frame.StatusError
	switch {
	case errors.Is(err, frame.ErrCancelled):
		return frame.Message{}
	case errors.As(err, &st):
		if m, ok := st.Response(id); ok {
			return m
		}
		return frame.ErrorResponse(id, frame.CodeGateway, fmt.Sprintf("HTTP %d", st.Code))
	case errors.Is(err, frame.ErrSessionLost):
		return frame.ErrorResponse(id, frame.CodeGateway, "session lost")
	case errors.Is(err, context.DeadlineExceeded):
		return frame.ErrorResponse(id, frame.CodeGateway, "request timed out")
	}
	return frame.ErrorResponse(id, frame.CodeGateway, err.Error())
}

// Unusable tells whether a delivery failure shows that the server cannot
// be used at all, and why: it returns the explanation (nil when err is
// about one request only) and whether it holds for every request (the
// transport cannot reach the server for any) or only for the handshake.
type Unusable func(err error) (why error, everyRequest bool)

// AnswerFailures returns the answer to a request the chain could not
// deliver, for the edge that reads the client's requests (the stdio
// transport's Failed): when unusable explains err, for every request or
// for a first request (initialize, or a 2026-07-28 host's
// server/discover) whose failure was not the server's own JSON-RPC error
// — or was one, on a 401 or 403: the explanation quotes the server's
// words and adds which credentials to give — a -32000 error carrying the
// explanation. A client shows its user the error its first request got,
// so that is where the reason and the remedy must be. Every other
// failure gets [ErrorFor]'s answer. A nil unusable explains nothing.
func AnswerFailures(unusable Unusable) func(req frame.Message, err error) frame.Message {
	return func(req frame.Message, err error) frame.Message {
		if unusable != nil && !errors.Is(err, frame.ErrCancelled) {
			if why, every := unusable(err); why != nil && (every || isFirstRequest(req) && (!serverAnswered(req, err) || refusedAccess(err))) {
				return frame.ErrorResponse(req.ID(), frame.CodeGateway, why.Error())
			}
		}
		return ErrorFor(req, err)
	}
}

// refusedAccess reports whether err is a 401 or 403.
func refusedAccess(err error) bool {
	var st *frame.StatusError
	return errors.As(err, &st) && (st.Code == http.StatusUnauthorized || st.Code == http.StatusForbidden)
}

// serverAnswered reports whether err carries the server's own JSON-RPC
// response to req (an HTTP error status with such a body).
func serverAnswered(req frame.Message, err error) bool {
	var st *frame.StatusError
	if !errors.As(err, &st) {
		return false
	}
	_, ok := st.Response(req.ID())
	return ok
}

// isFirstRequest reports whether m is a request a host begins with:
// initialize, or a 2026-07-28 host's server/discover.
func isFirstRequest(m frame.Message) bool {
	return m.Kind() == frame.Request && (m.Method() == "initialize" || m.Method() == "server/discover")
}
