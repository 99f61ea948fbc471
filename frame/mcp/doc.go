// Package mcp is what MCP is, written once for the gateway: the revisions
// of the protocol in order and the features each has ([Revision],
// [Feature]), the method names and what MCP says of each ([ClassOf]:
// request or notification, which side sends it, cacheable, replay-safe,
// paginated, session era only), the _meta keys and their paths, and the
// messages the gateway sends of its own ([InitializeRequest],
// [InitializedNotification], [DiscoverRequest] with the -32022 retry
// decision [DiscoverRetryVersion], [CancelledNotification],
// [PingRequest]).
//
// It holds no policy: which era a connection speaks, what a stage does
// with a method, how long it waits are the stages' (package mw). They ask
// this package instead of spelling versions, method names or _meta keys,
// so that a new revision of MCP is a change here (and new transcripts in
// golden/), not an edit in every stage. It imports only frame.
//
// # A new revision
//
// Say MCP publishes 2027-03-xx, a revision of the era 2026-07-28 began
// that adds a method tools/watch (a client request, replay-safe) and a
// _meta key io.modelcontextprotocol/deadline. What changes here:
//
//   - a constant Version2027xx = "2027-03-xx", ModernVersion set to it,
//     and a row {Version2027xx, stateless} appended to the revisions
//     table, with a new [Feature] bit for what it adds that a stage must
//     know of (say Watch), set on its row only;
//   - MethodToolsWatch and its case in [ClassOf]
//     (clientRequest | ReplaySafe | StatelessOnly);
//   - MetaDeadline, its path, and a case in [IsModernMetaKey];
//   - the test tables: a row in the per-revision test, which then checks
//     [Known], [IsStateless] and [StatelessVersions] for it.
//
// What follows by itself, since the stages ask this package: an
// MCP-Protocol-Version header naming it is known; the relay's era probe
// asks server/discover at it first and asks again at 2026-07-28 when a
// server answers -32022 listing only that ([DiscoverRetryVersion] with
// [StatelessVersions], the gateway's preference, newest first); serve's
// 2026-07-28 face accepts both revisions and lists both in the
// server/discover it answers; its validation ladder lets tools/watch
// through ([IsStatelessClientRequest]) and the retry stage may send it
// again ([IsReplaySafe]). What does not: a stage that must act on Watch
// (answer tools/watch for a session-era child, say) asks Has(v, Watch) in
// mw, and golden/ gets transcripts of it. A revision that removes
// something (as 2026-07-28 removed initialize) leaves the feature's bit
// off its row, and the classes say NeedsSession or StatelessOnly for the
// methods only one era has.
package mcp
