//go:build linux

package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// testWait bounds every wait in these tests; reaching it is a failure.
const testWait = 20 * time.Second

// messageQueue is a Sink that queues what it is given.
type messageQueue chan frame.Message

func (q messageQueue) Handle(_ context.Context, m frame.Message) error {
	q <- m
	return nil
}

// next returns the next message, failing the test after testWait.
func (q messageQueue) next(t testing.TB) frame.Message {
	t.Helper()
	select {
	case m := <-q:
		return m
	case <-time.After(testWait):
		t.Fatal("no message from the child")
		return frame.Message{}
	}
}

func startTestChild(t *testing.T, cfg ChildConfig, sink Sink) *Child {
	t.Helper()
	c, err := StartChild(cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testWait)
		defer cancel()
		c.Close(ctx)
	})
	return c
}

func waitDone(t *testing.T, c *Child) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(testWait):
		t.Fatal("the child did not end")
	}
}

func TestChildRoundTrip(t *testing.T) {
	for _, mode := range childModes() {
		t.Run(mode.name, func(t *testing.T) {
			is := is.New(t)
			q := make(messageQueue, 8)
			c := startTestChild(t, mode.config(t, "server"), q)
			req := `{"jsonrpc":"2.0","id":"x1","method":"echo","params":{"n":1.50,"s":"é"}}`
			is.NoErr(c.Handle(context.Background(), frame.MustParse(req)))
			got := q.next(t)
			is.Equal(got.String(), `{"jsonrpc":"2.0","id":"x1","result":{"n":1.50,"s":"é"}}`) // params echoed byte for byte

			is.NoErr(c.Close(context.Background()))
			waitDone(t, c)
			is.NoErr(c.Err()) // stdin closed: the server exits 0 on its own
			var se *frame.SendError
			err := c.Handle(context.Background(), frame.MustParse(req))
			is.True(errors.As(err, &se))
			is.True(errors.Is(err, ErrChildExited))
			is.True(!se.Sent) // nothing was written
		})
	}
}

func TestChildStderrIsPrefixedLineByLine(t *testing.T) {
	for _, mode := range childModes() {
		t.Run(mode.name, func(t *testing.T) {
			is := is.New(t)
			var out transporttest.SyncBuffer
			cfg := mode.config(t, "stderr")
			cfg.Stderr = &out
			cfg.StderrPrefix = "[abc] "
			c := startTestChild(t, cfg, nil)
			waitDone(t, c)
			want := "[abc] first line\n" +
				"[abc] second line\n" +
				"[abc] " + strings.Repeat("x", stderrLineMax) + "\n" +
				"[abc] " + strings.Repeat("x", 10) + "\n" +
				"[abc] no newline at the end\n"
			is.Equal(out.String(), want)
		})
	}
}

// A child that fails on its own is a warning with its exit status and
// the stderr lines that explain it (StderrExcerpt); one the gateway ends
// is not.
func TestChildFailureIsLoggedWithItsStderr(t *testing.T) {
	for _, mode := range childModes() {
		t.Run(mode.name, func(t *testing.T) {
			is := is.New(t)
			logs := &transporttest.SyncBuffer{}
			cfg := mode.config(t, "stderr", "fail")
			cfg.Logger = debugLogger(logs)
			failed := startTestChild(t, cfg, nil)
			waitDone(t, failed)
			is.True(strings.Contains(logs.String(), `level=WARN msg="server process exited with an error"`))
			is.True(strings.Contains(logs.String(), `status="exit status 2" stderr="starting\nfatal: no config file"`))
			is.Equal(failed.StderrExcerpt(), "starting\nfatal: no config file")

			logs = &transporttest.SyncBuffer{}
			cfg = mode.config(t, "stubborn")
			cfg.Logger = debugLogger(logs)
			cfg.StdinGrace, cfg.TermGrace = time.Millisecond, time.Millisecond
			c := startTestChild(t, cfg, nil)
			is.NoErr(c.Close(context.Background()))
			is.True(c.Err() != nil) // killed
			is.True(!strings.Contains(logs.String(), "level=WARN msg=\"server process exited"))
		})
	}
}

