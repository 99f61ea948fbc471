package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// DefaultDrainTimeout bounds how long [Stdio.Serve] lets messages in
// flight finish once reading has ended.
const DefaultDrainTimeout = 5 * time.Second

// StdioConfig configures a [Stdio] transport.
type StdioConfig struct {
	// MaxMessageSize bounds one line read; 0 means
	// frame.DefaultMaxMessageSize. A longer line is skipped and reported as
	// a bad line.
	MaxMessageSize int
	// MaxDepth bounds how deeply a line's JSON may nest; 0 means
	// frame.DefaultMaxDepth. A deeper line is a bad line (its error
	// matches frame.ErrTooDeep and frame.ErrNotJSONRPC).
	MaxDepth int
	// MaxInFlight, when positive, makes Serve hand each request (and each
	// batch) to its handler on a goroutine of its own, at most MaxInFlight
	// at once (reading waits while they are all busy), and everything else
	// in order on one goroutine; a request is handed on only once the
	// messages read before it have been. 0 hands every message over in
	// order, on the reading goroutine.
	MaxInFlight int
	// DrainTimeout bounds how long Serve lets what is in flight finish once
	// reading has ended; 0 means [DefaultDrainTimeout].
	DrainTimeout time.Duration
	// Draining, when set, is called once reading has ended (at the
	// input's end, its failure, or ctx's), as the drain starts, on a
	// goroutine of its own, with a context that ends when the drain gives
	// up (DrainTimeout); Serve returns only after it has. It ends what
	// would otherwise hold the drain until its timeout: the relay ends its
	// 2026-07-28 host's listens there, gracefully.
	Draining func(ctx context.Context)
	// BadLine is called, on the reading goroutine, for each line that is
	// not a usable message: not JSON or over MaxMessageSize (a
	// *frame.LineError), or JSON that is not a valid JSON-RPC message (Err
	// is the message's *frame.EnvelopeError, which matches
	// frame.ErrNotJSONRPC, and ID the id of a request-shaped message when
	// that id is fine). nil means the line is answered on the writer with
	// the JSON-RPC error for it — -32700 for bad JSON, -32600 otherwise,
	// with the reason, under the line's ID when it has one, else null —
	// which is what the side that reads requests owes its peer; nothing of
	// the line is handed on.
	BadLine func(ctx context.Context, bad *frame.LineError)
	// Failed gives the answer to a request whose handler failed with err;
	// the zero Message means none is due (the client cancelled it). nil
	// means -32000 with the error's text. Failed answers each request of a
	// failed batch, and the answers go out as one batch.
	Failed func(req frame.Message, err error) frame.Message
	// Budget, when set, counts the lines read that are longer than
	// frame.BudgetMin while they are held: from the read until the handler
	// has returned. A line it cannot take is skipped and reported as a bad
	// line (frame.ErrOverBudget).
	Budget *frame.Budget
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// Stdio is MCP's stdio transport: newline-delimited JSON-RPC, one message
// per line, over a reader and a writer. The relay reads its client on
// stdin and answers on stdout with one; serve talks to each child process
// through one over the child's pipes.
//
// [Stdio.Handle] writes a message as one line; lines never interleave.
// [Stdio.Serve] reads lines and hands the messages to a handler.
type Stdio struct {
	cfg StdioConfig
	log *slog.Logger
	in  io.Reader
	rd  *frame.Reader
	w   *frame.Writer
}

// NewStdio returns the stdio transport over in and out. On Linux, where in
// or out is a non-blocking pipe or socket (one end of os.Pipe, a
// connection: what the runtime polls), its reads or writes are made as
// system calls that skip the runtime's bookkeeping, which would otherwise
// wake its monitor thread at each one: see rawio_linux.go. Anything else
// (a terminal, a file, a blocking pipe, stdout and stderr when written,
// any descriptor in a build with the race detector) is read and written
// as the os package does.
func NewStdio(in io.Reader, out io.Writer, cfg StdioConfig) *Stdio {
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = DefaultDrainTimeout
	}
	s := &Stdio{cfg: cfg, log: orDiscard(cfg.Logger), in: in, w: frame.NewWriter(rawWriter(out))}
	if in != nil {
		s.rd = frame.NewReader(rawReader(in), cfg.MaxMessageSize)
		s.rd.SetBudget(cfg.Budget)
		s.rd.SetMaxDepth(cfg.MaxDepth)
	}
	return s
}

