package mw

import (
	"context"
	"fmt"
	"slices"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// droppableClientCapabilities are the client capabilities
// [DropClientCapabilities] can remove: the ones that make a server send
// requests to the client.
var droppableClientCapabilities = []string{"roots", "sampling", "elicitation"}

// DropClientCapabilities returns the stage that removes the named
// capabilities from params.capabilities of the client's initialize request
// before the server sees it, so that the server never asks the client for
// something it declared but does not really do (claude.ai declares roots
// and never answers roots/list). Each cap must be "roots", "sampling" or
// "elicitation"; anything else is an error.
//
// Only server-bound initialize requests are touched, and only by deleting
// the named keys: every other byte stays as the client sent it, and a
// message without them (or with no stage configured) passes unchanged.
// With no caps the stage is [Passthrough]. serve lists it last in each
// session's chain, nearest the child (see the package documentation).
func DropClientCapabilities(caps ...string) (Middleware, error) {
	var paths []string
	for _, c := range caps {
		if !slices.Contains(droppableClientCapabilities, c) {
			return nil, fmt.Errorf("mw: cannot drop client capability %q (want one of %v)", c, droppableClientCapabilities)
		}
		p := "params.capabilities." + gjson.Escape(c)
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return Passthrough, nil
	}
	return ServerBound(func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, m frame.Message) error {
			if m.Kind() == frame.Request && m.Method() == "initialize" {
				m = dropPaths(m, paths)
			}
			return next.Handle(ctx, m)
		})
	}), nil
}

// dropPaths deletes paths from m; a path that cannot be deleted is left.
func dropPaths(m frame.Message, paths []string) frame.Message {
	for _, p := range paths {
		if d, err := m.Delete(p); err == nil {
			m = d
		}
	}
	return m
}
