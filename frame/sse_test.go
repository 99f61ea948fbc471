package frame_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func events(t *testing.T, r io.Reader, max int) ([]frame.Event, error) {
	t.Helper()
	sr := frame.NewSSEReader(r, max)
	var out []frame.Event
	for {
		ev, err := sr.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestSSEBasics(t *testing.T) {
	is := is.New(t)
	in := "\xEF\xBB\xBF: comment\nevent: endpoint\ndata: /messages?sessionId=abc\n\n" +
		"data: {\"a\":\ndata: 1}\n\n" + // multi-line data joined with \n
		"event:message\ndata:no-space\n\n" +
		"id: 7\ndata:  two-spaces\n\n" +
		"event: ping\n\n" + // no data: not dispatched
		"data\n\n" + // field without colon: empty data line, empty data: not dispatched
		"retry: 1500\ndata: x\n\n" +
		"data: unterminated"
	evs, err := events(t, strings.NewReader(in), 0)
	is.Equal(err, io.EOF)
	is.Equal(len(evs), 5)
	is.Equal(evs[0], frame.Event{Type: "endpoint", Data: []byte("/messages?sessionId=abc")})
	is.Equal(string(evs[1].Data), "{\"a\":\n1}")
	is.Equal(evs[1].Type, "message")
	is.Equal(string(evs[2].Data), "no-space")
	is.Equal(string(evs[3].Data), " two-spaces") // exactly one space stripped
	is.Equal(evs[3].ID, "7")
	is.Equal(evs[4].ID, "7") // last event id persists
	m, err := frame.Parse(evs[1].Data)
	is.NoErr(err)
	is.Equal(m.String(), `{"a":1}`) // compacted to one line
}

func TestSSELineEndings(t *testing.T) {
	for name, sep := range map[string]string{"LF": "\n", "CR": "\r", "CRLF": "\r\n"} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			in := "event: message" + sep + "data: a" + sep + "data: b" + sep + sep + "data: c" + sep + sep
			// One byte at a time, so CR and LF straddle reads.
			evs, err := events(t, iotest.OneByteReader(strings.NewReader(in)), 0)
			is.Equal(err, io.EOF)
			is.Equal(len(evs), 2)
			is.Equal(string(evs[0].Data), "a\nb")
			is.Equal(string(evs[1].Data), "c")
		})
	}
}

// A CR at the end of what has arrived must dispatch without waiting for the
// next byte (it might be an LF, or the next event hours later).
func TestSSECRDoesNotWaitForNextByte(t *testing.T) {
	is := is.New(t)
	pr, pw := io.Pipe()
	sr := frame.NewSSEReader(pr, 0)
	go func() { pw.Write([]byte("data: x\r\r")) }()
	ev, err := sr.Next()
	is.NoErr(err)
	is.Equal(string(ev.Data), "x")
	go func() { pw.Write([]byte("\ndata: y\r\n\r\n")); pw.Close() }()
	ev, err = sr.Next()
	is.NoErr(err)
	is.Equal(string(ev.Data), "y")
}

func TestSSERetryAndID(t *testing.T) {
	is := is.New(t)
	sr := frame.NewSSEReader(strings.NewReader("retry: 2500\nid: a\x00b\nretry: x1\ndata: z\n\n"), 0)
	ev, err := sr.Next()
	is.NoErr(err)
	is.Equal(ev.ID, "") // an id with NUL is ignored
	is.Equal(sr.Retry(), 2500*time.Millisecond)
}

func TestSSEEventCap(t *testing.T) {
	is := is.New(t)
	in := "data: " + strings.Repeat("a", 1000) + "\ndata: " + strings.Repeat("b", 1000) + "\n\n"
	_, err := events(t, strings.NewReader(in), 1500)
	is.True(errors.Is(err, frame.ErrTooLarge))
	_, err = events(t, strings.NewReader("data: "+strings.Repeat("a", 5000)), 1500) // one endless line
	is.True(errors.Is(err, frame.ErrTooLarge))
}

func TestWriteSSERoundTrip(t *testing.T) {
	is := is.New(t)
	var buf bytes.Buffer
	is.NoErr(frame.WriteSSE(&buf, "", "message", []byte(`{"id":1,"result":{}}`)))
	is.Equal(buf.String(), "event: message\ndata: {\"id\":1,\"result\":{}}\n\n")
	buf.Reset()
	big := bytes.Repeat([]byte("q"), 10000)
	is.NoErr(frame.WriteSSE(&buf, "e1", "", []byte("a\r\nb\nc")))
	is.NoErr(frame.WriteSSE(&buf, "", "message", big))
	evs, err := events(t, &buf, 0)
	is.Equal(err, io.EOF)
	is.Equal(len(evs), 2)
	is.Equal(string(evs[0].Data), "a\nb\nc")
	is.Equal(evs[0].ID, "e1")
	is.Equal(evs[1].Data, big)
}

// Big events take the reader's buffers with them; the next event must not
// share or reuse them.
func TestSSEBigEventsDoNotAlias(t *testing.T) {
	// Below the reader's scratch size events are copied out of its buffer;
	// above it the buffer itself is handed over. Either way each event
	// stays the caller's, untouched by the events read after it.
	for _, size := range []int{200 << 10, 3 << 20} {
		is := is.New(t)
		a := strings.Repeat("a", size)
		b := strings.Repeat("b", size*3/4)
		in := "data: " + a + "\ndata: tail\n\ndata: " + b + "\n\ndata: small\n\ndata: " + a + "\n\n"
		sr := frame.NewSSEReader(iotest.HalfReader(strings.NewReader(in)), 0)
		var got []frame.Event // compared once all are read
		for {
			ev, err := sr.Next()
			if err != nil {
				break
			}
			got = append(got, ev)
		}
		is.Equal(len(got), 4)
		is.True(string(got[0].Data) == a+"\ntail")
		is.True(string(got[1].Data) == b)
		is.Equal(string(got[2].Data), "small")
		is.True(string(got[3].Data) == a)
	}
}