func TestChildCloseEscalatesToSIGKILL(t *testing.T) {
	for _, mode := range childModes() {
		t.Run(mode.name, func(t *testing.T) {
			is := is.New(t)
			q := make(messageQueue, 8)
			cfg := mode.config(t, "stubborn")
			cfg.StdinGrace = 20 * time.Millisecond
			cfg.TermGrace = 20 * time.Millisecond
			c := startTestChild(t, cfg, q)
			is.Equal(q.next(t).Method(), "ready") // SIGTERM is ignored from here on

			is.NoErr(c.Close(context.Background()))
			var ee *exec.ExitError
			is.True(errors.As(c.Err(), &ee))
			ws := ee.Sys().(syscall.WaitStatus)
			is.True(ws.Signaled())
			is.Equal(ws.Signal(), syscall.SIGKILL) // survived stdin's end and SIGTERM
			is.True(transporttest.ProcessGone(t, c.PID(), testWait))
		})
	}
}

func TestChildCloseWithEndedContextKillsAtOnce(t *testing.T) {
	for _, mode := range childModes() {
		t.Run(mode.name, func(t *testing.T) {
			is := is.New(t)
			q := make(messageQueue, 8)
			cfg := mode.config(t, "stubborn")
			cfg.StdinGrace = time.Hour
			cfg.TermGrace = time.Hour
			c := startTestChild(t, cfg, q)
			is.Equal(q.next(t).Method(), "ready")
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			is.Equal(c.Close(ctx), context.Canceled)
			var ee *exec.ExitError
			is.True(errors.As(c.Err(), &ee))
			is.Equal(ee.Sys().(syscall.WaitStatus).Signal(), syscall.SIGKILL)
		})
	}
}

// Terminate skips the stdin grace: a child that reads no stdin (an hour's
// grace) ends by the SIGTERM its process group gets at once.
func TestChildTerminateSkipsTheStdinGrace(t *testing.T) {
	for _, mode := range childModes() {
		t.Run(mode.name, func(t *testing.T) {
			is := is.New(t)
			q := make(messageQueue, 8)
			cfg := mode.config(t, "parent", "deaf")
			cfg.StdinGrace = time.Hour
			cfg.TermGrace = time.Hour
			c := startTestChild(t, cfg, q)
			first := q.next(t)
			is.Equal(first.Method(), "grandchild")
			grandchild := int(first.Get("params.pid").Int())

			is.NoErr(c.Terminate(context.Background())) // returns: an hour's grace was not waited for
			if mode.name == "direct" {
				var ee *exec.ExitError
				is.True(errors.As(c.Err(), &ee))
				is.Equal(ee.Sys().(syscall.WaitStatus).Signal(), syscall.SIGTERM)
			}
			is.True(transporttest.ProcessGone(t, grandchild, testWait)) // its group got it too
		})
	}
}

func TestChildGroupIsKilledWithIt(t *testing.T) {
	for _, mode := range childModes() {
		t.Run(mode.name, func(t *testing.T) {
			is := is.New(t)
			q := make(messageQueue, 8)
			c := startTestChild(t, mode.config(t, "parent"), q)
			first := q.next(t)
			is.Equal(first.Method(), "grandchild")
			grandchild := int(first.Get("params.pid").Int())
			is.True(grandchild > 0)
			is.True(!transporttest.ProcessGone(t, grandchild, 0)) // running

			is.NoErr(c.Close(context.Background()))
			is.True(transporttest.ProcessGone(t, grandchild, testWait)) // killed through the process group
		})
	}
}

func TestChildDeathIsDetected(t *testing.T) {
	for _, mode := range childModes() {
		t.Run(mode.name, func(t *testing.T) {
			is := is.New(t)
			q := make(messageQueue, 8)
			c := startTestChild(t, mode.config(t, "server"), q)
			is.NoErr(c.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"crash"}`)))
			waitDone(t, c)
			var ee *exec.ExitError
			is.True(errors.As(c.Err(), &ee))
			is.Equal(ee.ExitCode(), 3)
			is.True(errors.Is(c.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"echo"}`)), ErrChildExited))
		})
	}
}

