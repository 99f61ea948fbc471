//go:build linux

package transport

import (
	"context"
	"fmt"
	"io"
	"log/slog"
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
//     serves like "server" ("parent stubborn": like "stubborn"; "parent
//     deaf": reads no stdin and runs until a signal ends it);
//   - "sleeper": sleeps until killed;
//   - "stderr": writes lines to stderr (one of them long) and exits
//     ("stderr fail": two lines, then exits with status 2);
//   - "closer": writes {"jsonrpc":"2.0","method":"ready"}, reads one line,
//     closes its stdout and runs on, whatever stdin does, until a signal
//     ends it;
//   - "supervise": the supervisor (Supervise);
//   - "gateway": a gateway in a process of its own (see gatewayChild).
func init() {
	transporttest.RunProgram(map[string]func(args []string) int{
		"server":    transporttest.ScriptedServer,
		"stubborn":  stubbornChild,
		"parent":    parentChild,
		"sleeper":   sleeperChild,
		"stderr":    stderrChild,
		"closer":    closerChild,
		"supervise": Supervise,
		"gateway":   gatewayChild,
	})
}

// childMode is a way to start a child: directly, or under the supervisor.
type childMode struct {
	name   string
	config func(t testing.TB, program string, args ...string) ChildConfig
}

// childModes returns both ways to start a child, for tests that hold for
// either.
func childModes() []childMode {
	return []childMode{
		{"direct", testChildCommand},
		{"supervised", supervisedChildCommand},
	}
}

// testChildCommand returns a ChildConfig that runs the test binary as the
// child program.
func testChildCommand(t testing.TB, program string, args ...string) ChildConfig {
	t.Helper()
	cmd := transporttest.Command(program, args...)
	return ChildConfig{
		Command:    cmd.Args,
		Env:        cmd.Env,
		StdinGrace: 5 * time.Second,
		TermGrace:  5 * time.Second,
	}
}

// supervisedChildCommand returns a ChildConfig that runs the test binary as
// the child program under the test binary as the supervisor. Both choose
// their program by their first argument, since the supervisor hands its
// environment on to the server.
func supervisedChildCommand(t testing.TB, program string, args ...string) ChildConfig {
	t.Helper()
	cmd := transporttest.ArgCommand(program, args...)
	return ChildConfig{
		Command:    cmd.Args,
		Env:        cmd.Env,
		Supervisor: transporttest.ArgCommand("supervise").Args,
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

func parentChild(args []string) int {
	cmd := transporttest.Command("sleeper")
	if err := cmd.Start(); err != nil {
		return 1
	}
	if len(args) > 0 && args[0] == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
	}
	frame.NewWriter(os.Stdout).Write(frame.MustParse(fmt.Sprintf(`{"jsonrpc":"2.0","method":"grandchild","params":{"pid":%d}}`, cmd.Process.Pid)))
	if len(args) > 0 && (args[0] == "stubborn" || args[0] == "deaf") { // deaf: reads no stdin
		for {
			time.Sleep(time.Hour)
		}
	}
	return transporttest.ScriptedServer(nil)
}

// gatewayChild is a gateway in a process of its own, for tests that end it
// the way a gateway may end: "gateway STDIN_GRACE TERM_GRACE PROGRAM
// ARGS..." starts PROGRAM (which must announce a grandchild first, like
// "parent") under the supervisor with those graces and its debug log on
// stderr, prints {"server":PID,"grandchild":PID} on stdout, and then
// exits when its stdin ends, without closing the child.
func gatewayChild(args []string) int {
	stdinGrace, err1 := time.ParseDuration(args[0])
	termGrace, err2 := time.ParseDuration(args[1])
	if err1 != nil || err2 != nil || len(args) < 3 {
		fmt.Fprintln(os.Stderr, "gateway: bad arguments", args)
		return 2
	}
	server := transporttest.ArgCommand(args[2], args[3:]...)
	grandchild := make(chan int64, 1)
	c, err := StartChild(ChildConfig{
		Command:    server.Args,
		Env:        server.Env,
		Supervisor: transporttest.ArgCommand("supervise").Args,
		StdinGrace: stdinGrace,
		TermGrace:  termGrace,
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}, SinkFunc(func(_ context.Context, m frame.Message) error {
		if m.Method() == "grandchild" {
			grandchild <- m.Get("params.pid").Int()
		}
		return nil
	}))
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		return 1
	}
	fmt.Printf(`{"server":%d,"grandchild":%d}`+"\n", c.PID(), <-grandchild)
	io.Copy(io.Discard, os.Stdin)
	return 0
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

func stderrChild(args []string) int {
	if len(args) > 0 && args[0] == "fail" {
		fmt.Fprint(os.Stderr, "starting\nfatal: no config file\n\n")
		return 2
	}
	fmt.Fprint(os.Stderr, "first line\nsecond line\n")
	long := make([]byte, stderrLineMax+10)
	for i := range long {
		long[i] = 'x'
	}
	os.Stderr.Write(long)
	fmt.Fprint(os.Stderr, "\nno newline at the end")
	return 0
}
