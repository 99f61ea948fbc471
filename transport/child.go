package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Default graces of [Child.Close].
const (
	// DefaultStdinGrace is how long a child gets to exit after its stdin is
	// closed before it is sent SIGTERM.
	DefaultStdinGrace = 2 * time.Second
	// DefaultTermGrace is how long a child gets to exit after SIGTERM before
	// it is sent SIGKILL.
	DefaultTermGrace = 2 * time.Second
)

// childDrainGrace bounds how long the child's stdout and stderr are still
// read after the child itself has exited. Only a grandchild that inherited
// them can keep them open that long; its output is then cut off.
const childDrainGrace = time.Second

// stderrLineMax is the longest stderr line passed on in one piece; longer
// lines are split, each piece prefixed.
const stderrLineMax = 16 << 10

// ErrChildExited means the child process has exited, so a message could not
// be written to it. It matches frame.ErrUnavailable: the peer is gone.
var ErrChildExited error = unavailableError("server process exited")

// ChildConfig describes a stdio MCP server to run as a child process.
type ChildConfig struct {
	// Command is the program and its arguments; Command[0] is looked up in
	// PATH when it contains no slash.
	Command []string
	// Env is the child's environment; nil means the gateway's own.
	Env []string
	// Dir is the child's working directory; "" means the gateway's.
	Dir string
	// Stderr receives the child's stderr, one line per Write, each line
	// starting with StderrPrefix. nil discards it. Several children may
	// share one writer as long as it is safe for concurrent use.
	Stderr io.Writer
	// StderrPrefix starts every stderr line, e.g. "[a1b2c3d4] ".
	StderrPrefix string
	// MaxMessageSize bounds one line the child writes to stdout; 0 means
	// frame.DefaultMaxMessageSize. A longer line is skipped and, when its id
	// can be recovered, answered toward the client with an error.
	MaxMessageSize int
	// Budget, when set, counts the child's lines longer than
	// frame.BudgetMin until the Sink has taken them; a line it cannot take
	// is skipped and answered like an oversized one.
	Budget *frame.Budget
	// StdinGrace and TermGrace are the graces of [Child.Close]; 0 means
	// [DefaultStdinGrace] and [DefaultTermGrace].
	StdinGrace time.Duration
	TermGrace  time.Duration
	// Context carries the values every message the child writes is handed
	// to the Sink under (a connection's state, say); its cancellation is
	// not looked at. nil means context.Background().
	Context context.Context
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// Child is a stdio MCP server running as a child process: messages given to
// [Child.Handle] are written to its stdin, one per line, and every line it
// writes to stdout is handed to the Sink given to [StartChild]. Its stderr
// passes through to ChildConfig.Stderr, line by line.
//
// The child runs in a process group of its own. On Linux it is also killed
// (SIGKILL) when the gateway dies, however it dies, so a crashed gateway
// leaves no server running; that guard covers the child itself, not
// processes it starts in turn, which [Child.Close] reaches through the
// group. When the child exits, its group is killed too.
type Child struct {
	cfg      ChildConfig
	log      *slog.Logger
	cmd      *exec.Cmd
	stdin    *os.File
	stdio    *Stdio // over the child's stdout and stdin
	toClient Sink

	ctx    context.Context // ends when the child has exited and been drained
	cancel context.CancelFunc

	exited chan struct{} // closed once the process has exited
	done   chan struct{} // closed once it has exited and its output is drained
	err    error         // the exit status; read after exited is closed

	closeOnce sync.Once
	closeErr  error
}

// StartChild starts the child and begins handing its stdout messages to
// toClient. Handle is called on the child's reading goroutine, one message
// at a time, in the order the child wrote them; a Handle error is logged and
// the message dropped (the child's output is still drained, so it never
// blocks on a full pipe because a client went away).
func StartChild(cfg ChildConfig, toClient Sink) (*Child, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, errors.New("transport: no server command")
	}
	if cfg.StdinGrace <= 0 {
		cfg.StdinGrace = DefaultStdinGrace
	}
	if cfg.TermGrace <= 0 {
		cfg.TermGrace = DefaultTermGrace
	}
	if toClient == nil {
		toClient = SinkFunc(func(context.Context, frame.Message) error { return nil })
	}
	c := &Child{
		cfg:      cfg,
		log:      orDiscard(cfg.Logger),
		toClient: toClient,
		exited:   make(chan struct{}),
		done:     make(chan struct{}),
	}
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Env = cfg.Env
	cmd.Dir = cfg.Dir
	setProcessAttributes(cmd)

	// Our own pipes rather than exec's: exec would close its pipes when the
	// process exits, racing the read of its last lines; and these support
	// deadlines, which bound the drain when a grandchild keeps them open.
	var toClose []*os.File
	closeAll := func() {
		for _, f := range toClose {
			f.Close()
		}
	}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("transport: stdin pipe: %w", err)
	}
	toClose = append(toClose, stdinR, stdinW)
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("transport: stdout pipe: %w", err)
	}
	toClose = append(toClose, stdoutR, stdoutW)
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("transport: stderr pipe: %w", err)
	}
	toClose = append(toClose, stderrR, stderrW)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("transport: start %s: %w", cfg.Command[0], err)
	}
	// The child holds its ends now; ours would keep EOF from ever coming.
	stdinR.Close()
	stdoutW.Close()
	stderrW.Close()

	c.cmd = cmd
	c.stdin = stdinW
	c.stdio = NewStdio(stdoutR, stdinW, StdioConfig{
		MaxMessageSize: cfg.MaxMessageSize,
		Budget:         cfg.Budget,
		BadLine:        c.badLine,
		Logger:         c.log,
	})
	base := cfg.Context
	if base == nil {
		base = context.Background()
	}
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(base))
	c.log.Debug("server process started", "pid", cmd.Process.Pid, "command", cfg.Command[0])

	stdoutDone := make(chan struct{})
	stderrDone := make(chan struct{})
	go c.readStdout(stdoutDone)
	go c.readStderr(stderrR, stderrDone)
	go c.wait(stdoutR, stderrR, stdoutDone, stderrDone)
	return c, nil
}

