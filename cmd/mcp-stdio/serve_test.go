//go:build linux

package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-stdio/mcp-stdio/cmd/internal/procfs"
	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/cli"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// The test binary doubles as the mcp-stdio binary: run as the program
// "main" (see transporttest.RunProgram), it runs main. The children serve
// starts inherit the selection, so `serve` without a command publishes the
// bundled example server as the real binary would.
func init() {
	transporttest.RunProgram(map[string]func(args []string) int{
		"main": func([]string) int { main(); return 0 },
	})
}

// cmdTestWait bounds every wait; reaching it is a failure.
const cmdTestWait = 30 * time.Second

func TestServeUsage(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		code int
		out  string
		err  string
	}{
		{"help", []string{"serve", "--help"}, cli.ExitOK, "usage: mcp-stdio serve", ""},
		{"help command", []string{"help", "serve"}, cli.ExitOK, "usage: mcp-stdio serve", ""},
		{"relay help command", []string{"help"}, cli.ExitOK, "usage: mcp-stdio [flags] URL", ""},
		{"help on nothing", []string{"help", "frobnicate"}, cli.ExitUsage, "", `mcp-stdio: help: no help on "frobnicate"`},
		{"unknown flag", []string{"serve", "--nope"}, cli.ExitUsage, "", "mcp-stdio serve: unknown flag --nope (run 'mcp-stdio serve --help' for the flags)\n"},
		{"bad capability", []string{"serve", "--drop-client-capability", "tools"}, cli.ExitUsage, "", "mcp-stdio serve: invalid --drop-client-capability"},
		{"empty tool pattern", []string{"serve", "--deny-tool", ""}, cli.ExitUsage, "", "mcp-stdio serve: --deny-tool needs a tool name or a glob such as 'github_*', not an empty value (run 'mcp-stdio serve --help' for the flags)\n"},
		{"bad size", []string{"serve", "--max-body", "lots"}, cli.ExitUsage, "", `mcp-stdio serve: invalid value "lots" for --max-body: want bytes`},
		{"bad duration", []string{"serve", "--drain-timeout", "-5s"}, cli.ExitUsage, "", `mcp-stdio serve: invalid value "-5s" for --drain-timeout: want seconds`},
		{"bad path", []string{"serve", "--path", "mcp"}, cli.ExitUsage, "", `mcp-stdio serve: --path "mcp" must start with /`},
		{"bad SSE path", []string{"serve", "--sse-path", "sse"}, cli.ExitUsage, "", `mcp-stdio serve: --sse-path "sse" must start with /`},
		{"message path is the endpoint's", []string{"serve", "--message-path", "/mcp"}, cli.ExitUsage, "", `mcp-stdio serve: --message-path "/mcp" is the path of the Streamable HTTP endpoint`},
		{"SSE path is the endpoint's", []string{"serve", "--path", "/x", "--sse-path", "/x"}, cli.ExitUsage, "", `mcp-stdio serve: --sse-path "/x" is the path of the Streamable HTTP endpoint`},
		{"health path is an SSE path", []string{"serve", "--health-path", "/sse"}, cli.ExitUsage, "", `mcp-stdio serve: --health-path "/sse" must differ from --sse-path and --message-path`},
		{"bad public URL", []string{"serve", "--public-url", "ftp://x"}, cli.ExitUsage, "", "mcp-stdio serve: invalid --public-url"},
		{"no sessions", []string{"serve", "--max-sessions", "0"}, cli.ExitUsage, "", "mcp-stdio serve: --max-sessions must be positive"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, func(string) string { return "" }, nil, &stdout, &stderr)
			is.Equal(exitCode(err), tt.code)
			is.True(strings.Contains(stdout.String(), tt.out))
			is.True(strings.HasPrefix(stderr.String(), tt.err))
			is.True(strings.Count(stderr.String(), "\n") <= 1) // one line
		})
	}
}

