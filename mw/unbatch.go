package mw

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// CancelledError reports requests of a batch that were not delivered
// because the client had cancelled them; the batch's other messages were.
// It matches frame.ErrCancelled.
type CancelledError struct {
	IDs []frame.ID
}

func (e *CancelledError) Error() string {
	return fmt.Sprintf("%d requests of the batch cancelled by the client", len(e.IDs))
}

// Is reports whether target is frame.ErrCancelled.
func (e *CancelledError) Is(target error) bool { return target == frame.ErrCancelled }

// Unbatch returns the stage that hands the messages of a JSON-RPC batch on
// one at a time, in order, so that the stages inside it and the server see
// single messages (serve's children answer each on its own line). It sits
// inside the stages that take a batch as a whole — routing registers all
// its requests, duplicate-id refusal judges them together — and outside
// the cancel filter (see the package documentation).
//
// An element whose delivery fails stops the batch and its error is
// returned; elements the stage inside reports cancelled
// ([frame.ErrCancelled]) are skipped, and named by a [*CancelledError] once
// the rest are delivered. Everything else passes untouched.
func Unbatch() Middleware {
	return ServerBound(func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, m frame.Message) error {
			if m.Kind() != frame.Batch {
				return next.Handle(ctx, m)
			}
			var cancelled []frame.ID
			for el := range m.Elements() {
				err := next.Handle(ctx, el.WithHeaders(m.Header()))
				switch {
				case err == nil:
				case errors.Is(err, frame.ErrCancelled) && el.Kind() == frame.Request:
					cancelled = append(cancelled, el.ID())
				default:
					return err
				}
			}
			if cancelled != nil {
				return &CancelledError{IDs: cancelled}
			}
			return nil
		})
	})
}
