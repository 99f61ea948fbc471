//go:build unix

package golden

import (
	"context"
	"os"
	"syscall"

	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/cli"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// serveVersion is the version the serve transcripts run under: the
// gateway's and the example server's serverInfo.version.
const serveVersion = "golden"

// The test binary doubles as the mcp-stdio binary's hidden example-server
// and supervise subcommands (see transporttest.RunProgram). `mcp-stdio
// serve` without a command starts `<its own executable> example-server`,
// under `<its own executable> supervise`; in these tests its own
// executable is the test binary, so a serve transcript publishes the
// bundled example server exactly as the real binary does, each session in
// a real child process.
func init() {
	transporttest.RunProgram(map[string]func(args []string) int{
		cli.ExampleServerCommand: exampleServer,
		cli.SuperviseCommand:     supervise,
	})
}

// supervise runs the supervisor with args, and leaves as exampleServer
// does.
func supervise(args []string) int {
	err := cli.Supervise(context.Background(), args, os.Getenv, os.Stdin, os.Stdout, os.Stderr, cli.Options{})
	syscall.Exit(cli.ExitCode(err))
	panic("not reached")
}

// exampleServer runs the example server with args.
//
// It leaves through syscall.Exit, which skips the race detector's
// exit-time sleep (a second per child under -race) and nothing else: the
// example server has written and flushed everything by the time it
// returns.
func exampleServer(args []string) int {
	err := cli.ExampleServer(context.Background(), args, os.Getenv, os.Stdin, os.Stdout, os.Stderr,
		cli.Options{Version: serveVersion})
	syscall.Exit(cli.ExitCode(err))
	panic("not reached")
}
