package mw

import (
	"context"
	"net/http"
	"slices"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// ModernOnly returns the stage serve lists on its session-era side, in
// place of the sessions, when it serves MCP 2026-07-28 alone (see the
// package documentation): every message the era fork ([ByEra]) sends that
// way is refused, as a 2026-07-28-only server refuses the session era
// (digest §3.7). It sits behind the HTTP guards, so a caller who fails
// authentication still gets 401 first.
//
//   - A GET or a DELETE gets 405 Method Not Allowed with Allow: POST and
//     no body.
//   - A POST of an initialize gets 400 with -32022 under its id, whose
//     data is {"supported":versions,"requested":the initialize's
//     params.protocolVersion}: a dual-era client learns there which
//     versions to speak instead.
//   - Any other request gets 400 with -32022 too, requested being its
//     MCP-Protocol-Version header (2025-03-26 when it sends none, as the
//     session era reads a missing header); a POST of notifications,
//     responses or a batch the same, under a null id.
//   - Except what claims 2026-07-28 by its MCP-Protocol-Version header
//     (one of versions) but not by its body, which the era fork sends
//     this way: a request but initialize gets 400 with -32602, as the ladder answers a
//     request without _meta ([ValidateModern]); a notification is
//     accepted and dropped — on 2026-07-28's HTTP a client cancels by
//     closing the stream, so a POSTed notifications/cancelled carries
//     nothing to act on.
//
// versions are the 2026-07-28 versions served; none means the revisions
// of the stateless era ([mcp.StatelessVersions]: 2026-07-28 alone today).
// The HTTP+SSE transport speaks the session era only: a
// pipeline serving 2026-07-28 alone turns it off rather than putting this
// stage in front of it.
func ModernOnly(versions ...string) Middleware {
	versions = slices.Clone(versions)
	if len(versions) == 0 {
		versions = mcp.StatelessVersions()
	}
	return ServerBound(func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, m frame.Message) error {
			if x := ExchangeOf(ctx); x != nil && x.Method() != http.MethodPost {
				h := make(http.Header, 1)
				h.Set("Allow", http.MethodPost)
				return &frame.StatusError{Code: http.StatusMethodNotAllowed, Header: h}
			}
			header := m.Header().Get(frame.HeaderProtocolVersion)
			if m.Kind() == frame.Notification && slices.Contains(versions, header) {
				return nil
			}
			if m.Kind() == frame.Request && m.Method() != "initialize" && slices.Contains(versions, header) {
				return Refuse(http.StatusBadRequest, m.ID(), frame.CodeInvalidParams,
					"Invalid params: params._meta is required on a 2026-07-28 request")
			}
			var id frame.ID
			requested := header
			switch {
			case m.Kind() == frame.Request && m.Method() == "initialize":
				id, requested = m.ID(), m.Get("params.protocolVersion").String()
			case m.Kind() == frame.Request:
				id = m.ID()
			}
			if requested == "" && m.Method() != mcp.MethodInitialize {
				requested = mcp.UnversionedVersion
			}
			return RefuseWithData(http.StatusBadRequest, id, frame.CodeUnsupportedVersion,
				"Unsupported protocol version: this server speaks MCP 2026-07-28 only", versionData(versions, requested))
		})
	})
}