// Handle writes m as one line. ctx is not consulted: a write cannot be
// abandoned half-way.
func (s *Stdio) Handle(_ context.Context, m frame.Message) error { return s.w.Write(m) }

// Serve reads messages and hands them to h until the input ends or fails,
// or ctx ends; then it lets what is in flight finish, for at most
// DrainTimeout, cancels the rest (their context's cause is
// frame.ErrClosed), waits for them and returns the input's error (nil at
// its end, or when ctx ended). Call it once.
//
// Messages are handed to h under a context that carries ctx's values but
// is not cancelled with it, so that what is in flight can finish. A
// request whose handler fails is answered on the writer (see
// StdioConfig.Failed); so is a request that cannot be handed over any more
// because the transport is stopping.
//
// When ctx ends first, a read of the input that is under way is
// interrupted if the input has a SetReadDeadline method that works (a
// net.Conn, an *os.File the runtime polls, such as one end of os.Pipe);
// any other input stays blocked in Read until its owner closes it, and
// Serve returns without waiting for it.
func (s *Stdio) Serve(ctx context.Context, h Sink) error {
	work, stopWork := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopWork(frame.ErrClosed)
	d := &dispatcher{
		s:          s,
		h:          h,
		work:       work,
		ordered:    make(chan queued, orderedQueue),
		slots:      make(chan struct{}, max(s.cfg.MaxInFlight, 1)),
		lastQueued: closedChan(),
	}
	var ordered sync.WaitGroup
	if s.cfg.MaxInFlight > 0 {
		ordered.Go(d.deliverOrdered)
	}

	readerCtx, stopReader := context.WithCancel(ctx)
	defer stopReader()
	r := newStdinReader(s, readerCtx, d)
	go r.run()
	select {
	case <-r.done:
	case <-ctx.Done():
		s.log.Info("shutting down", "cause", context.Cause(ctx))
	}
	stopReader()
	if interruptRead(s.in) {
		<-r.done
	}
	d.close()

	// Drain: let requests in flight and queued messages finish, within
	// the bound.
	hooked := make(chan struct{})
	if s.cfg.Draining != nil {
		go func() {
			defer close(hooked)
			s.cfg.Draining(work)
		}()
	} else {
		close(hooked)
	}
	drained := make(chan struct{})
	go func() {
		d.requests.Wait()
		close(d.ordered)
		ordered.Wait()
		<-hooked
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(s.cfg.DrainTimeout):
		s.log.Warn("requests still in flight after the drain timeout; abandoning them", "timeout", s.cfg.DrainTimeout)
		stopWork(frame.ErrClosed)
		<-drained
	}
	return r.err
}

// orderedQueue bounds the messages read but not yet handed over in order.
const orderedQueue = 256

// interruptRead makes a read of in that is under way, or comes later, fail
// at once, when in supports read deadlines; it reports whether it could.
func interruptRead(in io.Reader) bool {
	d, ok := in.(interface{ SetReadDeadline(time.Time) error })
	return ok && d.SetReadDeadline(time.Now()) == nil
}

// answer writes the transport's own answer for a request straight to the
// writer.
func (s *Stdio) answer(m frame.Message) {
	if m.Len() == 0 {
		return
	}
	if err := s.w.Write(m); err != nil {
		s.log.Warn("cannot write an answer", "err", err)
	}
}

// failed answers a request (or batch) whose handler failed.
func (s *Stdio) failed(ctx context.Context, m frame.Message, err error) {
	if errors.Is(context.Cause(ctx), frame.ErrClosed) {
		err = frame.ErrClosed
	}
	if m.Kind() == frame.Batch {
		s.answer(s.batchAnswer(m, err))
		return
	}
	answer := s.failure(m, err)
	if errors.Is(err, frame.ErrCancelled) {
		// The client's own doing: no answer is due, nothing went wrong.
		s.log.Debug("request cancelled by the client", "method", m.Method(), "id", m.ID().String())
	} else {
		// One warning per failed request, saying what its answer says.
		why := err.Error()
		if msg := answer.Get("error.message").String(); msg != "" {
			why = msg
		}
		s.log.Warn("request failed", "method", m.Method(), "id", m.ID().String(), "err", why)
	}
	s.answer(answer)
}

// failure returns the answer to request req that failed with err.
func (s *Stdio) failure(req frame.Message, err error) frame.Message {
	if s.cfg.Failed != nil {
		return s.cfg.Failed(req, err)
	}
	return frame.ErrorResponse(req.ID(), frame.CodeGateway, err.Error())
}

