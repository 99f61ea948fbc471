// Package mw is the middleware vocabulary of mcp-stdio and its stock stages.
//
// A gateway is a chain of stages between an MCP client and an MCP server.
// Every stage sees two streams of [frame.Message]: server-bound traffic
// (client → server) and client-bound traffic (server → client). A stage is
// a [Middleware]: given the exits of the stage inside it, it returns its own
// entries. [Chain] stacks stages like an onion, first one outermost:
//
//	client ──ToServer──▶ ms[0] ─▶ ms[1] ─▶ … ─▶ ms[n-1] ─▶ transport
//	client ◀──ToClient── ms[0] ◀─ ms[1] ◀─ … ◀─ ms[n-1] ◀─ transport
//
// "Client" and "server" are MCP roles, fixed for both pipelines: in the relay
// the client is stdin/stdout and the server the remote HTTP endpoint; in
// serve the client is the HTTP caller and the server the child process.
//
// # The pipelines
//
// This is the one drawing of the chains package pipeline assembles; each
// stage's documentation says what it does, and refers here for where it
// sits. The relay, nearest the client first:
//
//	stdio transport (transport.Stdio: stdin, stdout)
//	  RelayAccessLog         one record per request (--log-format)
//	  AnswerOnce             one answer per request, never a stray one
//	  ReservedIDs            client ids never look like ids stages mint
//	  CancelFilter           a cancelled request gets no answer
//	  ToolFilter             --allow-tool/--deny-tool, above the fork: both
//	                         eras, merged lists, the cache's answers
//	  your Middlewares
//	EraProbe                 the fork: the host's era when the server speaks it, once
//	session era (HTTP+SSE takes the same chain):
//	    StampResults         a 2026-07-28 host's results: resultType, serverInfo, cache hints
//	    ForModernHost(ParkChildRequests)
//	                         the server's sampling, elicitation, roots during a
//	                         2026-07-28 host's call: input_required rounds
//	    ForModernHost(HandshakeForModern, ServeListen)
//	                         initialize made here for a 2026-07-28 host that made
//	                         none; its subscriptions/listen served from the
//	                         session's notifications
//	    LocalDiscover        its server/discover answered from that initialize
//	    StripModernMeta      io.modelcontextprotocol/* _meta keys taken off its requests
//	    PaginationMerge      one answer for a whole list
//	    ResponseCache        a list or read asked again while ttlMs lasts
//	    ParamHeaders         Mcp-Param-* from x-mcp-header, with --mcp-param-headers always
//	    Session              the session kept, recovered after a 404
//	    TraceHeaders         _meta.traceparent as the traceparent header; client spans
//	    Retry                another attempt when it cannot run twice
//	    Reauth               401 and 403 handed to the OAuth client
//	    SingleAnswers        a single request never gets a batch back
//	  HTTP transport (transport.StreamableClient, SSEClient or Auto)
//	2026-07-28 (no session: no GET stream, no DELETE):
//	    CloseOnCancel        a cancel closes the request's stream
//	    CleanResults         results in the shape a session-era client knows, no 2026-07-28 _meta
//	    MRTRBridge           input requests asked of the host, the call re-issued
//	    PaginationMerge
//	    ResponseCache
//	    ParamHeaders         Mcp-Param-* from x-mcp-header, tools checked
//	    ListenBridge         change notifications from a listen kept open
//	    LocalAnswers         initialize, ping, setLevel answered here
//	    InjectMeta           _meta of the handshake on every request
//	    RoutingHeaders       MCP-Protocol-Version, Mcp-Method, Mcp-Name
//	    TraceHeaders
//	    Retry                a new id for each attempt (Reissue)
//	    Reauth
//	    SingleAnswers
//	  HTTP transport (transport.StreamableClient)
//
// The bridges of the 2026-07-28 chain (LocalAnswers, InjectMeta,
// CleanResults, …) act on the lines of a session-era client only; a
// 2026-07-28 client's lines ([ClassifyEra]) pass them, and get only the
// routing headers derived from their bodies (RoutingHeaders, ParamHeaders).
//
// The first five stages of the session-era chain are the bridges the
// other way round: they act on the lines of a 2026-07-28 host only, and a
// session-era host's pass them. Serve lists StampResults,
// ParkChildRequests, LocalDiscover and StripModernMeta for a pooled child
// that speaks only the session era. In the relay ParkChildRequests stands
// in for the host toward the server, so [ForModernHost] hands it the
// server's traffic only once the host is known to be of 2026-07-28; and
// since a call's Handle there runs until the server's answer, long after
// its input_required, its retries wait for their own answers
// (ParkOptions.AwaitRetryAnswers) and the cancel filter leaves a request
// it saw answered running. The relay lists ServeListen too, with the
// handshake under one ForModernHost (so the handshake's own initialize
// does not make the host a session-era one): there a listen's Handle runs
// until the listen ends (ServeListenOptions.AwaitEnd), since a stdio host
// learns of an end only from a response, and notifications are handed on
// as the server sends them (ServeListenOptions.Inline); the stdio
// transport's drain ends the listens gracefully first
// (transport.StdioConfig.Draining), and a session re-established
// (SessionOptions.Reestablished) ends them abruptly
// ([ListenStreams.Interrupt]).
//
// ListenBridge sits in that list but acts only once the connection speaks
// 2026-07-28 (its listen is a request like any other for the stages inside
// it); on the session era everything passes it untouched.
//
// serve, from the network in:
//
//	HTTP guards (package mw/httpguard's Guard, on headers alone, before any body is read):
//	  with metrics: CountRefusals' front (counts what the guards refuse),
//	  with --health-path: AnswerHealth (a probe needs nothing of the rest),
//	  CheckOrigin, CheckHost, ServePaths (404 elsewhere), CORS,
//	  with OAuth: Mount of its metadata and authorization server (no token needed),
//	  RequireBearer or RequireOAuth (the principal: PrincipalOf), LimitBody,
//	  with metrics: CountRefusals' back
//	HTTP transports, by path:
//	  the endpoint: Streamable HTTP (transport.HTTPServer: a Message and its
//	    Exchange per request)
//	  /sse, /message: HTTP+SSE of 2024-11-05 (transport.SSEServer: a stream per
//	    session; each POST's Exchange is carried by its session's stream)
//	ByEra (Streamable HTTP)  the fork: 2026-07-28 or the session era
//	session era:
//	  CountRequests          with metrics on: requests and bytes counted
//	  AccessLog              one record per request, once it has ended
//	  ModernOnly             with --modern-only: all of it refused (405, -32022)
//	  CheckVersionHeader     MCP-Protocol-Version names a revision
//	  RefuseNewSessions      while serve drains: a new session (an initialize
//	                         without one, an HTTP+SSE stream) gets 503
//	  RefuseAfterDrain       once the drain is over: a session's request or
//	                         new stream gets 404, untaken
//	  TraceContext           the traceparent header into _meta; a server span
//	  Sessions               one session (Conn, chain, child) per initialize,
//	                         or (Sessions.SSE) per HTTP+SSE stream
//	  per session:
//	    Route                each answer to the exchange it belongs to
//	    RefuseDuplicateIDs   one request per raw id in flight
//	    Unbatch              a batch's messages one at a time
//	    CancelFilter         the relay's, here too
//	    ToolFilter           --allow-tool/--deny-tool
//	    your Middlewares
//	    DropClientCapabilities
//	  stdio transport (transport.Child: the session's child process)
//	2026-07-28 (no session):
//	  CountRequests
//	  AccessLog
//	  ValidateModern         the checks that need no child (_meta, routing
//	                         headers, version, method): 400/404/406
//	  RefuseAfterDrain       once the drain is over: 503, untaken
//	  TraceContext
//	  Pool                   one child per principal (PrincipalOf), started
//	                         on first use by StartChild's policy,
//	                         handshaken by ChildHandshake
//	  per pooled child, dual-era (it answered server/discover):
//	    ModernRouter         minted ids; each answer to its request's exchange
//	    ToolFilter           under minted ids, unique on the child
//	    ShareListens         one listen on the child for all the clients,
//	                         the union of their filters, fanned out; ended
//	                         at the drain
//	    CheckParamHeaders    Mcp-Param-* held to the child's own tools/list
//	    AwaitAnswers         the stages' own requests wait for their answers
//	  per pooled child of the session era only, translated:
//	    ModernRouter
//	    ToolFilter
//	    StampResults         resultType, serverInfo, ttlMs (--cache-ttl-ms)
//	    ServeListen          subscriptions/listen served by the gateway
//	    CheckParamHeaders    below the listens, which take list_changed
//	    ParkChildRequests    the child's sampling/elicitation/roots as MRTR,
//	                         when the one call in flight asked; else answered
//	                         here (ChildAnswers, which also answers during
//	                         the handshake)
//	    LocalDiscover        server/discover answered from the child's initialize
//	    StripModernMeta      io.modelcontextprotocol/* _meta keys taken off
//	    AwaitAnswers
//	  stdio transport (transport.Child: the principal's child process)
//
// Both pipelines keep one [Conn] per connection — the relay process, a
// session of serve, or one of serve's pooled children — holding what
// stages share about it: the era, the protocol version, the client's
// initialize and the server's answer, the principal. The pipeline puts it in the context of every message
// ([ConnOf]).
//
// In serve, each request arrives with the [Exchange] its answer is written
// from ([ExchangeOf]): a stage refuses the request by returning a
// [*frame.StatusError] ([Refuse]), and Route, the client edge of a
// session's chain, sends each client-bound message on the exchange it
// belongs to.
//
// # Files
//
// One file per stage, named after it. Where a concern has a stage on each
// side, or two files would otherwise look alike, the name says the side:
// relay… for a stage of the relay (relaysession.go, the relay's session
// recovery; relaylisten.go; relayparamheaders.go; relayaccesslog.go),
// serve… for one of serve (servesessions.go, serve's session table;
// servechildhandshake.go; servechildstart.go, the policy for starting a
// child; servechildexit.go, what a user is told of a child that exited;
// servelisten.go; serveparamcheck.go; serveaccesslog.go).
// sessionhandshake.go is the session-era handshake the gateway performs
// itself, toward a server (relay, and its connectivity check) or a child
// (serve). relayunreachable.go is no stage but the relay's policy for a
// server it cannot use: [Diagnose] explains the failure of a first
// contact, and [ServerUnusable] tells which failures [AnswerFailures]
// answers with it.
// What MCP is — revisions, methods, _meta keys, the messages the gateway
// sends — is package frame/mcp's, not a stage's.
//
// # The contract every [Handler] keeps
//
//   - Handle is safe for concurrent use. Requests are in flight at the same
//     time; a long tools/call never blocks a cancel, a ping or another call.
//   - Handle of a request on the server-bound side returns once the request
//     is finished: its response (and anything related before it) has been
//     handed to the client-bound side, or it could not be delivered. The
//     one exception is the end of serve's chain, a child process, which
//     answers on its own stdout whenever it likes: there Handle returns once
//     the request was written. Stages that need the answer to a request of
//     their own inside Handle rely on [AwaitAnswers] in front of the child.
//   - Handle returns a Go error only when the message could not be
//     delivered. A JSON-RPC error is a message, never a Go error. A stage
//     that rejects a request answers it with an error response toward the
//     client and returns nil; in serve, a stage that refuses it at the HTTP
//     level returns the refusal ([Refuse]).
//   - Errors are typed ([frame.StatusError], [frame.SendError] and the
//     frame sentinels) so outer stages can decide what to do; whoever
//     finally gives up answers the client (see [ErrorFor]), so a client never
//     hangs. [frame.ErrCancelled] means the client cancelled the request:
//     no answer is due.
//   - Messages are read-only; a stage that edits one forwards the copy
//     [frame.Message.Set] returns.
//   - A stage may originate messages in either direction at any time (a
//     replayed initialize, a page request). Ids it mints come from an [IDMinter]
//     or a [Remap], which can never collide with a client's ids, and the
//     stage swallows the answers to them.
package mw
