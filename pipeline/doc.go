// Package pipeline assembles mcp-stdio's gateways from the stock parts: the
// [Relay] (a stdio MCP client carried to a remote HTTP server), [Check] (the
// relay's connectivity probe, through the relay's own chain) and the serve
// [Server] (a stdio MCP server published over Streamable HTTP, and over
// HTTP+SSE for older clients, built by [NewServer]; several of them on one
// listener, under /NAME/, by [NewMulti]). Mostly it wires —
// which transport, which stages in which order, which chain for which era —
// and the stages' behaviour and the protocol decisions live in frame, mw,
// transport and auth: the diagnosis of a failed first contact,
// [Unreachable], is mw.Diagnose's (explain.go hands it the relay's
// settings and its OAuth metadata lookup); [Check] makes the gateway's own
// handshake (mw.InitializeWith) and prints its outcome; serve starts its
// pooled children by mw.StartChild's policy and supplies only how to
// start one. The chains are drawn in package mw's documentation, and
// relay.go and serve.go list their stages in that order.
//
// A Go program gets a relay of its own by filling a [RelayConfig] — adding
// stages through RelayConfig.Middlewares — and calling [Relay] with any
// reader and writer in place of stdin and stdout; a server of its own by
// filling a [ServeConfig] and mounting [Server.Handler] on any mux.
package pipeline
