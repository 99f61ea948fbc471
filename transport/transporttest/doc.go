// Package transporttest provides the plumbing that tests of the gateway
// share, in the spirit of net/http/httptest: they run real processes and
// read what those write while it is being written.
//
//   - [SyncBuffer] collects output written concurrently (a logger, a child's
//     stderr) and lets a test wait for a line of it with a [LineWatch],
//     without sleeping.
//   - [RunProgram] lets a test binary double as the child programs its
//     tests start; [Command], [ArgCommand] and [SetProgramEnv] start it as
//     one of them.
//   - [ProcessGone] waits for a process to end (Linux).
//   - [ScriptedServer] is a small MCP server to run as such a child.
//
// It imports only the standard library, golang.org/x/sys and frame, so
// that any package's tests, a leaf's included, can use it.
package transporttest
