// Package pipeline assembles mcp-stdio's gateways from the stock parts: the
// [Relay] (a stdio MCP client carried to a remote HTTP server) and serve (a
// stdio MCP server published over Streamable HTTP). It holds wiring only —
// which stages, in which order, on which transport; every behaviour lives in
// frame, mw, transport and auth.
//
// The relay's chain, nearest the client first:
//
//	cancel filter → your Middlewares → pagination merge → session recovery → retry → reauth → transport
//
// A Go program gets a relay of its own by filling a [RelayConfig] — adding
// stages through RelayConfig.Middlewares — and calling [Relay] with any
// reader and writer in place of stdin and stdout.
package pipeline
