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
	"slices"
	"sync"
	"sync/atomic"
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

// stdoutSettle is how long a child whose stdout has ended may take to be
// seen exiting before it counts as having closed its stdout while still
// running. A process that exits closes its stdout a moment before it can
// be reaped.
const stdoutSettle = 100 * time.Millisecond

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
	// MaxDepth bounds how deeply a line the child writes may nest; 0 means
	// frame.DefaultMaxDepth. A deeper line is handled as one whose
	// envelope is invalid: a response's request gets an error, a request
	// of the child's is refused on its stdin.
	MaxDepth int
	// Budget, when set, counts the child's lines longer than
	// frame.BudgetMin until the Sink has taken them; a line it cannot take
	// is skipped and answered like an oversized one.
	Budget *frame.Budget
	// StdinGrace and TermGrace are the graces of [Child.Close]; 0 means
	// [DefaultStdinGrace] and [DefaultTermGrace].
	StdinGrace time.Duration
	TermGrace  time.Duration
	// Supervisor, when set, is the command of a supervisor to run the
	// server under: a program that calls [Supervise] with the arguments it
	// is given after these (for mcp-stdio: its own executable and
	// "supervise"). Command[0] is still looked up here, and the server
	// gets Env and Dir as it would without. With a supervisor the whole
	// process group of the server ends when the gateway dies, however it
	// dies; see [Child]. Linux only: elsewhere, and when nil, the server
	// is started directly.
	Supervisor []string
	// Context carries the values every message the child writes is handed
	// to the Sink under (a connection's state, say); its cancellation is
	// not looked at. nil means context.Background().
	Context context.Context
	// OnExit, when set, is called once for a child that started, when its
	// process has exited and its output is drained, with how it ended and
	// its exit status (nil for status 0, else an *exec.ExitError, as
	// [Child.Err]), before Done is closed (unless the child closed its
	// stdout while running: then Done came first). It runs on the child's
	// own goroutine, possibly before StartChild returns, and must not
	// block.
	OnExit func(how ChildExit, status error)
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// ChildExit says how a child process ended (see ChildConfig.OnExit).
type ChildExit uint8

// The ways a child ends.
const (
	// ChildStopped: the gateway ended it ([Child.Close], or its stdout
	// ended while it kept running), whatever its exit status.
	ChildStopped ChildExit = iota
	// ChildExited: it exited on its own with status 0.
	ChildExited
	// ChildFailed: it exited on its own with an error status, or a
	// signal the gateway did not send ended it.
	ChildFailed
)

// String returns "stopped", "exited" or "failed".
func (e ChildExit) String() string {
	switch e {
	case ChildExited:
		return "exited"
	case ChildFailed:
		return "failed"
	}
	return "stopped"
}

