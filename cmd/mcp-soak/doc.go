// Command mcp-soak runs mcp-stdio under a long mixed load and checks that
// nothing leaks. It is Linux-only (it reads /proc).
//
//	mcp-soak -bin PATH -mode serve -duration 1h
//	mcp-soak -bin PATH -mode relay -duration 1h
//
// In serve mode it starts `mcp-stdio serve` (the bundled example server as
// the child) and runs, together: 2026-07-28 clients, session-era clients
// (each session with a GET stream, calls, a DELETE), HTTP+SSE clients, and
// cancels of in-flight calls (an aborted request at 2026-07-28,
// notifications/cancelled in a session), while it kills a random child
// server process with SIGKILL every -crash-every. A client whose session
// ended with its process opens another; a DELETE refused with 503 is tried
// again after its Retry-After. Then it stops the load, waits -idle,
// measures, and ends serve with SIGHUP then SIGTERM.
//
// In relay mode it starts a serve as the remote server and `mcp-stdio URL`
// as a relay with its stdin and stdout as pipes, and sends the relay a
// steady stream of calls (echo, slow calls with progress and log
// notifications, cancels) from a few concurrent workers.
//
// The gates (each printed with its figures; a failed gate makes the exit
// status 1):
//
//   - answers: every request answered exactly once. An answer is a
//     JSON-RPC response with the request's id, on whatever stream it came,
//     or an HTTP error status to the POST that carried it. A request the
//     driver cancelled may have one answer or none; a request with none
//     that was not cancelled is lost, and one with two or more is a
//     duplicate, as is an answer to an id not in flight (a stray).
//   - rss: the resident memory after the load and -idle is at most
//     -rss-factor times its value at the end of the warm-up (the first
//     sixth of the load, between 10 s and 5 min).
//   - fds: serve's open file descriptors after the idle are at most the
//     baseline (taken after one call, before the load) plus -fd-slack; the
//     relay's at most the baseline plus -workers plus -fd-slack (the relay
//     keeps an idle connection to its server, for reuse, per request it had
//     in flight at once; how many it had by the end of the warm-up depends
//     on the machine's timing).
//   - threads: the process's threads after the idle are at most their
//     number after the warm-up plus -thread-slack. (The Go runtime keeps
//     the threads it has made, so they do not go back to the baseline; a
//     goroutine that leaks with a thread blocked in a system call shows
//     here. Serve and the relay publish no goroutine count.)
//   - children (serve): no server process beyond the pooled ones
//     (-pooled) after the idle; serve exits 0 after SIGHUP and SIGTERM,
//     and no process it started is left.
package main
