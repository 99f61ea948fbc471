package frame

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

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
	Err  error // ErrSyntax or ErrTooLarge (from a Reader), or one matching ErrNotJSONRPC
	// ID is the id to answer the line under, when it could be recovered (an
	// oversized request whose id precedes its bulk, a request whose
	// envelope is invalid but whose id is fine), else "". It lets the
	// caller answer the request instead of leaving its sender waiting.
	ID ID
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Code returns the JSON-RPC error code that answers the line:
// [CodeParseError] for bad JSON, [CodeInvalidRequest] for an oversized
// line or one that is not a JSON-RPC message.
func (e *LineError) Code() int {
	if errors.Is(e.Err, ErrTooLarge) || errors.Is(e.Err, ErrNotJSONRPC) {
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
// message. A longer one is assembled in a scratch buffer, kept while long
// lines keep coming (so a run of big messages costs one copy each more,
// and no regrowing) and dropped at the next short line, so that one big
// message does not pin tens of MiB for the rest of the session.
type Reader struct {
	br      *bufio.Reader
	max     int
	line    int
	scratch []byte
}

// idProbe is how much of an oversized line is kept to look for its id.
const idProbe = 4 << 10

// NewReader returns a Reader over r whose messages may be up to max bytes
// (max <= 0 means [DefaultMaxMessageSize]).
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = DefaultMaxMessageSize
	}
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Read returns the next message. Errors are either a *[LineError] for a line
// that could not be used (keep reading), or the underlying reader's error,
// io.EOF at a clean end, after which the Reader is done. A final line without
// a newline still counts as a line.
func (r *Reader) Read() (Message, error) {
	for {
		line, tooLong, err := r.readLine()
		if len(line) == 0 && !tooLong && err != nil {
			return Message{}, err
		}
		r.line++
		if tooLong {
			return Message{}, &LineError{Line: r.line, Err: ErrTooLarge, ID: probeID(line)}
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			if err != nil {
				return Message{}, err
			}
			continue
		}
		var own []byte
		if len(line) > keepScratch {
			// Only the scratch buffer holds a line this long (the bufio
			// buffer is smaller): hand it over rather than copy it.
			own, r.scratch = line, nil
		} else {
			own = bytes.Clone(line)
		}
		m, perr := ParseOwned(own)
		if perr != nil {
			return Message{}, &LineError{Line: r.line, Err: perr}
		}
		return m, nil
	}
}

// Line returns the number of lines read so far, blank ones included: the
// line number of the message Read returned last.
func (r *Reader) Line() int { return r.line }

// readLine returns the next line without its terminator, valid until the
// next call. For an oversized line it returns only the first idProbe bytes
// and tooLong. err is non-nil only when the input ended (the line, if any,
// is still valid).
func (r *Reader) readLine() (line []byte, tooLong bool, err error) {
	chunk, err := r.br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		if cap(r.scratch) > keepScratch {
			r.scratch = nil // the long lines are over: let their buffer go
		}
		if line := trimEOL(chunk); len(line) <= r.max {
			return line, false, err
		}
		return chunk[:min(idProbe, len(chunk))], true, err
	}
	buf := r.scratch[:0]
	for {
		if !tooLong {
			if len(buf)+len(chunk) > r.max+2 {
				tooLong = true
				if len(buf) < idProbe {
					buf = append(buf, chunk[:min(idProbe-len(buf), len(chunk))]...)
				}
				buf = buf[:min(len(buf), idProbe)]
			} else {
				buf = appendDoubling(buf, chunk)
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			r.scratch = buf[:0]
			if line := trimEOL(buf); !tooLong && len(line) <= r.max {
				return line, false, err
			}
			return buf[:min(idProbe, len(buf))], true, err
		}
		chunk, err = r.br.ReadSlice('\n')
	}
}

// keepScratch is the largest line buffer kept past a short line.
const keepScratch = 1 << 20

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
		if k.Str == "id" && (v.Type == gjson.String || v.Type == gjson.Number && isInteger(v.Raw)) && gjson.Valid(v.Raw) {
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