// Child is a stdio MCP server running as a child process: messages given to
// [Child.Handle] are written to its stdin, one per line, and every line it
// writes to stdout is handed to the Sink given to [StartChild]. Its stderr
// passes through to ChildConfig.Stderr, line by line.
//
// The server runs in a process group of its own, which [Child.Close]
// signals, so that it reaches the processes the server starts in turn;
// when the server exits, what is left of its group is killed.
//
// What happens when the gateway dies without closing its children (it is
// killed, or crashes) depends on how the server was started, on Linux:
//
//   - Under a supervisor (ChildConfig.Supervisor), the server's whole group
//     ends: the supervisor sees its control socket end, however the gateway
//     died, SIGKILL included, and stops the group as Close would (the
//     server's stdin has ended; SIGTERM after StdinGrace, SIGKILL after
//     TermGrace). The supervisor is the process the gateway starts; the
//     server is its child, started on the very pipes the gateway made. A
//     process of the server's that leaves the group (setsid, setpgid)
//     escapes this, as it escapes Close.
//   - Started directly, the server itself is killed (SIGKILL) by the
//     kernel when the gateway dies; the processes it started are not.
//
// Elsewhere the server shares the gateway's process group, and only Close
// ends it.
//
// A child is over for its client once its stdout ends: when it exits, and
// also when it closes its stdout but keeps running, since it can answer
// nothing more. [Child.Done] is closed then, and a child still running is
// stopped the way [Child.Close] stops it, and logged as such.
type Child struct {
	cfg      ChildConfig
	log      *slog.Logger
	cmd      *exec.Cmd // the process started: the server, or its supervisor
	pid      int       // the server's pid
	ctl      *os.File  // the supervisor's control socket; nil without one
	stdin    *os.File
	stdio    *Stdio // over the child's stdout and stdin
	toClient Sink

	ctx    context.Context // ends when the child has exited and been drained
	cancel context.CancelFunc

	exited   chan struct{} // closed once the process has exited
	done     chan struct{} // see Done
	doneOnce sync.Once
	gone     chan struct{} // closed once it has exited and its output is drained
	err      error         // the exit status; read after exited is closed

	stopOnce  sync.Once
	brisk     atomic.Bool   // the stop skips StdinGrace (see Terminate)
	stopping  atomic.Bool   // the gateway began to end the child
	signalled atomic.Bool   // the gateway sent the child SIGTERM or SIGKILL
	hurry     chan struct{} // closed to skip the polite steps of a stop
	hurryOnce sync.Once

	// reapMu orders signals against reaping: once the process is reaped
	// its pid, and so its group id, may name another process.
	reapMu sync.Mutex
	reaped bool

	// stderr keeps the latest lines the child wrote on stderr, made safe
	// to quote, for StderrExcerpt; written by readStderr.
	stderr stderrRecord
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
		gone:     make(chan struct{}),
		hurry:    make(chan struct{}),
	}
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	supervised := len(cfg.Supervisor) > 0 && supervisorSupported
	if supervised {
		if cmd.Err != nil {
			return nil, fmt.Errorf("transport: start %s: %w", cfg.Command[0], cmd.Err)
		}
		cmd = exec.Command(cfg.Supervisor[0], slices.Concat(cfg.Supervisor[1:], supervisorArgs(supervisorOptions{
			path:       cmd.Path,
			argv:       cfg.Command,
			stdinGrace: cfg.StdinGrace,
			termGrace:  cfg.TermGrace,
		}))...)
	}
	cmd.Env = cfg.Env
	cmd.Dir = cfg.Dir
	setProcessAttributes(cmd, supervised)

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
	var ctl, ctlChild *os.File
	if supervised {
		if ctl, ctlChild, err = controlPair(); err != nil {
			closeAll()
			return nil, err
		}
		toClose = append(toClose, ctl, ctlChild)
		cmd.ExtraFiles = []*os.File{ctlChild}
	}
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
	c.pid = cmd.Process.Pid
	if supervised {
		ctlChild.Close()
		c.ctl = ctl
		if c.pid, err = readStarted(ctl); err != nil {
			// The supervisor has ended, or is about to; it started nothing.
			killGroup(cmd.Process)
			_ = cmd.Wait()
			closeAll()
			return nil, fmt.Errorf("transport: start %s: %w", cfg.Command[0], err)
		}
	}

	c.stdin = stdinW
	c.stdio = NewStdio(stdoutR, stdinW, StdioConfig{
		MaxMessageSize: cfg.MaxMessageSize,
		MaxDepth:       cfg.MaxDepth,
		Budget:         cfg.Budget,
		BadLine:        c.badLine,
		Logger:         c.log,
	})
	base := cfg.Context
	if base == nil {
		base = context.Background()
	}
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(base))
	if supervised {
		c.log.Debug("server process started", "pid", c.pid, "command", cfg.Command[0], "supervisor", cmd.Process.Pid)
	} else {
		c.log.Debug("server process started", "pid", c.pid, "command", cfg.Command[0])
	}

	stdoutDone := make(chan struct{})
	stderrDone := make(chan struct{})
	go c.readStdout(stdoutDone)
	go c.readStderr(stderrR, stderrDone)
	go c.wait(stdoutR, stderrR, stdoutDone, stderrDone)
	return c, nil
}

// PID returns the server's process id (also its process group id where
// groups are used). Under a supervisor it is the server's, not the
// supervisor's: the process that answers, and the group that holds what it
// starts.
func (c *Child) PID() int { return c.pid }

// Handle writes m to the child's stdin as one line. It returns once the
// line is in the pipe, not when the child answers. Lines never interleave.
// After the child has exited it fails with a *frame.SendError (Sent false)
// wrapping [ErrChildExited]; a write the child refuses as it exits fails
// so too (Sent true), once the exit has been told and Done closed (it
// waits up to 2 s, or until ctx ends, for that), so whoever answers the
// failure knows how the child ended. A write cannot be abandoned
// half-way, so ctx is checked only before it starts.
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
		if c.awaitDone(ctx, writeFailedWait) {
			return &frame.SendError{Sent: true, Err: ErrChildExited}
		}
		return &frame.SendError{Sent: true, Err: fmt.Errorf("write to server process: %w", err)}
	}
	return nil
}

// writeFailedWait bounds how long a write the child's stdin refused waits
// for the child to be seen gone: a child that exited closes its stdin a
// moment before it can be reaped and its exit told (ChildConfig.OnExit).
const writeFailedWait = 2 * time.Second