// serve's help reads like the README: two dashes, placeholders that say
// what to give, defaults as they are typed.
func TestServeHelp(t *testing.T) {
	is := is.New(t)
	var stdout bytes.Buffer
	is.NoErr(run(context.Background(), []string{"serve", "--help"}, func(string) string { return "secret-from-env" }, nil, &stdout, io.Discard))
	out := stdout.String()
	for _, f := range []string{"--listen ADDR", "--path PATH", "--sse-path PATH", "--message-path PATH", "--no-sse", "--auth-token TOKEN", "--max-sessions N",
		"--drain-timeout DURATION", "--session-idle-timeout DURATION", "--max-body BYTES", "--max-buffered BYTES",
		"--log-level LEVEL", "-h, --help"} {
		is.True(strings.Contains(out, "\n  "+f))
	}
	for _, d := range []string{"(default 127.0.0.1:8080)", "(default /mcp)", "(default /sse)", "(default /message)", "(default 30m)", "(default 25s)",
		"(default 64MiB)", "(default info)", "(default 100)", "(default $MCP_STDIO_SERVE_TOKEN)"} {
		is.True(strings.Contains(out, d))
	}
	is.True(!strings.Contains(out, " once\n") && !strings.Contains(out, " long\n")) // placeholders of old
	is.True(!strings.Contains(out, "secret-from-env"))
}

// serve takes durations and sizes in the same format as the relay: plain
// seconds or Go durations, plain bytes or with a unit.
func TestServeDurationsAndSizes(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	transporttest.SetProgramEnv(t, "main")
	stderr := &transporttest.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--session-idle-timeout", "1800", "--read-timeout", "1.5",
			"--drain-timeout", "5s", "--stdin-grace", "2", "--max-body", "1MiB", "--max-message-size", "2097152", "--log-level", "debug"}, os.Getenv, nil, io.Discard, stderr)
		stderr.Close()
	}()
	stderr.Watch(servingLine).Next(t, cmdTestWait)
	is.True(strings.Contains(stderr.String(), "read_timeout=1.5s"))
	cancel()
	is.NoErr(<-done)
}

var (
	servingLine  = regexp.MustCompile(`serving .* at (http://\S+)`)
	childPIDLine = regexp.MustCompile(`server process started.*pid=(\d+)`)
)

func TestServePublishesTheExampleServer(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, stderr, done := serveInProcess(t, ctx)
	is.True(strings.HasSuffix(url, "/mcp"))
	is.True(strings.Contains(stderr.String(), "the bundled example server"))

	client := mcp.NewClient(&mcp.Implementation{Name: "cmd-test", Version: "1"}, nil)
	cctx, ccancel := context.WithTimeout(ctx, cmdTestWait)
	defer ccancel()
	httpClient := &http.Client{Transport: &http.Transport{}}
	defer httpClient.CloseIdleConnections()
	cs, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClient}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	is.NoErr(err)
	pid, _ := strconv.Atoi(stderr.Watch(childPIDLine).Next(t, cmdTestWait)[1])
	tools, err := cs.ListTools(cctx, nil)
	is.NoErr(err)
	is.True(len(tools.Tools) > 0)
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "through serve"}})
	is.NoErr(err)
	is.Equal(res.Content[0].(*mcp.TextContent).Text, "through serve")

	cancel() // SIGTERM: drain, close the sessions, exit 0
	select {
	case err := <-done:
		is.NoErr(err)
	case <-time.After(cmdTestWait):
		t.Fatal("serve did not stop")
	}
	is.True(transporttest.ProcessGone(t, pid, cmdTestWait))
	cs.Close()
}

// serveInProcess runs `mcp-stdio serve` on a free loopback port in this
// process until ctx ends, its children being this binary (as "main"),
// and returns its URL, its stderr and the channel of run's result.
func serveInProcess(t *testing.T, ctx context.Context) (url string, stderr *transporttest.SyncBuffer, done <-chan error) {
	t.Helper()
	transporttest.SetProgramEnv(t, "main")
	stderr = &transporttest.SyncBuffer{}
	result := make(chan error, 1)
	go func() {
		result <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug"}, os.Getenv, nil, io.Discard, stderr)
		stderr.Close()
	}()
	return stderr.Watch(servingLine).Next(t, cmdTestWait)[1], stderr, result
}

