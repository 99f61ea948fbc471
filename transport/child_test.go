//go:build linux

package transport

import (
	"context"
	"errors"
	"os/exec"
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
	is := is.New(t)
	q := make(messageQueue, 8)
	c := startTestChild(t, testChildCommand(t, "server"), q)
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
}

func TestChildStderrIsPrefixedLineByLine(t *testing.T) {
	is := is.New(t)
	var out transporttest.SyncBuffer
	cfg := testChildCommand(t, "stderr")
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
}

func TestChildCloseEscalatesToSIGKILL(t *testing.T) {
	is := is.New(t)
	q := make(messageQueue, 8)
	cfg := testChildCommand(t, "stubborn")
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
}

func TestChildCloseWithEndedContextKillsAtOnce(t *testing.T) {
	is := is.New(t)
	q := make(messageQueue, 8)
	cfg := testChildCommand(t, "stubborn")
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
}

func TestChildGroupIsKilledWithIt(t *testing.T) {
	is := is.New(t)
	q := make(messageQueue, 8)
	c := startTestChild(t, testChildCommand(t, "parent"), q)
	first := q.next(t)
	is.Equal(first.Method(), "grandchild")
	grandchild := int(first.Get("params.pid").Int())
	is.True(grandchild > 0)
	is.True(!transporttest.ProcessGone(t, grandchild, 0)) // running

	is.NoErr(c.Close(context.Background()))
	is.True(transporttest.ProcessGone(t, grandchild, testWait)) // killed through the process group
}

func TestChildDeathIsDetected(t *testing.T) {
	is := is.New(t)
	q := make(messageQueue, 8)
	c := startTestChild(t, testChildCommand(t, "server"), q)
	is.NoErr(c.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"crash"}`)))
	waitDone(t, c)
	var ee *exec.ExitError
	is.True(errors.As(c.Err(), &ee))
	is.Equal(ee.ExitCode(), 3)
	is.True(errors.Is(c.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"echo"}`)), ErrChildExited))
}

func TestChildOversizedLineIsAnsweredWithAnError(t *testing.T) {
	is := is.New(t)
	q := make(messageQueue, 8)
	cfg := testChildCommand(t, "server")
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
}
