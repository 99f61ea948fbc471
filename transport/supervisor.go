package transport

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

// The supervisor of a child (see ChildConfig.Supervisor) is a small process
// between the gateway and the server. The gateway starts it in a process
// group of its own, with the server's stdin, stdout and stderr as its own
// and one end of a Unix socket pair, the control socket, as descriptor 3;
// its arguments name the server (supervisorArgs). The supervisor starts the
// server in another process group of its own, on the same descriptors
// (inherited, so the gateway's pipes reach the server directly), and lets
// go of its copies of stdin and stdout. Over the control socket:
//
//   - the supervisor first writes one line: "started PID" with the server's
//     pid, or "failed REASON" when it could not be started (it then exits
//     127);
//   - the gateway writes single bytes: ctlTerminate (SIGTERM to the
//     server's group) and ctlKill (SIGKILL to it);
//   - the end of the stream means the gateway is gone — it has exited or
//     been killed, however — and the supervisor stops the server's group
//     on its own: the server's stdin has ended with the gateway, so it
//     waits the stdin grace, sends SIGTERM, waits the term grace, and
//     sends SIGKILL.
//
// When the server exits, the supervisor kills whatever is left in the
// server's group (before reaping the server, so that the group id cannot
// have been reused), and exits with the server's status. SIGTERM, SIGINT
// and SIGHUP sent to the supervisor are passed on to the server's group.
const (
	ctlStarted   = "started"
	ctlFailed    = "failed"
	ctlTerminate = 't'
	ctlKill      = 'k'
)

// supervisorKillWait bounds how long the gateway waits for a supervisor
// to end after asking it to kill the server; then it kills the
// supervisor.
const supervisorKillWait = 5 * time.Second

// supervisorOptions is what a supervisor is told on its command line.
type supervisorOptions struct {
	path       string   // the server's executable
	argv       []string // the server's arguments, argv[0] included
	stdinGrace time.Duration
	termGrace  time.Duration
}

// supervisorArgs returns the arguments that follow ChildConfig.Supervisor
// for the server at path with arguments argv.
func supervisorArgs(o supervisorOptions) []string {
	return append([]string{
		"--path=" + o.path,
		"--stdin-grace=" + o.stdinGrace.String(),
		"--term-grace=" + o.termGrace.String(),
		"--",
	}, o.argv...)
}

// parseSupervisorArgs reads what supervisorArgs wrote.
func parseSupervisorArgs(args []string) (supervisorOptions, error) {
	var o supervisorOptions
	fs := flag.NewFlagSet("mcp-stdio supervise", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.path, "path", "", "the server's executable")
	fs.DurationVar(&o.stdinGrace, "stdin-grace", DefaultStdinGrace, "once the gateway is gone, how long the server may run on before SIGTERM")
	fs.DurationVar(&o.termGrace, "term-grace", DefaultTermGrace, "after SIGTERM, how long before SIGKILL")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.argv = fs.Args()
	if len(o.argv) == 0 {
		return o, fmt.Errorf("no server command")
	}
	if o.path == "" {
		o.path = o.argv[0]
	}
	return o, nil
}

// Supervise is the supervisor of a child process: the program named by
// ChildConfig.Supervisor calls it with the arguments it was given after
// that command, and exits with the status it returns (mcp-stdio's hidden
// "supervise" subcommand does this). It only works as a process of its
// own started by [StartChild]: it uses the process's standard descriptors
// and descriptor 3.
//
// It starts the server in a process group of its own, on the standard
// descriptors it was given, and returns once the server has exited, with
// the server's exit status. When the server was killed by SIGKILL, SIGTERM,
// SIGINT or SIGHUP, Supervise ends the process with the same signal rather
// than return; another signal N gives the status 128+N. Meanwhile it acts
// on what the gateway asks, and when the gateway goes away, however it
// goes, it ends the server's whole process group: stdin has ended for the
// server, then after the stdin grace comes SIGTERM, after the term grace
// SIGKILL. Whatever the server leaves in its group when it exits is killed.
// A process that leaves the group (setsid, setpgid) is out of reach; so is
// the group if the supervisor itself is killed with SIGKILL (the server is
// then killed by the kernel, what it started is not).
//
// Signals that would end the process otherwise (SIGTERM, SIGINT, SIGHUP)
// are passed on to the server's group instead. Linux only: elsewhere it
// reports an error and returns 2.
func Supervise(args []string) int {
	o, err := parseSupervisorArgs(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcp-stdio supervise: %v (this command is run by mcp-stdio serve)\n", err)
		return 2
	}
	return supervise(o)
}