// awaitDone waits up to d, or until ctx ends, for Done, and reports
// whether the child is done. A write refused because the child exited
// then fails after its exit has been told, not before.
func (c *Child) awaitDone(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

// Done is closed once the child has exited and what it wrote before has
// been handed on — or, for a child that closed its stdout and did not exit
// within 100 ms, then, what it wrote on stdout handed on (it is being
// stopped, see [Child]).
func (c *Child) Done() <-chan struct{} { return c.done }

// StderrExcerpt returns what the child wrote on stderr that best
// explains a failure, for a client's error and a log line: at most
// [StderrExcerptMax] bytes, cut on character boundaries, of its latest
// lines (the last 8 KiB are kept), each with control characters as
// spaces, joined by newlines. It shows the lines around the first one
// that looks like an error (two before it, then as many as fit, and when
// not all do, "…" and the last line); with none, the last lines. "" when
// the child wrote nothing on stderr. It is complete once Done is closed.
func (c *Child) StderrExcerpt() string { return c.stderr.excerpt(StderrExcerptMax) }

// Err returns how the child process ended (nil for exit status 0, else an
// *exec.ExitError); it is meaningful once the process has exited: once
// Done is closed, unless the child was still running when its stdout
// ended, and after [Child.Close] has returned.
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
// is still running it sends SIGTERM to its process group (through the
// supervisor, when there is one) and waits TermGrace; then SIGKILL. When
// ctx ends first the child is killed at once.
// Close returns once the child has exited and its output is drained; it
// returns ctx.Err() if ctx ended before the child had exited, and is safe
// to call more than once and concurrently (the stop happens once; any
// caller's ctx can hurry it).
func (c *Child) Close(ctx context.Context) error {
	if ctx.Err() != nil {
		c.hurryUp()
	}
	c.stop()
	select {
	case <-c.exited:
	case <-ctx.Done():
		select {
		case <-c.exited:
		default:
			c.hurryUp()
			<-c.gone
			return ctx.Err()
		}
	}
	<-c.gone
	return nil
}

// Terminate ends the child as Close does, without the stdin grace: its
// stdin is closed and its process group sent SIGTERM at once (through the
// supervisor, when there is one), then SIGKILL after TermGrace. It is how
// a gateway that is shutting down stops its children, within a bound such
// as a container's grace period. A stop already under way that is still
// in its stdin grace sends SIGTERM at the end of it. Like Close, it
// returns once the child has exited and its output is drained.
func (c *Child) Terminate(ctx context.Context) error {
	c.brisk.Store(true)
	return c.Close(ctx)
}

// stop starts ending the child, once, on a goroutine of its own.
func (c *Child) stop() {
	c.stopOnce.Do(func() {
		c.stopping.Store(true)
		go c.shutdown()
	})
}

// hurryUp makes a stop skip what is left of its polite steps.
func (c *Child) hurryUp() {
	c.hurryOnce.Do(func() { close(c.hurry) })
}

// shutdown takes the steps of a stop; see Close.
func (c *Child) shutdown() {
	c.stdin.Close()
	if !c.brisk.Load() && c.await(c.cfg.StdinGrace) {
		return
	}
	if !c.hurried() {
		if c.brisk.Load() {
			c.log.Debug("stopping the server process: stdin closed; sending SIGTERM", "pid", c.PID())
		} else {
			c.log.Debug("server process still running after stdin closed; sending SIGTERM", "pid", c.PID())
		}
		c.terminate()
		if c.await(c.cfg.TermGrace) {
			return
		}
		if !c.hurried() {
			c.log.Warn("server process ignored SIGTERM; killing it", "pid", c.PID())
		}
	}
	c.kill()
}

// terminate sends SIGTERM to the server's process group, or asks its
// supervisor to.
func (c *Child) terminate() {
	c.signalled.Store(true)
	if c.ctl != nil {
		c.tell(ctlTerminate)
		return
	}
	c.signal(terminateGroup)
}

// kill sends SIGKILL to the server's process group, or asks its supervisor
// to; a supervisor that does not end in time is killed with its own group
// (the server dies with it, what the server started may not).
func (c *Child) kill() {
	c.signalled.Store(true)
	if c.ctl == nil {
		c.signal(killGroup)
		return
	}
	c.tell(ctlKill)
	t := time.NewTimer(supervisorKillWait)
	defer t.Stop()
	select {
	case <-c.exited:
	case <-t.C:
		c.log.Warn("the supervisor did not end the server process; killing it", "pid", c.PID(), "supervisor", c.cmd.Process.Pid)
		c.signal(killGroup)
	}
}

// tell writes a request to the supervisor; one that has ended needs none.
func (c *Child) tell(b byte) {
	_, _ = c.ctl.Write([]byte{b})
}

// signal applies send (terminateGroup or killGroup) to the child's process
// unless it has been reaped already.
func (c *Child) signal(send func(*os.Process)) {
	c.reapMu.Lock()
	defer c.reapMu.Unlock()
	if !c.reaped {
		send(c.cmd.Process)
	}
}

// await waits up to d for the child to exit and reports whether it did;
// it gives up early when the stop is hurried.
func (c *Child) await(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	case <-c.hurry:
		return false
	}
}

