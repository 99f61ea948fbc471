package frame

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// DefaultMaxMessageSize bounds one message on every framing unless the
// caller chooses otherwise: 64 MiB.
const DefaultMaxMessageSize = 64 << 20

// ErrTooLarge means a message exceeded the configured size cap.
var ErrTooLarge = errors.New("message too large")

// ErrNotJSONRPC means a line or body is valid JSON but not a valid
// JSON-RPC message (a message of Kind [Invalid]). An [*EnvelopeError] says
// why, and matches it.
var ErrNotJSONRPC = errors.New("not a JSON-RPC message")

// LineError reports one bad line of newline-delimited JSON. The reader has
// already skipped the line; the next Read continues with the line after it.
type LineError struct {
	Line int   // 1-based line number
	Err  error // ErrSyntax, ErrTooLarge or ErrOverBudget (from a Reader), or one matching ErrNotJSONRPC (ErrTooDeep among them)
	// ID is the id to answer the line under, when it could be recovered (an
	// oversized request whose id precedes its bulk, a request whose
	// envelope is invalid but whose id is fine), else "". It lets the
	// caller answer the request instead of leaving its sender waiting.
	ID ID
	// Head is the start of the line, at most [LineHeadSize] bytes of it (a
	// copy, cut anywhere, possibly within a character), and Size the
	// line's length in bytes without its end of line, so that a log can
	// show what was refused ([LineError.Excerpt]). A Reader sets both;
	// Size is 0 when unknown.
	Head []byte
	Size int64
}

// LineHeadSize bounds [LineError.Head].
const LineHeadSize = 120

// Excerpt returns Head fit to quote in a log line: printable characters
// as they are, a backslash doubled, every other byte or character escaped
// (\xNN, \uNNNN), a character the cut split dropped, and "…" at the end
// when the line is longer.
func (e *LineError) Excerpt() string {
	head := e.Head
	cut := e.Size > int64(len(head))
	if cut {
		// Drop a character the cut split: at most 3 bytes of one.
		for i := 1; i <= 3 && i <= len(head); i++ {
			if utf8.RuneStart(head[len(head)-i]) {
				if !utf8.FullRune(head[len(head)-i:]) {
					head = head[:len(head)-i]
				}
				break
			}
		}
	}
	var b strings.Builder
	for len(head) > 0 {
		r, n := utf8.DecodeRune(head)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, head[0])
		case r == '\\':
			b.WriteString(`\\`)
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		head = head[n:]
	}
	if cut {
		b.WriteString("…")
	}
	return b.String()
}

// lineHead returns a copy of the first LineHeadSize bytes of line.
func lineHead(line []byte) []byte {
	return bytes.Clone(line[:min(len(line), LineHeadSize)])
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Code returns the JSON-RPC error code that answers the line:
// [CodeParseError] for bad JSON, [CodeInvalidRequest] for an oversized
// line or one that is not a JSON-RPC message, [CodeGateway] for a line
// refused for the memory budget.
func (e *LineError) Code() int {
	switch {
	case errors.Is(e.Err, ErrOverBudget):
		return CodeGateway
	case errors.Is(e.Err, ErrTooLarge) || errors.Is(e.Err, ErrNotJSONRPC):
		return CodeInvalidRequest
	}
	return CodeParseError
}

// Reader reads newline-delimited JSON-RPC: one message per line, LF or CRLF
// terminated, blank lines skipped. It has no fixed line limit; a line longer
// than the cap is discarded as it streams by and reported as a [LineError].
// A Reader is not safe for concurrent use.
//
// A line that fits the read buffer (64 KiB) is copied once, into the
// message. A longer one is assembled in a scratch buffer. While more input
// is already waiting, the line is copied into its message and the buffer
// kept for the next one (a run of big messages costs one copy each more,
// and no regrowing), until a short line comes and the buffer is over
// 1 MiB; when no input is waiting, the buffer itself becomes the message
// and nothing is kept, so that a big message does not pin its buffer for
// the rest of a quiet session.
//
// With a [Budget] (see [Reader.SetBudget]), the scratch buffer and every
// message longer than the read buffer are counted against it while they
// are held; a line the budget cannot take is skipped like an oversized one
// and reported as a [LineError] with [ErrOverBudget].
type Reader struct {
	br      *bufio.Reader
	max     int
	line    int
	scratch []byte
	budget  *Budget
	parser  Parser
	held    int64 // counted for the scratch buffer (the line being assembled)
	passed  int64 // counted for the message Read returned last, not yet taken
}

// idProbe is how much of an oversized line is kept to look for its id.
const idProbe = 4 << 10

// NewReader returns a Reader over r whose messages may be up to max bytes
// (max <= 0 means [DefaultMaxMessageSize]).
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = DefaultMaxMessageSize
	}
	// The read buffer is BudgetMin long: the lines that do not fit it are
	// exactly the ones a budget counts.
	return &Reader{br: bufio.NewReaderSize(r, BudgetMin), max: max}
}