// PID returns the child's process id (also its process group id where
// groups are used).
func (c *Child) PID() int { return c.cmd.Process.Pid }

// Handle writes m to the child's stdin as one line. It returns once the
// line is in the pipe, not when the child answers. Lines never interleave.
// After the child has exited it fails with a *frame.SendError (Sent false)
// wrapping [ErrChildExited]. A write cannot be abandoned half-way, so ctx is
// checked only before it starts.
func (c *Child) Handle(ctx context.Context, m frame.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-c.exited:
		return &frame.SendError{Sent: false, Err: ErrChildExited}
	default:
	}
	if err := c.stdio.Handle(ctx, m); err != nil {
		select {
		case <-c.exited:
			return &frame.SendError{Sent: true, Err: ErrChildExited}
		default:
		}
		return &frame.SendError{Sent: true, Err: fmt.Errorf("write to server process: %w", err)}
	}
	return nil
}

// Done is closed once the child has exited and what it wrote before has
// been handed on.
func (c *Child) Done() <-chan struct{} { return c.done }

// Err returns how the child ended (nil for exit status 0, else an
// *exec.ExitError); it is meaningful once Done is closed.
func (c *Child) Err() error {
	select {
	case <-c.exited:
		return c.err
	default:
		return nil
	}
}

// Close ends the child politely, then firmly: it closes the child's stdin
// (the stdio way to say "you are done") and waits StdinGrace; if the child
// is still running it sends SIGTERM to its process group and waits
// TermGrace; then SIGKILL. When ctx ends first the child is killed at once.
// Close returns once the child has exited and its output is drained; it
// returns ctx.Err() if ctx ended before the polite steps were through, and
// is safe to call more than once and concurrently.
func (c *Child) Close(ctx context.Context) error {
	c.closeOnce.Do(func() { c.closeErr = c.shutdown(ctx) })
	<-c.done
	return c.closeErr
}

