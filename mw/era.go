package mw

import (
	"context"
	"log/slog"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// claimedVersion returns the protocol version m's params._meta claims,
// read in one pass over _meta (mcp.Claims): a gjson path with the key's
// escaped dots would build a string for every message that has one.
func claimedVersion(m frame.Message) gjson.Result {
	version, _ := mcp.Claims(m.Get("params._meta"))
	return version
}

// ClassifyEra tells which era a message a client sent belongs to, on
// positive evidence only: 2026-07-28 when params._meta carries the
// protocol version, or the method is server/discover. Everything else —
// headers included, which a session-era client may send too, and a GET or
// a DELETE — is of the session era.
func ClassifyEra(m frame.Message) Era {
	if m.Method() == mcp.MethodDiscover || claimedVersion(m).Exists() {
		return EraStateless
	}
	return EraSession
}

// ClassifyEraClaimless is [ClassifyEra] that also takes a claimless
// resources/read ([IsClaimlessResourceRead]) as of 2026-07-28. It is the
// classifier of serve's era fork when claimless reads are accepted (see
// [ModernLadderOptions].AcceptClaimlessResourceRead, which the ladder
// behind the fork must be given too).
func ClassifyEraClaimless(m frame.Message) Era {
	if IsClaimlessResourceRead(m) {
		return EraStateless
	}
	return ClassifyEra(m)
}

// IsClaimlessResourceRead reports whether m is a resources/read request
// that claims no era at all: no Mcp-Session-Id header, no
// MCP-Protocol-Version header and no protocol version in params._meta.
// Some clients read a resource so (an app's embedded view fetching its
// UI, for one), which neither era's rules accept.
func IsClaimlessResourceRead(m frame.Message) bool {
	if m.Kind() != frame.Request || m.Method() != "resources/read" {
		return false
	}
	h := m.Header()
	return len(h.Values(frame.HeaderSessionID)) == 0 &&
		len(h.Values(frame.HeaderProtocolVersion)) == 0 &&
		!claimedVersion(m).Exists()
}

// ByEra returns serve's era fork: every server-bound message goes to
// stateless when [ClassifyEra] finds it of 2026-07-28 and stateless is not
// nil, and to session otherwise. It is where the two chains of serve part
// (see the package documentation). With no stateless chain, a 2026-07-28
// request takes the session era's (a sessionless server/discover then gets
// the session era's 400, which makes a dual-era client fall back to
// initialize).
func ByEra(session, stateless Handler, logger *slog.Logger) Handler {
	return ByEraWith(ClassifyEra, session, stateless, logger)
}

// ByEraWith is [ByEra] deciding with classify instead of [ClassifyEra]
// (such as [ClassifyEraClaimless]).
func ByEraWith(classify func(frame.Message) Era, session, stateless Handler, logger *slog.Logger) Handler {
	log := loggerOrDiscard(logger)
	return HandlerFunc(func(ctx context.Context, m frame.Message) error {
		if classify(m) == EraStateless {
			if stateless != nil {
				return stateless.Handle(ctx, m)
			}
			log.Debug("a 2026-07-28 request takes the session era (not served yet)", "method", m.Method())
		}
		return session.Handle(ctx, m)
	})
}