// SetBudget has the Reader count its buffers against b: the scratch buffer
// a line longer than the read buffer is assembled in, and the message such
// a line becomes (see [Reader.TakeHeld]). Call it before the first Read.
func (r *Reader) SetBudget(b *Budget) { r.budget = b }

// SetMaxDepth bounds how deeply the messages read may nest (see
// [Parser.MaxDepth]); a line past it is reported as a [LineError] matching
// [ErrTooDeep]. Call it before the first Read.
func (r *Reader) SetMaxDepth(n int) { r.parser.MaxDepth = n }

// requestID returns the id to answer a line that Parse refused with err
// under: a request's, when err says the line was shaped as one.
func requestID(err error) ID {
	var env *EnvelopeError
	if errors.As(err, &env) && env.Shape == Request {
		return env.ID
	}
	return ""
}

// TakeHeld returns the bytes of the budget that the message Read returned
// last holds (0 for a short message, or without a budget) and hands them to
// the caller, who releases them ([Budget.Release]) once done with the
// message. Bytes nobody took are released at the next Read.
func (r *Reader) TakeHeld() int64 {
	n := r.passed
	r.passed = 0
	return n
}

// Read returns the next message. Errors are either a *[LineError] for a line
// that could not be used (keep reading), or the underlying reader's error,
// io.EOF at a clean end, after which the Reader is done. A final line without
// a newline still counts as a line.
func (r *Reader) Read() (Message, error) {
	r.budget.Release(r.TakeHeld())
	for {
		line, size, bad, err := r.readLine()
		if len(line) == 0 && bad == nil && err != nil {
			r.dropScratch()
			return Message{}, err
		}
		r.line++
		if bad != nil {
			return Message{}, &LineError{Line: r.line, Err: bad, ID: probeID(line), Head: lineHead(line), Size: size}
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			if err != nil {
				r.dropScratch()
				return Message{}, err
			}
			continue
		}
		own, held := r.own(line)
		if r.br.Buffered() == 0 {
			r.dropScratch() // nothing waiting: it would sit idle
		}
		m, perr := r.parser.ParseOwned(own)
		if perr != nil {
			r.budget.Release(held)
			return Message{}, &LineError{Line: r.line, Err: perr, ID: requestID(perr), Head: lineHead(own), Size: int64(len(own))}
		}
		r.passed = held
		return m, nil
	}
}

// own returns the bytes of a message of its own for line, and what they
// hold of the budget.
func (r *Reader) own(line []byte) ([]byte, int64) {
	switch {
	case len(line) < BudgetMin:
		return bytes.Clone(line), 0
	case len(line) > keepScratch || r.br.Buffered() == 0:
		// Only the scratch buffer holds a line this long (the read buffer
		// is smaller). It is not to be kept: hand it over rather than copy
		// the line.
		return r.handOver(line)
	case r.budget == nil:
		return bytes.Clone(line), 0
	case r.budget.Acquire(int64(len(line))):
		return bytes.Clone(line), int64(len(line))
	}
	return r.handOver(line) // no room for a copy
}

// handOver gives line, which lies in the scratch buffer, to the message,
// together with what the buffer holds of the budget.
func (r *Reader) handOver(line []byte) ([]byte, int64) {
	held := r.held
	r.scratch, r.held = nil, 0
	return line, held
}

// dropScratch lets the scratch buffer go.
func (r *Reader) dropScratch() {
	r.scratch = nil
	r.budget.Release(r.held)
	r.held = 0
}

// Line returns the number of lines read so far, blank ones included: the
// line number of the message Read returned last.
func (r *Reader) Line() int { return r.line }

