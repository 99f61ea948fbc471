//go:build linux

package transport

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// The test binary doubles as the child process of the child and server
// tests (see transporttest.RunProgram), as one of these programs:
//
//   - "server": a scripted MCP server (transporttest.ScriptedServer);
//   - "stubborn": ignores SIGTERM and stdin's end, and runs until killed;
//   - "parent": starts a "sleeper" grandchild in its process group, writes
//     {"jsonrpc":"2.0","method":"grandchild","params":{"pid":N}} and then
//     serves like "server";
//   - "sleeper": sleeps until killed;
//   - "stderr": writes lines to stderr (one of them long) and exits;
//   - "closer": writes {"jsonrpc":"2.0","method":"ready"}, reads one line,
//     closes its stdout and runs on, whatever stdin does, until a signal
//     ends it.
func init() {
	transporttest.RunProgram(map[string]func(args []string) int{
		"server":   transporttest.ScriptedServer,
		"stubborn": stubbornChild,
		"parent":   parentChild,
		"sleeper":  sleeperChild,
		"stderr":   stderrChild,
		"closer":   closerChild,
	})
}

// testChildCommand returns a ChildConfig that runs the test binary as the
// child program mode.
func testChildCommand(t testing.TB, mode string) ChildConfig {
	t.Helper()
	cmd := transporttest.Command(mode)
	return ChildConfig{
		Command:    cmd.Args,
		Env:        cmd.Env,
		StdinGrace: 5 * time.Second,
		TermGrace:  5 * time.Second,
	}
}

func stubbornChild([]string) int {
	signal.Ignore(syscall.SIGTERM)
	frame.NewWriter(os.Stdout).Write(frame.MustParse(`{"jsonrpc":"2.0","method":"ready"}`))
	for {
		time.Sleep(time.Hour)
	}
}

func parentChild([]string) int {
	cmd := transporttest.Command("sleeper")
	if err := cmd.Start(); err != nil {
		return 1
	}
	frame.NewWriter(os.Stdout).Write(frame.MustParse(fmt.Sprintf(`{"jsonrpc":"2.0","method":"grandchild","params":{"pid":%d}}`, cmd.Process.Pid)))
	return transporttest.ScriptedServer(nil)
}

func closerChild([]string) int {
	frame.NewWriter(os.Stdout).Write(frame.MustParse(`{"jsonrpc":"2.0","method":"ready"}`))
	frame.NewReader(os.Stdin, 0).Read()
	os.Stdout.Close()
	for {
		time.Sleep(time.Hour)
	}
}

func sleeperChild([]string) int {
	for {
		time.Sleep(time.Hour)
	}
}

func stderrChild([]string) int {
	fmt.Fprint(os.Stderr, "first line\nsecond line\n")
	long := make([]byte, stderrLineMax+10)
	for i := range long {
		long[i] = 'x'
	}
	os.Stderr.Write(long)
	fmt.Fprint(os.Stderr, "\nno newline at the end")
	return 0
}
