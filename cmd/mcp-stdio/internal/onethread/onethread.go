// Package onethread has an mcp-stdio process initialise its packages with
// one thread of Go code (GOMAXPROCS 1), which is what every mcp-stdio
// command then runs with unless the GOMAXPROCS environment variable says
// otherwise (see the cli package's tuneServeProcess and tuneStdioProcess,
// which apply that variable).
//
// Setting it here, before the other packages are initialised rather than
// when a command starts, keeps the memory the runtime would spread over
// the other processors while they initialise: each processor caches its
// own partly used spans of every size it allocates, and their pages stay
// resident after the processor is taken away (about 0.5 MiB of serve's
// idle memory on a 2-core machine; see BENCHMARKS.md). A package is initialised after the
// packages it imports, so this one imports only the runtime, and package
// main imports it for its effect.
package onethread

import "runtime"

func init() { runtime.GOMAXPROCS(1) }