// readLine returns the next line without its terminator, valid until the
// next call, and its length. For a line that cannot be used whole it
// returns only the first idProbe bytes, its whole length, and why
// (ErrTooLarge, ErrOverBudget). err is non-nil only when the input ended
// (the line, if any, is still valid).
func (r *Reader) readLine() (line []byte, size int64, bad, err error) {
	chunk, err := r.br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		if cap(r.scratch) > keepScratch {
			r.dropScratch() // the long lines are over: let their buffer go
		}
		line := trimEOL(chunk)
		if len(line) <= r.max {
			return line, int64(len(line)), nil, err
		}
		return line[:min(idProbe, len(line))], int64(len(line)), ErrTooLarge, err
	}
	buf := r.scratch[:0]
	var end []byte // the last bytes read, for the end of line
	for {
		size += int64(len(chunk))
		end = chunk
		if bad == nil {
			var ok bool
			if len(buf)+len(chunk) > r.max+2 {
				bad = ErrTooLarge
			} else if buf, ok = r.grow(buf, len(chunk)); ok {
				buf = append(buf, chunk...)
			} else {
				bad = ErrOverBudget
			}
			if bad != nil {
				if len(buf) < idProbe {
					buf = append(buf, chunk[:min(idProbe-len(buf), len(chunk))]...)
				}
				buf = buf[:min(len(buf), idProbe)]
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			size -= int64(len(end) - len(trimEOL(end)))
			if line := trimEOL(buf); bad == nil && len(line) <= r.max {
				r.scratch = buf[:0]
				return line, int64(len(line)), nil, err
			}
			// A line that is not kept leaves no buffer behind: the probe
			// stays valid for the caller as long as it needs it.
			r.dropScratch()
			if bad == nil {
				bad = ErrTooLarge
			}
			return buf[:min(idProbe, len(buf))], size, bad, err
		}
		chunk, err = r.br.ReadSlice('\n')
	}
}

// keepScratch is the largest line buffer kept past a short line.
const keepScratch = 1 << 20

// grow returns buf with room for n more bytes: its capacity doubles (up to
// the longest line and its terminator) when it runs out, where append
// grows a big slice by a quarter at a time and so copies a 64 MiB line
// some twenty times over. The new capacity is counted against the budget
// first (what lies beyond the message cap, the terminator, is not); when
// the budget refuses, ok is false and buf is returned as it was.
func (r *Reader) grow(buf []byte, n int) (_ []byte, ok bool) {
	need := len(buf) + n
	if need <= cap(buf) {
		return buf, true
	}
	c := max(min(max(2*cap(buf), 4<<10), r.max+2), need)
	if r.budget != nil {
		counted := int64(min(c, r.max))
		if !r.budget.Acquire(counted - r.held) {
			return buf, false
		}
		r.held = counted
	}
	grown := make([]byte, len(buf), c)
	copy(grown, buf)
	return grown, true
}

// appendDoubling is append for buffers that may grow to tens of MiB: it
// doubles the capacity when it runs out, where append grows a big slice by
// a quarter at a time and so copies a 64 MiB line some twenty times over.
func appendDoubling(buf, b []byte) []byte {
	if need := len(buf) + len(b); need > cap(buf) {
		grown := make([]byte, len(buf), max(2*cap(buf), need, 4<<10))
		copy(grown, buf)
		buf = grown
	}
	return append(buf, b...)
}

// trimEOL drops a line's LF or CRLF.
func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// probeID recovers the top-level id from the start of an oversized line, if
// the id comes before the cut.
func probeID(prefix []byte) ID {
	prefix = bytes.TrimLeft(prefix, " \t")
	if len(prefix) == 0 || prefix[0] != '{' {
		return ""
	}
	// Walk the top-level members that are complete within the prefix.
	var id ID
	gjson.ParseBytes(prefix).ForEach(func(k, v gjson.Result) bool {
		if k.Str == "id" && Valid([]byte(v.Raw)) && (v.Type == gjson.String || v.Type == gjson.Number && isInteger(v.Raw)) {
			id = ID(v.Raw)
			return false
		}
		return true
	})
	return id
}

// Writer writes newline-delimited JSON-RPC: each message is written whole,
// followed by exactly one "\n", and flushed. It is safe for concurrent use;
// messages never interleave.
type Writer struct {
	mu sync.Mutex
	bw *bufio.Writer
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{bw: bufio.NewWriterSize(w, 32<<10)}
}

// Write writes m as one line. A message that is not a single line of JSON
// (the zero Message) is refused.
func (w *Writer) Write(m Message) error {
	if len(m.raw) == 0 {
		return ErrEmpty
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.bw.Write(m.raw); err != nil {
		return err
	}
	if err := w.bw.WriteByte('\n'); err != nil {
		return err
	}
	return w.bw.Flush()
}
