package mw

import (
	"context"
	"net/http"
)

// StreamTransport is what a stage needs from an HTTP transport beyond
// sending messages: the standalone stream a session-era server uses for
// server-initiated messages, and ending the session. A transport satisfies
// it structurally; mw never imports transport.
type StreamTransport interface {
	// Listen opens the server's standalone stream (HTTP GET) with the given
	// extra headers, calls opened (when not nil) once the server has
	// answered with the stream, and hands every message on it client-bound,
	// until the stream ends or ctx is done. It returns the stream's last
	// event id, for a Last-Event-ID on the next Listen, and why the stream
	// ended: a *frame.StatusError for a refusal (405 means the server offers
	// no stream), a *frame.SendError for a broken connection, nil for a
	// clean end of stream.
	Listen(ctx context.Context, h http.Header, opened func()) (lastEventID string, err error)
	// EndSession asks the server to end the session the headers name (HTTP
	// DELETE). A 405 (the server does not allow it) is not an error.
	EndSession(ctx context.Context, h http.Header) error
}