// A child that closes its stdout but keeps running can answer nothing
// more: it is done at once, and stopped as Close stops a child (here it
// ignores stdin's end, so SIGTERM ends it), without anyone calling Close.
func TestChildThatClosesItsStdoutIsDoneAndStopped(t *testing.T) {
	for _, mode := range childModes() {
		t.Run(mode.name, func(t *testing.T) {
			is := is.New(t)
			logs := &transporttest.SyncBuffer{}
			q := make(messageQueue, 8)
			cfg := mode.config(t, "closer")
			cfg.StdinGrace = 500 * time.Millisecond // long enough to be seen running on
			cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
			c := startTestChild(t, cfg, q)
			is.Equal(q.next(t).Method(), "ready")
			closed := logs.Watch(regexp.MustCompile(`server process closed its stdout but is still running`))

			is.NoErr(c.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"echo"}`)))
			waitDone(t, c) // its stdout ended; the process is still there
			closed.Next(t, testWait)
			is.True(transporttest.ProcessGone(t, c.PID(), testWait)) // stopped by the child itself

			is.NoErr(c.Close(context.Background())) // nothing left to do
			var ee *exec.ExitError
			is.True(errors.As(c.Err(), &ee))
			is.Equal(ee.Sys().(syscall.WaitStatus).Signal(), syscall.SIGTERM)
		})
	}
}

func TestChildOversizedLineIsAnsweredWithAnError(t *testing.T) {
	for _, mode := range childModes() {
		t.Run(mode.name, func(t *testing.T) {
			is := is.New(t)
			q := make(messageQueue, 8)
			cfg := mode.config(t, "server")
			cfg.MaxMessageSize = 200
			c := startTestChild(t, cfg, q)
			big := strings.Repeat("y", 300)
			is.NoErr(c.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":7,"method":"echo","params":{"s":"`+big+`"}}`)))
			got := q.next(t)
			code, isErr := got.ErrorCode()
			is.True(isErr)
			is.Equal(got.ID(), frame.ID("7"))
			is.Equal(code, frame.CodeInternalError)
			// The child carries on.
			is.NoErr(c.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":8,"method":"echo","params":{}}`)))
			is.Equal(q.next(t).String(), `{"jsonrpc":"2.0","id":8,"result":{}}`)
		})
	}
}

// A line of the child's whose envelope is invalid leaves nobody waiting: a
// response gets its request an error toward the client, a request of the
// child's own is refused on the child's stdin; anything else is dropped.
func TestChildInvalidEnvelopes(t *testing.T) {
	is := is.New(t)
	q := make(messageQueue, 8)
	c := startTestChild(t, testChildCommand(t, "server"), q)
	ctx := context.Background()

	is.NoErr(c.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"raw","params":{"line":"{\"id\":1,\"result\":{}}"}}`)))
	is.Equal(q.next(t).String(), `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"invalid response from the server: jsonrpc must be \"2.0\""}}`)

	is.NoErr(c.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"raw","params":{"await":"c1","line":"{\"jsonrpc\":\"2.0\",\"id\":\"c1\",\"method\":\"roots/list\",\"params\":[]}"}}`)))
	is.Equal(q.next(t).String(), `{"jsonrpc":"2.0","id":2,"result":{"reply":{"jsonrpc":"2.0","id":"c1","error":{"code":-32600,"message":"invalid request: params must be an object"}}}}`)

	for _, line := range []string{
		`{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":[]}`, // a notification
		`{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}`,                          // no id to answer
		`{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"roots/list\"}`,              // no id to answer under
	} {
		is.NoErr(c.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":3,"method":"raw","params":{"line":"`+line+`"}}`)))
	}
	is.NoErr(c.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":4,"method":"echo","params":{}}`)))
	is.Equal(q.next(t).String(), `{"jsonrpc":"2.0","id":4,"result":{}}`) // nothing came before it
}

func TestChildStartFailure(t *testing.T) {
	is := is.New(t)
	_, err := StartChild(ChildConfig{Command: []string{"/nonexistent/mcp-server"}}, nil)
	is.True(err != nil)
	_, err = StartChild(ChildConfig{}, nil)
	is.True(err != nil)

	// Under a supervisor: not found here, and not started there.
	cfg := supervisedChildCommand(t, "server")
	cfg.Command = []string{"no-such-mcp-server-anywhere"}
	_, err = StartChild(cfg, nil)
	is.True(errors.Is(err, exec.ErrNotFound))
	cfg.Command = []string{"/nonexistent/mcp-server"}
	_, err = StartChild(cfg, nil)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "no such file or directory"))
}

