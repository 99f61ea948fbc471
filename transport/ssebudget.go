package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// sseBudget counts, against a frame.Budget, what a frame.SSEReader
// reading a server's event stream through it holds: the bytes of the
// event being assembled — everything since the last event's end (a blank
// line), counted from frame.BudgetMin on as the reader's buffer grows,
// doubling — and, until the reader asks for more, those of the event that
// ended in what it was handed last (it is being delivered).
//
// When the budget cannot take more, Read fails with frame.ErrOverBudget
// before the bytes are handed over. The SSEReader is then done with (its
// state is cut mid-event); skip discards the rest of the refused event,
// and a new SSEReader over the same sseBudget goes on with the next one.
//
// It reads at most sseBudgetChunk bytes at a time, less than BudgetMin:
// an event that ends in one read and one that begins after it cannot both
// be counted, so a refusal is always about the event under way when the
// read began. Not safe for concurrent use.
type sseBudget struct {
	r      io.Reader
	budget *frame.Budget

	pending int64 // bytes of the event under way
	done    int64 // bytes of the event that ended in the last read
	held    int64 // counted against budget

	// Where the bytes read so far leave the stream's lines.
	atLineStart bool // the last byte ended a line (or nothing was read)
	lastCR      bool // ... with CR: an LF next belongs to it

	probe []byte // the first probeMax bytes of the event under way

	refused  bool   // Read fails until skip
	skipping bool   // the refused event's end is still to be read
	refusal  []byte // the refused event's probe
	carry    []byte // bytes read past the refused event, for the next reader
	carryErr error  // the read error that came with them
}

const (
	// sseBudgetChunk bounds one read of the stream.
	sseBudgetChunk = 16 << 10
	// probeMax is how much of an event is kept to find its id when the
	// budget refuses it.
	probeMax = 4 << 10
)

// newSSEBudget returns r counted against b. With a nil b there is nothing
// to count: it returns nil, and the caller reads r itself.
func newSSEBudget(r io.Reader, b *frame.Budget) *sseBudget {
	if b == nil {
		return nil
	}
	return &sseBudget{r: r, budget: b, atLineStart: true}
}

// reader returns what an SSEReader should read: c, or r when c is nil.
func (c *sseBudget) reader(r io.Reader) io.Reader {
	if c == nil {
		return r
	}
	return c
}

func (c *sseBudget) Read(p []byte) (int, error) {
	if c.refused {
		return 0, frame.ErrOverBudget
	}
	if len(c.carry) > 0 {
		n := copy(p, c.carry)
		c.carry = c.carry[n:]
		if len(c.carry) == 0 {
			return n, c.carryErr
		}
		return n, nil
	}
	// What was handed over before has been read to its end: the events
	// that ended there have been delivered.
	c.done = 0
	if len(p) > sseBudgetChunk {
		p = p[:sseBudgetChunk]
	}
	n, err := c.r.Read(p)
	b := p[:n]
	old := c.probe
	first, last := c.scan(b)
	if first < 0 {
		c.pending += int64(n)
		c.keepProbe(b)
	} else {
		c.done = c.pending + int64(first)
		c.pending = int64(n - last)
		c.probe = append(c.probe[:0:0], b[last:min(n, last+probeMax)]...)
	}
	if c.count() {
		return n, err
	}
	// Refused: the event under way when this read began.
	c.refused = true
	if first < 0 {
		c.refusal = c.probe
		c.probe = nil
		c.skipping = true
		c.pending = 0
	} else {
		c.refusal = append(old, b[:min(first, max(probeMax-len(old), 0))]...)
		c.setCarry(b[first:], err)
	}
	c.done = 0
	c.count()
	return 0, frame.ErrOverBudget
}

// skip discards the rest of the event the budget refused, and returns
// its first bytes (the raw stream text, for eventID) and the error that
// ended the stream meanwhile, if any. A new SSEReader reading c then goes
// on with the next event.
func (c *sseBudget) skip() ([]byte, error) {
	var buf []byte
	for c.skipping {
		if buf == nil {
			buf = make([]byte, sseBudgetChunk)
		}
		n, err := c.r.Read(buf)
		b := buf[:n]
		if first, last := c.scan(b); first >= 0 {
			c.skipping = false
			c.pending = int64(n - last)
			c.probe = append([]byte(nil), b[last:min(n, last+probeMax)]...)
			c.setCarry(b[first:], err)
			break
		}
		if err != nil {
			c.skipping = false
			c.refused = false
			return c.refusal, err
		}
	}
	c.refused = false
	c.count()
	return c.refusal, nil
}

