package mw

import (
	"context"
	"net/http"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// RoutingHeaders returns the stage that puts MCP 2026-07-28's routing
// headers on every server-bound request and notification, derived from
// the message's own bytes, so that what the headers say is what the body
// says (a 2026-07-28 server refuses a difference with -32020):
//
//   - MCP-Protocol-Version: params._meta's io.modelcontextprotocol/protocolVersion;
//     for a message without one, the modern version of the connection
//     ([Conn.Discovery]), else [ModernVersion];
//   - Mcp-Method: the method, exactly;
//   - Mcp-Name: params.name of tools/call and prompts/get, params.uri of
//     resources/read, when it is a string, encoded with
//     [frame.EncodeHeaderValue] (a value that is not printable ASCII goes
//     as =?base64?…?=).
//
// The headers ride in the message's side channel ([frame.Message.Header]),
// which the HTTP transport sends; other headers there are kept. The stage
// sits innermost in the relay's chain for a 2026-07-28 server, just
// outside retry (see the package documentation), so the headers describe
// the final bytes, including those of requests outer stages make (pages,
// the era probe). It acts while the connection ([ConnOf]) speaks
// 2026-07-28, and on any message of a 2026-07-28 client ([ClassifyEra])
// such as the probe's server/discover; responses and client-bound traffic
// pass untouched.
func RoutingHeaders() Middleware {
	return ServerBound(func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, m frame.Message) error {
			k := m.Kind()
			if k != frame.Request && k != frame.Notification {
				return next.Handle(ctx, m)
			}
			c := ConnOf(ctx)
			if ClassifyEra(m) != EraStateless && (c == nil || c.Era() != EraStateless) {
				return next.Handle(ctx, m)
			}
			return next.Handle(ctx, withRoutingHeaders(m, c))
		})
	})
}

// withRoutingHeaders returns m with its routing headers set (see
// RoutingHeaders); c may be nil.
func withRoutingHeaders(m frame.Message, c *Conn) frame.Message {
	old := m.Header()
	h := make(http.Header, len(old)+3)
	for k, v := range old {
		h[k] = v
	}
	h.Set(frame.HeaderProtocolVersion, routingVersion(m, c))
	h.Set(frame.HeaderMethod, m.Method())
	if name, ok := routingName(m); ok {
		h.Set(frame.HeaderName, frame.EncodeHeaderValue(name))
	}
	return m.WithHeaders(h)
}

// routingVersion returns the protocol version m's MCP-Protocol-Version
// names.
func routingVersion(m frame.Message, c *Conn) string {
	if v := claimedVersion(m); v.Type == gjson.String {
		return v.Str
	}
	if c != nil {
		if _, v := c.Discovery(); v != "" {
			return v
		}
	}
	return ModernVersion
}

// routingName returns what Mcp-Name mirrors for m, if anything.
func routingName(m frame.Message) (string, bool) {
	path := mcp.NamePath(m.Method())
	if path == "" {
		return "", false
	}
	v := m.Get(path)
	if v.Type != gjson.String {
		return "", false
	}
	return v.Str, true
}
