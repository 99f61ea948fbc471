package mw

import (
	"errors"
	"fmt"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestAnswerFailures(t *testing.T) {
	is := is.New(t)
	errDown := errors.New("no endpoint event")     // the server cannot be used for any request
	errRefused := errors.New("connection refused") // nor for the handshake
	unusable := func(err error) (error, bool) {
		switch {
		case errors.Is(err, errDown):
			return errors.New("explained: the stream never opened"), true
		case errors.Is(err, errRefused):
			return errors.New("explained: nothing listens there"), false
		}
		var st *frame.StatusError
		if errors.As(err, &st) {
			return fmt.Errorf("explained: HTTP %d", st.Code), false
		}
		return nil, false
	}
	answer := AnswerFailures(unusable)
	initialize := frame.MustParse(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)
	call := frame.MustParse(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{}}`)
	serverError := &frame.StatusError{Code: 400, Body: []byte(`{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"bad version"}}`)}
	for _, c := range []struct {
		name string
		req  frame.Message
		err  error
		want string
	}{
		{"every request", call, errDown, `{"jsonrpc":"2.0","id":"c","error":{"code":-32000,"message":"explained: the stream never opened"}}`},
		{"the handshake", initialize, errRefused, `{"jsonrpc":"2.0","id":0,"error":{"code":-32000,"message":"explained: nothing listens there"}}`},
		{"not the handshake", call, errRefused, `{"jsonrpc":"2.0","id":"c","error":{"code":-32000,"message":"connection refused"}}`},
		{"a status", initialize, &frame.StatusError{Code: 404}, `{"jsonrpc":"2.0","id":0,"error":{"code":-32000,"message":"explained: HTTP 404"}}`},
		{"the server's own error", initialize, serverError, `{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"bad version"}}`},
		{"nothing to explain", initialize, errors.New("other"), `{"jsonrpc":"2.0","id":0,"error":{"code":-32000,"message":"other"}}`},
	} {
		is.Equal(answer(c.req, c.err).String(), c.want) // c.name
	}
	is.Equal(answer(call, fmt.Errorf("%w: %w", frame.ErrCancelled, errDown)).Len(), 0) // a cancelled request gets no answer
	is.Equal(AnswerFailures(nil)(initialize, errRefused).String(), `{"jsonrpc":"2.0","id":0,"error":{"code":-32000,"message":"connection refused"}}`)
}
