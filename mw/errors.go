package mw

import (
	"context"
	"errors"
	"fmt"

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