// hurried reports whether the stop has been hurried.
func (c *Child) hurried() bool {
	select {
	case <-c.hurry:
		return true
	default:
		return false
	}
}

// wait reaps the child, kills what is left of its process group, and
// closes done and gone once the output readers are finished.
func (c *Child) wait(stdout, stderr *os.File, stdoutDone, stderrDone chan struct{}) {
	// Kill whatever the child left behind in its group while the child is
	// not yet reaped, so that its group id cannot have been reused.
	awaitExitAndKillGroup(c.cmd.Process)
	c.reapMu.Lock()
	c.err = c.cmd.Wait()
	c.reaped = true
	c.reapMu.Unlock()
	how := c.exit() // judged now: a stop begun after the exit does not count
	close(c.exited)
	c.stdin.Close()
	if c.ctl != nil {
		c.ctl.Close()
	}
	deadline := time.Now().Add(childDrainGrace)
	_ = stdout.SetReadDeadline(deadline)
	_ = stderr.SetReadDeadline(deadline)
	<-stdoutDone
	<-stderrDone
	stdout.Close()
	stderr.Close()
	switch {
	case c.err != nil && !c.signalled.Load():
		// It failed on its own — it exited with an error status, or a
		// signal the gateway did not send ended it — whether or not the
		// gateway had begun to end it by closing its stdin (its exit and
		// that close can race): its last words usually say why.
		c.log.Warn("server process exited with an error", "pid", c.PID(), "status", c.err.Error(), "stderr", c.stderr.excerpt(StderrExcerptMax))
	case c.err != nil:
		c.log.Info("server process exited", "pid", c.PID(), "status", c.err.Error())
	default:
		c.log.Debug("server process exited", "pid", c.PID())
	}
	c.cancel()
	if c.cfg.OnExit != nil {
		c.cfg.OnExit(how, c.err) // before Done: whoever waits for it sees the exit told
	}
	c.closeDone()
	close(c.gone)
}

// exit says how the child ended; it is read once the process has exited.
func (c *Child) exit() ChildExit {
	switch {
	case c.err != nil && !c.signalled.Load():
		return ChildFailed
	case c.stopping.Load() || c.signalled.Load():
		return ChildStopped
	}
	return ChildExited
}

// closeDone closes done, once.
func (c *Child) closeDone() { c.doneOnce.Do(func() { close(c.done) }) }

// readStdout hands each message the child writes to toClient, in order,
// and closes stdoutDone when the child's stdout has ended. A child that
// ends its stdout without exiting can answer nothing more: unless it is
// seen exiting within stdoutSettle, it is done (its stderr may still be
// open) and it is stopped.
func (c *Child) readStdout(stdoutDone chan struct{}) {
	defer close(stdoutDone)
	_ = c.stdio.Serve(c.ctx, c.toClient) // ends at EOF, or at the drain deadline
	t := time.NewTimer(stdoutSettle)
	defer t.Stop()
	select {
	case <-c.exited:
	case <-t.C:
		c.log.Warn("server process closed its stdout but is still running; stopping it", "pid", c.PID())
		c.closeDone()
		c.stop()
	}
}

// badLine deals with a line of the child's stdout that is not a usable
// message, so that nobody waits forever for an answer it carried: an
// oversized response (or one the memory budget could not take), or a
// response whose envelope is invalid, answers its request with an error
// toward the client; a request of the child's whose envelope is invalid is
// refused on the child's stdin (-32600). Anything else — no id to answer,
// bad JSON, a bad notification — is dropped (the transport has logged it).
func (c *Child) badLine(ctx context.Context, le *frame.LineError) {
	var m frame.Message
	switch {
	case errors.Is(le.Err, frame.ErrTooLarge):
		if le.ID.IsZero() {
			return
		}
		m = frame.ErrorResponse(le.ID, frame.CodeInternalError, "the server's message exceeded the gateway's size limit")
	case errors.Is(le.Err, frame.ErrOverBudget):
		if le.ID.IsZero() {
			return
		}
		m = frame.ErrorResponse(le.ID, frame.CodeInternalError, "the server's message was dropped: the gateway's memory budget for messages is used up; try again later")
	case !le.ID.IsZero():
		// A request of the child's own with an invalid envelope: the child
		// waits for its answer, so it gets the refusal, as on the relay's
		// stdin.
		_, msg := refusal(le.Err)
		c.stdio.answer(frame.ErrorResponse(le.ID, le.Code(), msg))
		return
	default:
		var ok bool
		if m, ok = standIn(le.Err); !ok {
			return
		}
	}
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
		c.stderr.add(chunk)
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
