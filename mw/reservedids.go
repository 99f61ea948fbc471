package mw

import (
	"context"
	"log/slog"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// ReservedIDs returns the stage that keeps the ids stages mint
// ([MintedIDPrefix]) apart from the client's. It sits just inside
// [AnswerOnce], near the client end of the relay's chain (see the package
// documentation):
//
//   - server-bound, a client request whose id is a JSON string starting
//     with "mcp-stdio/ is answered with -32600 under its own id and not
//     sent: its answer could be taken for the answer to a request a stage
//     made (a page, a replayed initialize);
//   - client-bound, an answer to a minted id is dropped (logged at debug):
//     the stage that minted the id had given up on it before it came.
//
// Everything else passes untouched.
func ReservedIDs(logger *slog.Logger) Middleware {
	log := loggerOrDiscard(logger)
	return func(next Duplex) Duplex {
		return Duplex{
			ToServer: HandlerFunc(func(ctx context.Context, m frame.Message) error {
				if m.Kind() == frame.Request && IsMinted(m.ID()) {
					return next.ToClient.Handle(ctx, frame.ErrorResponse(m.ID(), frame.CodeInvalidRequest,
						`invalid request: ids starting with "mcp-stdio/" are reserved`))
				}
				return next.ToServer.Handle(ctx, m)
			}),
			ToClient: HandlerFunc(func(ctx context.Context, m frame.Message) error {
				if m.Kind().IsResponse() && IsMinted(m.ID()) {
					log.Debug("dropping a late answer to a gateway-owned request", "id", m.ID().String())
					return nil
				}
				return next.ToClient.Handle(ctx, m)
			}),
		}
	}
}