// batchAnswer returns the answers to every request of a failed batch, as
// one batch (the zero Message when none is due).
func (s *Stdio) batchAnswer(batch frame.Message, err error) frame.Message {
	var out []byte
	for el := range batch.Elements() {
		if el.Kind() != frame.Request {
			continue
		}
		e := s.failure(el, err)
		if e.Len() == 0 {
			continue
		}
		if out == nil {
			out = append(out, '[')
		} else {
			out = append(out, ',')
		}
		out = append(out, e.Bytes()...)
	}
	if out == nil {
		return frame.Message{}
	}
	m, perr := frame.ParseOwned(append(out, ']'))
	if perr != nil {
		return frame.Message{}
	}
	return m
}

// badLine deals with a line that is not a usable message.
func (s *Stdio) badLine(ctx context.Context, le *frame.LineError) {
	if errors.Is(le.Err, frame.ErrTooDeep) {
		s.log.Warn("bad line: nested deeper than the limit; raise --max-depth if the peer needs more", "line", le.Line, "err", le.Err, "bytes", le.Size, "excerpt", le.Excerpt())
	} else {
		s.log.Warn("bad line", "line", le.Line, "err", le.Err, "bytes", le.Size, "excerpt", le.Excerpt())
	}
	if s.cfg.BadLine != nil {
		s.cfg.BadLine(ctx, le)
		return
	}
	msg := "parse error: invalid JSON"
	switch {
	case errors.Is(le.Err, frame.ErrTooLarge):
		msg = fmt.Sprintf("message too large (limit %d bytes)", s.maxSize())
	case errors.Is(le.Err, frame.ErrOverBudget):
		msg = "message refused: the gateway's memory budget for messages is used up"
	case errors.Is(le.Err, frame.ErrNotJSONRPC):
		_, msg = refusal(le.Err)
	}
	s.answer(frame.ErrorResponse(le.ID, le.Code(), msg))
}

func (s *Stdio) maxSize() int {
	if s.cfg.MaxMessageSize > 0 {
		return s.cfg.MaxMessageSize
	}
	return frame.DefaultMaxMessageSize
}

// dispatcher hands the messages read to the handler: with MaxInFlight,
// requests each on their own goroutine and everything else in order on
// one; without, everything in order on the reading goroutine.
type dispatcher struct {
	s        *Stdio
	h        Sink
	work     context.Context
	ordered  chan queued
	slots    chan struct{} // one per request in flight
	requests sync.WaitGroup

	mu         sync.Mutex
	closed     bool          // no more dispatching: the transport is draining
	lastQueued chan struct{} // done of the last message queued in order
}

// dispatch starts handing m over. With MaxInFlight, a request (or batch)
// takes one of the slots and comes back as send, which the caller must
// run, on a goroutine of its own (the request is then counted in
// d.requests until send returns); anything else is queued in order and send
// is nil. dispatch blocks while every slot is taken or the ordered queue is
// full, and gives up (ok false) when ctx ends or the transport stopped
// dispatching. Without MaxInFlight it hands m over itself. held is what m
// holds of the budget, released once m has been handled or given up.
func (d *dispatcher) dispatch(ctx context.Context, m frame.Message, held int64) (send func(), ok bool) {
	isRequest := m.Kind() == frame.Request || m.Kind() == frame.Batch
	if d.s.cfg.MaxInFlight <= 0 {
		d.handle(d.work, m, isRequest)
		d.s.cfg.Budget.Release(held)
		return nil, true
	}
	if isRequest {
		select {
		case d.slots <- struct{}{}:
		case <-ctx.Done():
			d.s.failed(d.work, m, frame.ErrClosed)
			d.s.cfg.Budget.Release(held)
			return nil, false
		}
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			<-d.slots
			d.s.failed(d.work, m, frame.ErrClosed)
			d.s.cfg.Budget.Release(held)
			return nil, false
		}
		after := d.lastQueued
		d.requests.Add(1)
		d.mu.Unlock()
		return func() {
			defer d.requests.Done()
			defer func() { <-d.slots }()
			select {
			case <-after:
			case <-d.work.Done():
			}
			d.handle(d.work, m, true)
			d.s.cfg.Budget.Release(held)
		}, true
	}
	q := queued{m: m, held: held, done: make(chan struct{})}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.closed {
		select {
		case d.ordered <- q:
			d.lastQueued = q.done
			return nil, true
		case <-ctx.Done():
		}
	}
	d.s.cfg.Budget.Release(held)
	return nil, false
}