// Under the supervisor, a gateway that ends without closing its child —
// killed with SIGKILL or SIGTERM, or exiting — leaves nothing behind: not
// the server, not the process it started, not the supervisor. The
// stubborn server ignores SIGTERM and the end of its stdin, so only
// SIGKILL ends it.
func TestSupervisedChildEndsWithTheGateway(t *testing.T) {
	signal := func(sig syscall.Signal) func(*exec.Cmd, io.Closer) error {
		return func(gw *exec.Cmd, _ io.Closer) error { return gw.Process.Signal(sig) }
	}
	closeStdin := func(_ *exec.Cmd, stdin io.Closer) error { return stdin.Close() }
	for _, tt := range []struct {
		name   string
		end    func(gw *exec.Cmd, stdin io.Closer) error
		server []string
	}{
		{"SIGKILL", signal(syscall.SIGKILL), []string{"parent"}},
		{"SIGTERM", signal(syscall.SIGTERM), []string{"parent"}},
		{"exit", closeStdin, []string{"parent"}},
		{"SIGKILL, stubborn server", signal(syscall.SIGKILL), []string{"parent", "stubborn"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			gw := transporttest.ArgCommand("gateway", append([]string{"100ms", "100ms"}, tt.server...)...)
			stdin, err := gw.StdinPipe()
			is.NoErr(err)
			stdout, err := gw.StdoutPipe()
			is.NoErr(err)
			logs := &transporttest.SyncBuffer{}
			gw.Stderr = logs
			is.NoErr(gw.Start())
			t.Cleanup(func() {
				gw.Process.Kill()
				gw.Wait()
			})
			line, err := bufio.NewReader(stdout).ReadBytes('\n')
			is.NoErr(err)
			var pids struct{ Server, Grandchild int }
			is.NoErr(json.Unmarshal(line, &pids))
			started := logs.Watch(regexp.MustCompile(`server process started.* supervisor=(\d+)`)).Next(t, testWait)
			supervisor, err := strconv.Atoi(started[1])
			is.NoErr(err)
			tree := map[string]int{"server": pids.Server, "grandchild": pids.Grandchild, "supervisor": supervisor}
			for name, pid := range tree {
				if pid <= 0 || transporttest.ProcessGone(t, pid, 0) {
					t.Fatalf("the %s (pid %d) is not running", name, pid)
				}
			}

			is.NoErr(tt.end(gw, stdin))
			gw.Wait()
			for name, pid := range tree {
				if !transporttest.ProcessGone(t, pid, testWait) {
					t.Errorf("the %s (pid %d) outlived the gateway", name, pid)
				}
			}
		})
	}
}

// Signals that would end the supervisor reach the server's group instead,
// and the supervisor then ends as the server did.
func TestSupervisorPassesSignalsOn(t *testing.T) {
	is := is.New(t)
	logs := &transporttest.SyncBuffer{}
	q := make(messageQueue, 8)
	cfg := supervisedChildCommand(t, "parent")
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := startTestChild(t, cfg, q)
	grandchild := int(q.next(t).Get("params.pid").Int())
	started := logs.Watch(regexp.MustCompile(`server process started.* supervisor=(\d+)`)).Next(t, testWait)
	supervisor, err := strconv.Atoi(started[1])
	is.NoErr(err)

	is.NoErr(syscall.Kill(supervisor, syscall.SIGTERM))
	waitDone(t, c)
	var ee *exec.ExitError
	is.True(errors.As(c.Err(), &ee))
	is.Equal(ee.Sys().(syscall.WaitStatus).Signal(), syscall.SIGTERM) // how the server ended
	is.True(transporttest.ProcessGone(t, c.PID(), 0))
	is.True(transporttest.ProcessGone(t, grandchild, testWait))
}

func TestChildOnExitSaysHowItEnded(t *testing.T) {
	tests := []struct {
		name    string
		command []string
		close   bool // the gateway ends it
		want    ChildExit
		status  string
	}{
		{"exits 0 on its own", []string{"/bin/sh", "-c", "exit 0"}, false, ChildExited, "<nil>"},
		{"fails on its own", []string{"/bin/sh", "-c", "exit 3"}, false, ChildFailed, "exit status 3"},
		{"stopped by the gateway", []string{"cat"}, true, ChildStopped, "<nil>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			type exit struct {
				how    ChildExit
				status string
			}
			exits := make(chan exit, 2)
			c := startTestChild(t, ChildConfig{
				Command:    tt.command,
				StdinGrace: testWait, // long enough to exit on its own after stdin closes
				TermGrace:  10 * time.Millisecond,
				OnExit:     func(how ChildExit, status error) { exits <- exit{how, fmtErr(status)} },
			}, nil)
			if tt.close {
				is.NoErr(c.Close(context.Background()))
			}
			select {
			case <-c.Done():
			case <-time.After(testWait):
				t.Fatal("the child did not end")
			}
			select {
			case e := <-exits: // told before Done
				is.Equal(e, exit{tt.want, tt.status})
			default:
				t.Fatal("OnExit was not called before Done")
			}
			is.Equal(tt.want.String() != "", true)
		})
	}
}

// fmtErr prints err, "<nil>" for none.
func fmtErr(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