// startGateway runs the test binary as `mcp-stdio serve` and returns it
// with its stderr and its URL.
func startGateway(t *testing.T, args ...string) (*exec.Cmd, *transporttest.SyncBuffer, string) {
	t.Helper()
	cmd := transporttest.Command("main", append([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug"}, args...)...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	stderr := &transporttest.SyncBuffer{}
	go func() {
		io.Copy(stderr, pipe)
		stderr.Close()
	}()
	return cmd, stderr, stderr.Watch(servingLine).Next(t, cmdTestWait)[1]
}

// TestServeReleasesItsStartupPages checks that serve, once listening,
// gives back the pages of its program that starting mapped: what stays
// resident of the file right after is less than what was released.
func TestServeReleasesItsStartupPages(t *testing.T) {
	gw, lines, _ := startGateway(t)
	m := lines.Watch(regexp.MustCompile(`msg="released the program pages start-up mapped" .*kB=(\d+)`)).Next(t, cmdTestWait)
	released, _ := strconv.Atoi(m[1])
	resident, err := procfs.StatusKB(gw.Process.Pid, "RssFile")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("released %d kB; RssFile now %d kB", released, resident)
	if released == 0 || resident >= released {
		t.Errorf("released %d kB of the program's pages, and %d kB of files are still resident: want most of them released", released, resident)
	}
}

// openSession POSTs an initialize and returns the session id.
func openSession(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	return resp.Header.Get("Mcp-Session-Id")
}

func TestServeGatewayKilledLeavesNoChild(t *testing.T) {
	is := is.New(t)
	gw, stderr, url := startGateway(t)
	is.True(openSession(t, url) != "")
	pid, _ := strconv.Atoi(stderr.Watch(childPIDLine).Next(t, cmdTestWait)[1])
	is.True(pid > 0)
	is.True(!transporttest.ProcessGone(t, pid, 0))

	is.NoErr(gw.Process.Signal(syscall.SIGKILL)) // no chance to clean up
	gw.Wait()
	is.True(transporttest.ProcessGone(t, pid, cmdTestWait)) // its supervisor ended it
}

func TestServeSIGTERMDrainsAndExitsZero(t *testing.T) {
	is := is.New(t)
	gw, stderr, url := startGateway(t)
	openSession(t, url)
	openSession(t, url)
	pids := stderr.Watch(childPIDLine)
	first, _ := strconv.Atoi(pids.Next(t, cmdTestWait)[1])
	second, _ := strconv.Atoi(pids.Next(t, cmdTestWait)[1])

	is.NoErr(gw.Process.Signal(syscall.SIGTERM))
	err := gw.Wait()
	is.NoErr(err) // exit status 0
	is.True(transporttest.ProcessGone(t, first, 0))
	is.True(transporttest.ProcessGone(t, second, 0))
	is.True(strings.Contains(stderr.String(), "session closed"))
}

func TestServeWarnsWithoutAuthBeyondLoopback(t *testing.T) {
	is := is.New(t)
	_, stderr, url := startGateway(t, "--listen", "0.0.0.0:0")
	is.True(strings.HasPrefix(url, "http://127.0.0.1:"))
	is.True(strings.Contains(stderr.String(), "without authentication"))
}

// TestServeTunesItsProcess checks that serve, run as its own process, runs
// Go code on one thread unless GOMAXPROCS is set.
func TestServeTunesItsProcess(t *testing.T) {
	tuned := regexp.MustCompile(`msg="process tuned" .*gomaxprocs=(\d+)`)
	gomaxprocs := func(lines *transporttest.SyncBuffer) string {
		// Logged before the serving line, which startGateway awaited.
		if m := tuned.FindStringSubmatch(lines.String()); m != nil {
			return m[1]
		}
		return "(not logged)"
	}
	_, lines, _ := startGateway(t)
	if got := gomaxprocs(lines); got != "1" {
		t.Errorf("gomaxprocs=%s, want 1", got)
	}
	t.Setenv("GOMAXPROCS", "3")
	_, lines, _ = startGateway(t)
	if got := gomaxprocs(lines); got != "3" {
		t.Errorf("with GOMAXPROCS=3 in the environment: gomaxprocs=%s, want 3", got)
	}
}
