package cli

import (
	"io"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
)

// tuneStdioProcess fits the Go runtime to a process that serves one peer
// on its stdin and stdout (the relay, the example server), moving one
// conversation's messages and little else. It returns the stdin to read
// and a function, to be called once reading is over, that undoes what was
// changed:
//
//   - stdin, when it is a pipe or socket, is read through the runtime's
//     poller (pollableStdin), so a message read is handled on the thread
//     that read it and a shutdown can interrupt the read;
//   - unless GOMAXPROCS is set in the environment, Go code runs on one
//     thread at a time (runtime.GOMAXPROCS(1)). With more, every message
//     that wakes one goroutine also wakes an idle thread to look for work,
//     a cost paid on each hop of a round trip. Large messages are
//     validated and copied on one goroutine either way.
//
// On the 2-core machine of BENCHMARKS.md the two together cut the relay's
// CPU per call by about a third and the latency it adds by about half, and
// the example server's CPU per call by a third.
func tuneStdioProcess(stdin io.Reader, getenv func(string) string, log *slog.Logger) (io.Reader, func()) {
	oneThread(getenv)
	in, restore := stdin, func() {}
	if f, ok := stdin.(*os.File); ok {
		in, restore = pollableStdin(f)
	}
	log.Debug("process tuned", "gomaxprocs", runtime.GOMAXPROCS(0), "stdin_polled", in != stdin)
	return in, restore
}

// tuneServeProcess fits the Go runtime to serve, whose work is moving
// messages between HTTP connections and its children's pipes (the
// children, separate processes, do the rest): unless GOMAXPROCS is set in
// the environment, Go code runs on one thread at a time, for the reason
// given at tuneStdioProcess. On the 2-core machine of BENCHMARKS.md this
// cut serve's CPU per call by about 40%. One thread still moves tens of
// thousands of small messages a second; a gateway with many busy sessions
// on a large machine can have more with GOMAXPROCS=N.
func tuneServeProcess(getenv func(string) string, log *slog.Logger) {
	oneThread(getenv)
	log.Debug("process tuned", "gomaxprocs", runtime.GOMAXPROCS(0))
}

// oneThread sets GOMAXPROCS to 1 unless the environment sets it, and then
// to what the environment says (the binary initialises its packages with
// one thread whatever the environment says: see internal/onethread); a
// value that is not a positive number gets the runtime's default, as it
// would at start.
func oneThread(getenv func(string) string) {
	v := getenv("GOMAXPROCS")
	if v == "" {
		runtime.GOMAXPROCS(1)
		return
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		runtime.GOMAXPROCS(n)
		return
	}
	runtime.SetDefaultGOMAXPROCS()
}

// memoryLimitSlack is what the relay's soft memory limit allows beyond
// twice its budget: the runtime, stdin's lines, the response cache.
const memoryLimitSlack = 64 << 20

// softMemoryLimit gives the relay's Go heap a soft limit of twice its
// budget for the server's messages (--max-buffered) plus
// memoryLimitSlack, unless GOMEMLIMIT sets one. The budget bounds the
// messages held; the garbage their growing buffers leave behind (a
// buffer doubles, the old one waits for the collector) would otherwise
// take the resident set to three times the budget before the collector
// runs. Near the limit the collector runs sooner, so many large messages
// at once cost more CPU, not more memory; far from it, as in ordinary
// use, nothing changes.
func softMemoryLimit(budget int64, getenv func(string) string, log *slog.Logger) {
	if getenv("GOMEMLIMIT") != "" || budget > (math.MaxInt64-memoryLimitSlack)/2 {
		return
	}
	limit := 2*budget + memoryLimitSlack
	debug.SetMemoryLimit(limit)
	log.Debug("soft memory limit", "bytes", limit)
}