// handle hands one message to the handler and answers a request it
// failed.
func (d *dispatcher) handle(ctx context.Context, m frame.Message, isRequest bool) {
	err := d.h.Handle(ctx, m)
	switch {
	case err == nil:
	case isRequest:
		d.s.failed(ctx, m, err)
	case ctx.Err() == nil:
		d.s.log.Warn("could not deliver a message", "method", m.Method(), "kind", m.Kind().String(), "err", err)
	}
}

// close stops dispatching; the caller must have ended the reader's context
// first, so that a dispatch blocked on the ordered queue lets go.
func (d *dispatcher) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
}

// deliverOrdered delivers the ordered queue until it is closed.
func (d *dispatcher) deliverOrdered() {
	for q := range d.ordered {
		d.handle(d.work, q.m, false)
		d.s.cfg.Budget.Release(q.held)
		close(q.done)
	}
}

// queued is a message waiting for its turn.
type queued struct {
	m    frame.Message
	held int64         // what m holds of the budget
	done chan struct{} // closed once m was handled
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// stdinReader reads the messages and hands each to the dispatcher, until
// the input ends, ctx ends or the dispatcher gives up; then it closes done.
// Lines that cannot be used are dealt with here.
//
// One goroutine at a time holds the reader. When it reads a request, it
// hands the reader on and sends the request itself: the request leaves at
// once, on the thread that read it, instead of waiting for another thread
// to be woken to pick it up while this one blocks in the next read. Once
// the request is answered, its goroutine parks until it is handed the
// reader again (at most maxParkedReaders park; the others end), so the
// goroutines keep the stacks they have grown.
type stdinReader struct {
	s   *Stdio
	ctx context.Context
	d   *dispatcher

	done chan struct{}
	err  error // the input's error; set before done is closed

	lead   chan struct{} // hands the reader to a parked goroutine
	parked chan struct{} // one token per parked goroutine
}

// maxParkedReaders bounds the goroutines parked waiting for the reader.
const maxParkedReaders = 16

func newStdinReader(s *Stdio, ctx context.Context, d *dispatcher) *stdinReader {
	return &stdinReader{
		s: s, ctx: ctx, d: d, done: make(chan struct{}),
		lead: make(chan struct{}), parked: make(chan struct{}, maxParkedReaders),
	}
}

// run holds the reader: it reads until a request is read, hands the reader
// on, sends the request and parks; it closes done when reading ends.
func (r *stdinReader) run() {
	for {
		m, held, ok := r.next()
		if !ok {
			close(r.done)
			return
		}
		send, ok := r.d.dispatch(r.ctx, m, held)
		if !ok {
			close(r.done)
			return
		}
		if send == nil {
			continue
		}
		r.handOn()
		send()
		if !r.park() {
			return
		}
	}
}

// handOn gives the reader to a parked goroutine, or to a new one.
func (r *stdinReader) handOn() {
	select {
	case r.lead <- struct{}{}:
	default:
		go r.run()
	}
}

// park waits to be handed the reader. It returns false, and the goroutine
// ends, when reading is over or maxParkedReaders are parked already.
func (r *stdinReader) park() bool {
	select {
	case r.parked <- struct{}{}:
	default:
		return false
	}
	defer func() { <-r.parked }()
	select {
	case <-r.lead:
		return true
	case <-r.done:
		return false
	}
}

// next returns the next usable message and what it holds of the budget,
// dealing with the lines that are not; ok is false once the input has
// ended or failed.
func (r *stdinReader) next() (_ frame.Message, held int64, ok bool) {
	s := r.s
	if s.rd == nil {
		return frame.Message{}, 0, false
	}
	for {
		m, err := s.rd.Read()
		if err != nil {
			var le *frame.LineError
			if errors.As(err, &le) {
				s.badLine(r.ctx, le)
				continue
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrDeadlineExceeded) && r.ctx.Err() == nil {
				s.log.Warn("read failed", "err", err)
				r.err = err
			}
			return frame.Message{}, 0, false
		}
		if err := m.Err(); err != nil {
			id, _ := refusal(err)
			s.badLine(r.ctx, &frame.LineError{Line: s.rd.Line(), Err: err, ID: id, Head: bytes.Clone(m.Bytes()[:min(m.Len(), frame.LineHeadSize)]), Size: int64(m.Len())})
			continue
		}
		return m, s.rd.TakeHeld(), true
	}
}
