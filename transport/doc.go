// Package transport moves MCP messages between the gateway and its peers.
//
// Toward remote servers (the relay): the Streamable HTTP client
// ([StreamableClient]), the legacy HTTP+SSE client ([SSEClient]), the
// automatic choice between them ([Auto]), and the [http.Client] they share
// ([NewHTTPClient]).
//
// Toward remote clients and local servers (serve): the Streamable HTTP
// server ([HTTPServer], one session per initialize, each with its own
// backend), a stdio child process ([StartChild], in its own process group,
// ended gracefully), and the header guards that run before any body is read
// ([CheckOrigin], [CheckHost], [LimitBody]).
//
// Transports are byte movers with no MCP policy. They never retry, never
// track sessions, never filter cancellations: those are middleware stages.
// A transport sends [frame.Message] bytes exactly as given and hands what
// the server sends back to a [Sink], with the HTTP response headers attached
// as the message's side channel ([frame.Message.WithHeaders]), so the stages
// above can read session ids and the like.
//
// Failures are reported as typed outcomes, so the stages decide with
// knowledge of the method:
//
//   - *[frame.StatusError]: the server answered with an HTTP status >= 400
//     (or an unexpected one); it carries the headers and the start of the
//     body.
//   - *[frame.SendError]: the message could not be moved, or its answer was
//     lost. Sent is false only when the request certainly never reached the
//     server (DNS, dial or TLS handshake failure before any byte of the
//     request was written); anything later — a reset mid-response, an idle
//     timeout, an invalid body, a stream that ended before the response —
//     reports Sent true.
//   - [frame.ErrStreamEnded] and [frame.ErrTooLarge], wrapped in a SendError.
//   - The caller's context error, when its context ended first.
//
// A transport's Handle satisfies mw.Handler structurally; this package never
// imports mw.
package transport

import (
	"context"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Sink receives the messages a transport reads from its peer. It has the
// shape of mw.Handler, so a chain's client-bound entry satisfies it.
//
// Handle is called from the transport's reading goroutines, possibly
// concurrently (one per in-flight request and one per standing stream), in
// the order each stream delivered its messages. An error means the message
// could not be delivered; the transport stops reading that stream and
// reports the error.
type Sink interface {
	Handle(ctx context.Context, m frame.Message) error
}

// SinkFunc adapts a function to [Sink].
type SinkFunc func(ctx context.Context, m frame.Message) error

// Handle calls f(ctx, m).
func (f SinkFunc) Handle(ctx context.Context, m frame.Message) error { return f(ctx, m) }
