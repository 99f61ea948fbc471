// Package exampleserver is a small MCP server that speaks the stdio
// transport in both eras of the protocol, built directly on package frame.
//
// It is two things at once: the fixture mcp-stdio's own tests talk to (the
// default child of `mcp-stdio serve`, the far end of relay tests), and a
// readable example of how a stdio server can be put together without an
// SDK. [Serve] runs it on any reader and writer; the hidden
// `mcp-stdio example-server` subcommand runs it on the process's stdin and
// stdout.
//
// # Framing and stdout purity
//
// stdin is read by a [frame.Reader], one JSON-RPC message per line, on its
// own goroutine. stdout is written only through a [frame.Writer], so every
// byte that reaches it is a whole message followed by exactly one "\n";
// diagnostics go to the [Options.Logger] (stderr in the command). A line
// that is not JSON is answered with a -32700 error whose id is null, an
// oversized line with -32600 (carrying the line's id when it could be
// recovered), and the server carries on. Batches are taken apart on
// connections that initialized at 2025-03-26 or 2024-11-05, the revisions
// that have them, and answered with -32600 on any other (see batch.go).
//
// # Concurrency
//
// The read loop classifies each message and never waits on a handler:
// responses from the client are routed to the request that waits for them,
// notifications are acted on at once, and each request runs on its own
// goroutine holding one of a bounded number of handler slots (the loop
// waits for a free slot, which is the back-pressure on a flooding client).
// A handler goroutine that is done waits for the next request, up to four
// of them, so that a stream of requests does not start a goroutine each.
// A handler that waits on the client itself — an ask waiting for the
// elicitation answer, a subscriptions/listen waiting for events — gives its
// slot back while it waits, because the answer can only arrive through the
// read loop; such parked handlers are bounded separately. A
// notifications/cancelled cancels the matching in-flight request, which then
// sends no response (a listen answers with its final result instead, see
// below). When stdin ends, listens are closed, requests still waiting on the
// client fail (as tool results with isError), the remaining handlers get a
// short grace period and are then cancelled, each answered with a -32603
// "request abandoned" error, and Serve returns nil.
//
// # Eras
//
// The server is dual-era. A session-era client (MCP 2024-11-05 to
// 2025-11-25) sends initialize; the server echoes its protocolVersion when
// it is one of those four and offers 2025-11-25 otherwise. A 2026-07-28
// client sends server/discover or simply starts: a request is a 2026-07-28
// request when params._meta carries
// "io.modelcontextprotocol/protocolVersion" (the envelope). Such requests
// are answered statelessly: capabilities come from the request's own _meta,
// every result carries resultType, the cacheable ones (discover, the lists,
// resources/read) carry ttlMs and cacheScope, and every result carries the
// server's identity in _meta["io.modelcontextprotocol/serverInfo"]. An
// envelope naming an unsupported version gets -32022 with data.supported and
// data.requested. The DiscoverResult lists only 2026-07-28 in
// supportedVersions: a connection that has answered discover refuses
// initialize (see below), so offering the session-era versions there would
// be a promise the connection cannot keep.
//
// One connection speaks one era, fixed by its first era-bearing request that
// is accepted: initialize (with a protocolVersion) puts it in the session
// era; an enveloped request at a supported version, with its client
// capabilities, for a method that 2026-07-28 has (discover included) puts it
// on 2026-07-28. A refused probe — an unsupported version, an unknown
// method — decides nothing, so a dual-era client can still fall back to
// initialize. After that:
//
//   - initialize on a 2026-07-28 connection gets -32022 with
//     data.supported ["2026-07-28"];
//   - a request carrying the envelope on a session-era connection is served
//     in the session era: the envelope is ignored (this is the lenient
//     choice; a Python SDK server answers -32600 instead);
//   - a request without the envelope on a 2026-07-28 connection gets
//     -32602, since 2026-07-28 requires it on every request.
//
// Before either, requests without the envelope are served as session-era
// requests even though no initialize came first (lenient, and handy for
// hand-typed sessions); ping is answered with {} in every era. Methods
// that exist in one era only (initialize, logging/setLevel,
// resources/subscribe and unsubscribe; server/discover,
// subscriptions/listen) are -32601 in the other.
//
// # A session-era-only server
//
// With [Options.SessionEraOnly] (the command's --session-era-only flag)
// the server has no 2026-07-28 face: it behaves as a stdio server written
// before 2026-07-28 does, the session-era child a gateway must translate
// for. Modelled on what pre-2026 SDK servers answer (go-sdk v1.6.1
// among them):
//
//   - server/discover and subscriptions/listen are -32601 "method not
//     found", enveloped or not, before initialize and after (go-sdk v1.6.1
//     answers them with its own error code 0; -32601 is what JSON-RPC
//     prescribes for a method a server does not have, and what the
//     TypeScript SDK's servers answer);
//   - before initialize every other request but ping is refused with
//     -32600 ("… before initialize"), envelope or not (go-sdk v1.6.1
//     refuses them too, with code 0);
//   - initialize negotiates as above: a 2026-07-28 protocolVersion is
//     answered with 2025-11-25;
//   - after initialize the "io.modelcontextprotocol/*" keys of _meta mean
//     nothing: every request is served in the session era, its result
//     without resultType, caching fields or _meta serverInfo, and the ask
//     tool elicits with a real elicitation/create request. With
//     [Options.RefuseReservedMeta] (--refuse-reserved-meta) such a request
//     is refused with -32600 instead, as a dual-era Python SDK server does
//     on a session-era connection.
//
// # Tools
//
// Every tools/call goes through one table, name → handler: echo, add, slow
// (progress notifications, cancellation), bytes (a result of exactly n
// bytes, for large-message tests), ask (elicitation: a real server→client
// elicitation/create request on a session-era connection, an input_required
// result on a 2026-07-28 one — multi round-trip requests, with an
// HMAC-protected requestState), toggle (adds or removes the bonus tool and
// announces tools/list_changed) and, when toggled on, bonus. With
// [Options.AskRoots] (--ask-roots) the server asks a session-era client
// that declared roots for them once notifications/initialized has come,
// as many servers do, and offers roots, which returns that answer or,
// with ask, asks again during the call. Tool failures are tool results
// with isError; malformed arguments are -32602.
//
// # Resources, prompts, subscriptions
//
// example://counter counts the tool calls so far and can be watched;
// example://readme is static; the template example://echo/{text} reads back
// its text. The greet prompt takes a name, which completion/complete
// suggests. Session-era clients watch resources with resources/subscribe and
// get notifications/resources/updated and notifications/tools/list_changed
// as they happen; 2026-07-28 clients open subscriptions/listen, which is
// acknowledged first with the honoured subset of the requested notifications
// and then carries events stamped with the listen's id in
// _meta["io.modelcontextprotocol/subscriptionId"]. A listen ends with the
// result {"resultType":"complete","_meta":{subscriptionId}} when the client
// cancels it or stdin closes.
//
// Lists (tools, resources, templates, prompts) are paginated when
// [Options.PageSize] is positive, with opaque cursors; a cursor the server
// did not issue is -32602.
//
// The server builds its own messages with encoding/json: they are our own
// output, not forwarded bytes. Request ids are echoed as the exact tokens
// the client sent ([frame.ID]).
package exampleserver
