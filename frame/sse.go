package frame

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"time"
)

// Event is one dispatched server-sent event.
type Event struct {
	// Type is the event type; "message" when the stream named none.
	Type string
	// Data is the event's data, its data lines joined with "\n".
	Data []byte
	// ID is the stream's last event ID as of this event (WHATWG keeps it
	// across events until an id field changes it).
	ID string
}

// SSEReader parses a text/event-stream as the WHATWG HTML standard defines
// it: lines end in CRLF, LF or CR; a leading BOM is skipped; lines starting
// with ':' are comments; a field's value loses exactly one leading space;
// data lines accumulate and are joined with "\n"; a blank line dispatches;
// an event whose data is empty is not dispatched; "retry" takes only
// digits; an "id" containing NUL is ignored. Events bigger than the cap are
// reported as [ErrTooLarge] and end the stream. Not safe for concurrent use.
type SSEReader struct {
	br      *bufio.Reader
	max     int
	lastCR  bool // the previous line ended in CR: a following LF belongs to it
	started bool
	lastID  string
	retry   time.Duration

	line []byte // the line being assembled when it spans buffer refills
	data []byte
	typ  string
	seen bool // data field seen (even empty)
}

// NewSSEReader returns an SSEReader over r whose events may carry up to max
// bytes of data (max <= 0 means [DefaultMaxMessageSize]).
func NewSSEReader(r io.Reader, max int) *SSEReader {
	if max <= 0 {
		max = DefaultMaxMessageSize
	}
	return &SSEReader{br: bufio.NewReaderSize(r, 4<<10), max: max}
}

// Retry returns the reconnection time the stream last asked for, or 0.
func (r *SSEReader) Retry() time.Duration { return r.retry }

// LastEventID returns the stream's last event ID buffer.
func (r *SSEReader) LastEventID() string { return r.lastID }

// Next returns the next event. At the end of the stream it returns io.EOF
// (or the underlying error); an event not terminated by a blank line before
// the end is discarded, as the standard requires. The returned Data is owned
// by the caller.
func (r *SSEReader) Next() (Event, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			return Event{}, err
		}
		if len(line) == 0 {
			if ev, ok := r.dispatch(); ok {
				return ev, nil
			}
			continue
		}
		if err := r.field(line); err != nil {
			return Event{}, err
		}
	}
}

func (r *SSEReader) dispatch() (Event, bool) {
	defer func() {
		r.data = r.data[:0]
		r.typ = ""
		r.seen = false
	}()
	if !r.seen {
		return Event{}, false
	}
	data := r.data
	if n := len(data); n > 0 && data[n-1] == '\n' {
		data = data[:n-1]
	}
	if len(data) == 0 {
		return Event{}, false
	}
	typ := r.typ
	if typ == "" {
		typ = "message"
	}
	if cap(r.data) > keepScratch {
		r.data = nil // a big buffer is not kept for the next event
		if len(data) > keepScratch {
			// A big event: hand its buffer over rather than copy it.
			return Event{Type: typ, Data: data, ID: r.lastID}, true
		}
	}
	return Event{Type: typ, Data: bytes.Clone(data), ID: r.lastID}, true
}

func (r *SSEReader) field(line []byte) error {
	if line[0] == ':' {
		return nil
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "event":
		r.typ = string(value)
	case "data":
		if len(r.data)+len(value)+1 > r.max {
			return ErrTooLarge
		}
		r.seen = true
		r.data = appendDoubling(r.data, value)
		r.data = append(r.data, '\n')
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			r.lastID = string(value)
		}
	case "retry":
		if n, err := strconv.ParseUint(string(value), 10, 63); err == nil && len(value) > 0 && value[0] != '+' {
			r.retry = time.Duration(n) * time.Millisecond
		}
	}
	return nil
}

// readLine returns the next line without its terminator. The result is valid
// until the next call.
func (r *SSEReader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	for {
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				if len(r.line) > 0 && err == io.EOF {
					// A final line without terminator is still a line, but
					// without a blank line after it nothing is dispatched.
					return nil, io.EOF
				}
				return nil, err
			}
		}
		if !r.started {
			// A BOM can only open the stream. Peek(3) may wait for a third
			// byte, but no event can be dispatched in fewer than three.
			r.started = true
			if b, _ := r.br.Peek(3); bytes.Equal(b, []byte("\xEF\xBB\xBF")) {
				r.br.Discard(3)
				continue
			}
		}
		buf, _ := r.br.Peek(r.br.Buffered())
		if r.lastCR {
			r.lastCR = false
			if buf[0] == '\n' {
				r.br.Discard(1)
				continue
			}
		}
		i := bytes.IndexAny(buf, "\r\n")
		if i < 0 {
			if len(r.line)+len(buf) > r.max+64 {
				return nil, ErrTooLarge
			}
			r.line = appendDoubling(r.line, buf)
			r.br.Discard(len(buf))
			continue
		}
		if len(r.line)+i > r.max+64 {
			return nil, ErrTooLarge
		}
		r.line = appendDoubling(r.line, buf[:i])
		if len(r.line) < 64<<10 && cap(r.line) > keepScratch {
			// A short line after big ones: let their buffer go.
			r.line = append([]byte(nil), r.line...)
		}
		r.lastCR = buf[i] == '\r'
		r.br.Discard(i + 1)
		return r.line, nil
	}
}

// WriteSSE writes one event: an optional "id:" line, "event:" when typ is
// not empty, one "data:" line per line of data, and the blank line that
// dispatches it. data should be one line of JSON; any line breaks in it
// become separate data lines, which a reader joins back. Large data is
// written straight from the caller's slice, not copied.
func WriteSSE(w io.Writer, id, typ string, data []byte) error {
	head := make([]byte, 0, 32+len(id)+len(typ))
	if id != "" {
		head = append(head, "id: "...)
		head = append(head, id...)
		head = append(head, '\n')
	}
	if typ != "" {
		head = append(head, "event: "...)
		head = append(head, typ...)
		head = append(head, '\n')
	}
	for {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			break
		}
		head = append(head, "data: "...)
		head = append(head, data[:i]...)
		head = append(head, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	head = append(head, "data: "...)
	if len(data) <= 4<<10 {
		head = append(head, data...)
		head = append(head, "\n\n"...)
		_, err := w.Write(head)
		return err
	}
	if _, err := w.Write(head); err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	_, err := w.Write([]byte("\n\n"))
	return err
}
