package mw

import (
	"context"
	"sync/atomic"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// ForModernHost returns the relay's guard that has stage m act for a
// 2026-07-28 host only: m sits in the relay's session-era chain (see the
// package documentation) and stands in for the host toward a session-era
// server, which a session-era host does itself. The relay has one host,
// of one era: the host is taken for a 2026-07-28 one once it has sent a
// request [ClassifyEra] finds of 2026-07-28, and for a session-era one
// for good once it has sent an initialize.
//
// Server-bound, the host's 2026-07-28 requests go through m (none once it
// sent an initialize); its other requests and its responses pass m by. Its notifications go through m
// while the host is taken for a 2026-07-28 one (a notifications/cancelled
// of a request m answers is m's), and pass m by otherwise.
//
// Client-bound, everything the server sends goes through m while the host
// is taken for a 2026-07-28 one (the server's requests are then m's to
// answer), and passes m by otherwise: a session-era host gets the server's
// requests and notifications as they are. A nil m returns nil, which
// [Chain] skips.
func ForModernHost(m Middleware) Middleware {
	if m == nil {
		return nil
	}
	return func(next Duplex) Duplex {
		inner := m(next)
		var modern, session atomic.Bool
		isModern := func() bool { return modern.Load() && !session.Load() }
		return Duplex{
			ToServer: HandlerFunc(func(ctx context.Context, msg frame.Message) error {
				switch msg.Kind() {
				case frame.Request:
					if msg.Method() == "initialize" {
						session.Store(true)
					}
					if !session.Load() && ClassifyEra(msg) == EraStateless {
						modern.Store(true)
						return inner.ToServer.Handle(ctx, msg)
					}
				case frame.Notification:
					if isModern() {
						return inner.ToServer.Handle(ctx, msg)
					}
				}
				return next.ToServer.Handle(ctx, msg)
			}),
			ToClient: HandlerFunc(func(ctx context.Context, msg frame.Message) error {
				if isModern() {
					return inner.ToClient.Handle(ctx, msg)
				}
				return next.ToClient.Handle(ctx, msg)
			}),
		}
	}
}
