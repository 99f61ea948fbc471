// Package transport moves MCP messages between the gateway and its peers,
// and nothing more: it frames bytes into [frame.Message] values and back,
// and reports how a delivery went. It knows JSON-RPC's shapes (request,
// notification, response, batch; a request's raw id) and HTTP's rules, and
// no MCP method name: MCP's sessions, protocol versions, cancellation,
// retries, and which client exchange an answer belongs to are stages of
// package mw. What stays here is what a transport binding itself defines:
// a POST's response or event stream is read until it has carried the
// answer to the request, found by its raw id (and resumed when it drops
// before); the HTTP+SSE transport of 2024-11-05 ties a client's POSTs to
// its stream (the endpoint URL it was given, a 404 for a stream that is
// gone) and, toward a server, the answers on the one stream to the POSTs
// by raw id.
//
//   - stdio: [Stdio], newline-delimited JSON-RPC over a reader and a
//     writer — the relay's client on stdin and stdout, and serve's
//     children through [Child] (a process in its own group, ended
//     gracefully; on Linux under a supervisor, [Supervise], which ends
//     that group when the gateway dies), with the reading goroutine
//     handing requests on.
//   - HTTP toward a remote server (the relay): the Streamable HTTP client
//     ([StreamableClient]), the HTTP+SSE client of 2024-11-05
//     ([SSEClient]), the automatic choice between them ([Auto]), and the
//     [http.Client] they share ([NewHTTPClient]).
//   - HTTP toward remote clients (serve): [HTTPServer], which hands each
//     request to the pipeline as a Message with the request's headers
//     attached, together with the [Exchange] its answer is written from;
//     [SSEServer], its face for clients of the HTTP+SSE transport of
//     2024-11-05, whose POSTs' exchanges are carried by their session's
//     stream; [LimitConnections], the listener that caps their
//     connections, making room from those silent since their accept,
//     never from a keep-alive connection between requests; a new one
//     waits a bounded time for a slot, then gets 503 with Retry-After.
//     [ConnectionLimit] derives the cap from the open-file limit that
//     [RaiseFileLimit] raises; [HTTP1Server], the HTTP/1.1 server under
//     them, whose connections between requests hold no buffer.
//
// Resource limits are the transports' too: a request body that stops
// arriving is given up ([BodyLimits.ReadTimeout]), and a [frame.Budget]
// given to HTTPServer, Stdio and Child counts the large message buffers
// they hold, process-wide, refusing a body or a line it cannot take; given
// to StreamableClient and SSEClient, it counts the server's bodies and
// events as they arrive, refusing the message it cannot take and nothing
// else. Where a redirect may lead is theirs too: within the server's
// origin only, unless FollowRedirects says otherwise.
//
// A transport sends a Message's bytes exactly as given. Toward a server,
// the side channel of a message ([frame.Message.Header]) becomes request
// headers, and what the server sends back carries the response's headers;
// toward a client, the first message of an answer gives the response's
// header fields. Stages read and set session ids and the like there.
//
// Failures are reported as typed outcomes, so the stages decide with
// knowledge of the method:
//
//   - *[frame.StatusError]: the server answered with an HTTP status >= 400
//     (or an unexpected one); it carries the headers and the start of the
//     body. Toward a client it is the other way round: a stage returns one
//     and [HTTPServer] writes it.
//   - *[frame.SendError]: the message could not be moved, or its answer was
//     lost. Sent is false only when the request certainly never reached the
//     server (DNS, dial or TLS handshake failure before any byte of the
//     request was written); anything later — a reset mid-response, an idle
//     timeout, an invalid body, a stream that ended before the response —
//     reports Sent true.
//   - *[RedirectError]: a redirect (or an HTTP+SSE endpoint) that leads
//     away from the server's origin and was not followed; nothing was
//     sent there. See [StreamableClient.FollowRedirects].
//   - [frame.ErrStreamEnded] and [frame.ErrTooLarge], wrapped in a SendError;
//     errors matching [frame.ErrUnavailable] when the peer is gone for good
//     (no HTTP+SSE endpoint in time, a child that exited).
//   - The caller's context error, when its context ended first.
//
// A transport's Handle satisfies mw.Handler structurally, and
// *[Exchange] satisfies mw.Exchange; this package never imports mw.
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
