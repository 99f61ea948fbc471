// Package pipeline assembles mcp-stdio's gateways from the stock parts: the
// [Relay] (a stdio MCP client carried to a remote HTTP server), [Check] (the
// relay's connectivity probe) and the serve [Server] (a stdio MCP server
// published over Streamable HTTP, built by [NewServer]). It holds wiring only —
// which stages, in which order, on which transport; every behaviour lives in
// frame, mw, transport and auth.
//
// The relay's chain, nearest the client first:
//
//	cancel filter → your Middlewares → pagination merge → session recovery → retry → reauth → transport
//
// Serve's, from the network in:
//
//	net/http → origin check → host check → CORS → bearer gate → body cap → era classifier → session handler
//	session handler ⇄ your Middlewares → drop client capabilities → child process (one per session)
//
// A Go program gets a relay of its own by filling a [RelayConfig] — adding
// stages through RelayConfig.Middlewares — and calling [Relay] with any
// reader and writer in place of stdin and stdout; a server of its own by
// filling a [ServeConfig] and mounting [Server.Handler] on any mux.
package pipeline