func (c *Child) shutdown(ctx context.Context) error {
	c.stdin.Close()
	if c.await(ctx, c.cfg.StdinGrace) {
		return nil
	}
	if ctx.Err() == nil {
		c.log.Debug("server process still running after stdin closed; sending SIGTERM", "pid", c.PID())
		terminateGroup(c.cmd.Process)
		if c.await(ctx, c.cfg.TermGrace) {
			return nil
		}
	}
	if ctx.Err() == nil {
		c.log.Warn("server process ignored SIGTERM; killing it", "pid", c.PID())
	}
	killGroup(c.cmd.Process)
	<-c.exited
	return ctx.Err()
}

// await waits up to d for the child to exit and reports whether it did.
func (c *Child) await(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// wait reaps the child, kills what is left of its process group, and
// closes done once the output readers are finished.
func (c *Child) wait(stdout, stderr *os.File, stdoutDone, stderrDone chan struct{}) {
	// Kill whatever the child left behind in its group while the child is
	// not yet reaped, so that its group id cannot have been reused.
	awaitExitAndKillGroup(c.cmd.Process)
	c.err = c.cmd.Wait()
	close(c.exited)
	c.stdin.Close()
	if c.err != nil {
		c.log.Info("server process exited", "pid", c.PID(), "status", c.err.Error())
	} else {
		c.log.Debug("server process exited", "pid", c.PID())
	}
	deadline := time.Now().Add(childDrainGrace)
	_ = stdout.SetReadDeadline(deadline)
	_ = stderr.SetReadDeadline(deadline)
	<-stdoutDone
	<-stderrDone
	stdout.Close()
	stderr.Close()
	c.cancel()
	close(c.done)
}

// readStdout hands each message the child writes to toClient, in order.
func (c *Child) readStdout(done chan struct{}) {
	defer close(done)
	_ = c.stdio.Serve(c.ctx, c.toClient) // ends at EOF, or at the drain deadline
}

// badLine deals with a line of the child's stdout that is not a usable
// message: most likely an oversized response (or one the memory budget
// could not take), whose request is answered with an error so its client
// does not wait forever. Without an id to answer (or when the id was the
// server's own request, which nobody waits for) the line is dropped.
func (c *Child) badLine(ctx context.Context, le *frame.LineError) {
	if le.ID.IsZero() || !errors.Is(le.Err, frame.ErrTooLarge) && !errors.Is(le.Err, frame.ErrOverBudget) {
		return
	}
	msg := "the server's message exceeded the gateway's size limit"
	if errors.Is(le.Err, frame.ErrOverBudget) {
		msg = "the server's message was dropped: the gateway's memory budget for messages is used up; try again later"
	}
	m := frame.ErrorResponse(le.ID, frame.CodeInternalError, msg)
	if err := c.toClient.Handle(ctx, m); err != nil {
		c.log.Debug("dropped a message from the server process", "err", err)
	}
}

// readStderr copies the child's stderr to cfg.Stderr line by line, each
// line prefixed.
func (c *Child) readStderr(stderr io.Reader, done chan struct{}) {
	defer close(done)
	out := c.cfg.Stderr
	if out == nil {
		out = io.Discard
	}
	br := bufio.NewReaderSize(stderr, stderrLineMax)
	line := make([]byte, 0, 256)
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			line = append(line[:0], c.cfg.StderrPrefix...)
			line = append(line, chunk...)
			if line[len(line)-1] != '\n' {
				line = append(line, '\n')
			}
			if _, werr := out.Write(line); werr != nil {
				out = io.Discard // keep draining so the child never blocks
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}