// setCarry keeps b, read past the refused event, for the next reader,
// with a line break in front: a new SSEReader takes nothing at its start
// for a byte order mark, as the one before would not have.
func (c *sseBudget) setCarry(b []byte, err error) {
	c.carry = append([]byte{'\n'}, b...)
	c.carryErr = err
}

// release stops counting: the stream is given up.
func (c *sseBudget) release() {
	if c == nil {
		return
	}
	c.budget.Release(c.held)
	c.held, c.pending, c.done = 0, 0, 0
}

// count brings what is counted against the budget to what is held now,
// and reports false when the budget cannot take it (then nothing more is
// counted).
func (c *sseBudget) count() bool {
	want := buffered(c.pending) + buffered(c.done)
	switch {
	case want > c.held:
		if !c.budget.Acquire(want - c.held) {
			return false
		}
	case want < c.held:
		c.budget.Release(c.held - want)
	}
	c.held = want
	return true
}

// buffered is what a reader holding n bytes of an event counts: nothing
// below frame.BudgetMin, else n rounded up to a power of two, the size of
// the buffer it grows by doubling.
func buffered(n int64) int64 {
	if n < frame.BudgetMin {
		return 0
	}
	return 1 << bits.Len64(uint64(n-1))
}

// keepProbe adds the start of b to the probe while it is short.
func (c *sseBudget) keepProbe(b []byte) {
	if room := probeMax - len(c.probe); room > 0 {
		c.probe = append(c.probe, b[:min(room, len(b))]...)
	}
}

// scan follows b through the stream's lines and returns the offsets just
// past the first and the last event end (a blank line: a line break
// right after a line break) in b, or -1, -1. Line breaks are CRLF, LF or
// CR, as for frame.SSEReader.
func (c *sseBudget) scan(b []byte) (first, last int) {
	first, last = -1, -1
	for i := 0; i < len(b); {
		ch := b[i]
		if c.lastCR && ch == '\n' {
			c.lastCR = false
			i++
			continue
		}
		c.lastCR = false
		if ch != '\r' && ch != '\n' {
			c.atLineStart = false
			j := bytes.IndexAny(b[i:], "\r\n")
			if j < 0 {
				break
			}
			i += j
			continue
		}
		if c.atLineStart {
			if first < 0 {
				first = i + 1
			}
			last = i + 1
		}
		c.atLineStart = true
		c.lastCR = ch == '\r'
		i++
	}
	return first, last
}

// eventID returns the id of the JSON-RPC message an event carries, from
// the event's first bytes (raw stream text, cut anywhere): the id when it
// comes before the bulk of the message, else ""; and whether a method
// shows there too (the message is a request, whose id is the sender's,
// not one of ours).
func eventID(raw []byte) (id frame.ID, request bool) {
	rd := frame.NewSSEReader(io.MultiReader(bytes.NewReader(raw), strings.NewReader("\n\n")), 0)
	ev, err := rd.Next()
	if err != nil || ev.Type != "message" {
		return "", false
	}
	// A reader whose cap every line exceeds reports the line with the id
	// it could find at its start.
	_, err = frame.NewReader(bytes.NewReader(append(ev.Data, '\n')), 1).Read()
	var le *frame.LineError
	if !errors.As(err, &le) {
		return "", false
	}
	gjson.ParseBytes(ev.Data).ForEach(func(k, _ gjson.Result) bool {
		request = k.Str == "method"
		return !request
	})
	return le.ID, request
}

// overBudgetError is the error for a message the budget could not take.
func overBudgetError(b *frame.Budget) error {
	return fmt.Errorf("the server's message does not fit the memory budget for messages held at once, all requests together (%s): %w", sizeText(b.Limit()), frame.ErrOverBudget)
}

// sizeText writes a byte count for people: 256 MiB, 1.5 GiB, 100 B.
func sizeText(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size {
			if n%u.size == 0 {
				return fmt.Sprintf("%d %s", n/u.size, u.name)
			}
			return fmt.Sprintf("%.1f %s", float64(n)/float64(u.size), u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}
