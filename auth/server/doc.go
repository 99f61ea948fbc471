// Package server is the server half of MCP authorization, for
// `mcp-stdio serve`: the protected resource of RFC 9728 (its metadata
// document and the WWW-Authenticate challenges of a 401 or 403), the
// [Verifier] that turns a presented access token into a [Principal], and
// the ways of verifying: an embedded authorization server for one machine,
// or a resource server trusting one or more external issuers. Package auth
// is the client half (the relay signing in to a remote server); the two
// share no state. This package uses two of auth's URL rules — a resource's
// canonical form (auth.CanonicalResource) and what counts as a loopback
// host (auth.IsLoopbackHost) — so that client and server read a resource
// URL the same way.
//
// # The seam with the gate
//
// serve's OAuth gate (httpguard.RequireOAuth) sits before the era split, for
// POST, GET and DELETE. It knows a verifier only through a small interface
// of package mw/httpguard; package pipeline adapts a [Verifier] to it. On success the
// request's context carries [Principal.Key] (issuer and subject), which
// keys the 2026-07-28 pool of children and binds session-era sessions to
// whoever opened them. The token itself goes no further than the gate:
// the child never sees it, and it is never logged.
//
// # URLs
//
// Every URL in a metadata document or a challenge is built from the
// configured public URL ([ProtectedResource]), never from the request's
// Host or X-Forwarded-Host: a client that followed a hostile Host to a
// foreign metadata document would hand its user's consent to whoever sent
// it.
package server
