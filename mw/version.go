package mw

import (
	"context"
	"fmt"
	"net/http"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// KnownProtocolVersion reports whether v names a revision of MCP: one a
// MCP-Protocol-Version header may carry ([mcp.Known]).
func KnownProtocolVersion(v string) bool { return mcp.Known(v) }

// CheckVersionHeader returns the stage of serve's session era that
// refuses, with 400 and -32600, every request (a POST's message, a GET, a
// DELETE) whose MCP-Protocol-Version header names no revision of MCP, as
// the Streamable HTTP transport requires. Which revision a session speaks
// is between its client and its server; a request without the header
// passes (a 2025-03-26 client sends none). It sits in front of the
// session stage, so that the version is judged before the session (see
// the package documentation).
func CheckVersionHeader() Middleware {
	return ServerBound(func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, m frame.Message) error {
			if v := m.Header().Get(frame.HeaderProtocolVersion); v != "" && !KnownProtocolVersion(v) {
				return Refuse(http.StatusBadRequest, "", frame.CodeInvalidRequest, "unsupported MCP-Protocol-Version "+quoteShort(v))
			}
			return next.Handle(ctx, m)
		})
	})
}

// quoteShort quotes s for an error message, cut to a sane length.
func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return fmt.Sprintf("%q", s)
}
