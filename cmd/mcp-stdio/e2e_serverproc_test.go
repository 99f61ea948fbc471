package main_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// serverProcess is the program of this test binary that runs the go-sdk
// fixture server instead of the tests: it prints the endpoint URL on
// stdout and serves until its stdin ends. Its one optional argument is the
// serverKind (stateful Streamable HTTP without one). The benchmarks use it
// to put the server in a process of its own.
const serverProcess = "server-process"

// runServerProcess is the test binary run as serverProcess, with its
// arguments.
func runServerProcess(args []string) int {
	kind := streamableServer
	if len(args) > 0 {
		kind = serverKind(args[0])
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fx := newFixture()
	go func() { _ = http.Serve(ln, kind.handler(fx.server)) }()
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes it or dies
	return 0
}

// startServerProcess starts the fixture server (stateful Streamable HTTP)
// in a process of its own and returns its endpoint URL; the process ends
// with the test.
func startServerProcess(tb testing.TB) (url string, pid int) {
	tb.Helper()
	return startServerProcessOf(tb, streamableServer)
}

// startServerProcessOf is startServerProcess serving kind.
func startServerProcessOf(tb testing.TB, kind serverKind) (url string, pid int) {
	tb.Helper()
	cmd := transporttest.Command(serverProcess, string(kind))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = stdin.Close()
		if err := cmd.Wait(); err != nil {
			tb.Errorf("server process: %v", err)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("server process printed no URL: %v", err)
	}
	return strings.TrimSpace(line), cmd.Process.Pid
}
