// The parts of serve's 2026-07-28 validation that the session-era side
// and the era fork take: ModernOnly and claimless resource reads (see
// ServeConfig). The 2026-07-28 chain itself (mw.ValidateModern, the pool,
// each child's mw.CheckParamHeaders) is wired with the pool.

package pipeline

import (
	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
)

// classifyEra returns how the era fork tells the eras apart: on positive
// evidence only (mw.ClassifyEra), and with AcceptClaimlessResourceRead a
// claimless resources/read as 2026-07-28 too.
func (s *Server) classifyEra() func(frame.Message) mw.Era {
	if s.cfg.AcceptClaimlessResourceRead {
		return mw.ClassifyEraClaimless
	}
	return mw.ClassifyEra
}

// modernOnly returns the stage that refuses the session era when serve
// serves 2026-07-28 alone, nil otherwise (mw.Chain skips it). NewServer
// turns HTTP+SSE off in that mode.
func (s *Server) modernOnly() mw.Middleware {
	if !s.cfg.ModernOnly {
		return nil
	}
	return mw.ModernOnly()
}
