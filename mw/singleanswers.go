package mw

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// SingleAnswers returns the relay's stage that keeps a JSON-RPC batch from
// answering a single request: a stdio client that sent one object gets one
// object back. A batch answers a batch (JSON-RPC 2.0 §6; MCP 2025-03-26,
// the one revision with batches); a client that sent a batch gets the
// server's batch untouched. The stage sits innermost in the relay's chain,
// next to the transport (see the package documentation), so that every
// stage sees single answers.
//
// Server-bound, a request passes untouched, under a context that names it.
// Client-bound, a batch the transport delivers under that context — the
// answer to that request's POST, as a JSON body or as an event of its
// stream — is dealt with:
//
//   - a batch of one message is unwrapped: the message goes on alone, with
//     the batch's HTTP headers (one that is not a valid JSON-RPC message is
//     dropped with a warning);
//   - a batch of several messages that holds the request's response is
//     dropped with a warning, and the request gets -32603 instead: which of
//     its answers to believe is not for the gateway to guess, and -32000,
//     the gateway's code for a request it could not deliver, would say
//     something else — this one reached the server, which answered, so it
//     must not be sent again;
//   - an empty batch is dropped with a warning.
//
// Any other batch — one that does not answer the request, one on the
// standing GET stream or an HTTP+SSE stream — and every other message pass
// untouched.
func SingleAnswers(logger *slog.Logger) Middleware {
	log := loggerOrDiscard(logger)
	return func(next Duplex) Duplex {
		return Duplex{
			ToServer: HandlerFunc(func(ctx context.Context, m frame.Message) error {
				if m.Kind() == frame.Request {
					ctx = context.WithValue(ctx, singleRequestKey{}, m.ID())
				}
				return next.ToServer.Handle(ctx, m)
			}),
			ToClient: HandlerFunc(func(ctx context.Context, m frame.Message) error {
				if m.Kind() == frame.Batch {
					if id, ok := ctx.Value(singleRequestKey{}).(frame.ID); ok {
						return singleAnswer(ctx, next.ToClient, log, id, m)
					}
				}
				return next.ToClient.Handle(ctx, m)
			}),
		}
	}
}

// singleRequestKey marks the context of a single request on its way to
// the transport; its value is the request's id.
type singleRequestKey struct{}

// singleAnswer delivers batch, which came in answer to the single request
// id, as SingleAnswers says.
func singleAnswer(ctx context.Context, next Handler, log *slog.Logger, id frame.ID, batch frame.Message) error {
	var els []frame.Message
	answered := false
	for el := range batch.Elements() {
		els = append(els, el)
		answered = answered || (el.Kind().IsResponse() && el.ID() == id)
	}
	switch {
	case len(els) == 0:
		log.Warn("dropped an empty batch answering a single request", "id", id.String())
		return nil
	case len(els) == 1:
		if err := els[0].Err(); err != nil {
			log.Warn("dropped a batch answering a single request: its message is not valid JSON-RPC", "id", id.String(), "reason", err)
			return nil
		}
		return next.Handle(ctx, els[0].WithHeaders(batch.Header()))
	case answered:
		log.Warn("the server answered a single request with a batch; the request gets an error", "id", id.String(), "messages", len(els))
		msg := fmt.Sprintf("invalid response from the server: a batch of %d messages answers a single request", len(els))
		return next.Handle(ctx, frame.ErrorResponse(id, frame.CodeInternalError, msg).WithHeaders(batch.Header()))
	}
	return next.Handle(ctx, batch)
}
