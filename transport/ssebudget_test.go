package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// bigEvent is an SSE event carrying a response to id with a result of
// about n bytes.
func bigEvent(id string, n int, eol string) string {
	return "data: " + `{"jsonrpc":"2.0","id":` + id + `,"result":{"text":"` + strings.Repeat("x", n) + `"}}` + eol + eol
}

// readEvents reads every event of stream through an sseBudget on b,
// skipping the ones the budget refuses, and returns the data of those it
// read and the ids of those it skipped. check is called after each event
// with the bytes counted at that moment.
func readAllCounted(t *testing.T, stream io.Reader, b *frame.Budget, check func(ev frame.Event, used int64)) (got []string, skipped []frame.ID) {
	t.Helper()
	c := newSSEBudget(stream, b)
	defer c.release()
	rd := frame.NewSSEReader(c, 0)
	for {
		ev, err := rd.Next()
		if errors.Is(err, frame.ErrOverBudget) {
			raw, serr := c.skip()
			id, _ := eventID(raw)
			skipped = append(skipped, id)
			rd = frame.NewSSEReader(c, 0)
			if serr == nil {
				continue
			}
			err = serr
		}
		if err == io.EOF {
			return got, skipped
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(ev.Data))
		if check != nil {
			check(ev, b.Used())
		}
	}
}

// An event is counted while it is read and delivered, as its buffer
// grows, and let go once the reader asks for more.
func TestSSEBudgetCountsAnEventUntilItIsDelivered(t *testing.T) {
	for _, eol := range []string{"\n", "\r\n", "\r"} {
		t.Run(fmt.Sprintf("%q", eol), func(t *testing.T) {
			is := is.New(t)
			b := frame.NewBudget(1 << 20)
			stream := bigEvent("1", 300<<10, eol) + ": comment" + eol + eol + bigEvent("2", 10, eol) + bigEvent("3", 100<<10, eol)
			var used []int64
			got, skipped := readAllCounted(t, iotest.HalfReader(strings.NewReader(stream)), b, func(ev frame.Event, u int64) {
				used = append(used, u)
			})
			is.Equal(len(got), 3)
			is.Equal(len(skipped), 0)
			// Rounded up to the buffer's size; the first still counted
			// while the events that came in the same read are delivered.
			is.Equal(used, []int64{512 << 10, 512 << 10, 128 << 10})
			is.Equal(b.Used(), int64(0))
		})
	}
}

// An event the budget cannot take is skipped; its id is found from its
// start, the events after it are read as if nothing happened, and nothing
// stays counted.
func TestSSEBudgetSkipsWhatItCannotTake(t *testing.T) {
	for _, eol := range []string{"\n", "\r\n", "\r"} {
		t.Run(fmt.Sprintf("%q", eol), func(t *testing.T) {
			is := is.New(t)
			b := frame.NewBudget(256 << 10)
			stream := bigEvent("1", 10, eol) +
				"id: 7" + eol + "event: message" + eol + bigEvent(`"big"`, 400<<10, eol) +
				bigEvent("2", 100<<10, eol) +
				bigEvent("3", 300<<10, eol) +
				"data: \xEF\xBB\xBFnot a BOM" + eol + eol
			got, skipped := readAllCounted(t, strings.NewReader(stream), b, nil)
			is.Equal(skipped, []frame.ID{`"big"`, "3"})
			is.Equal(len(got), 3)
			is.True(strings.HasPrefix(got[0], `{"jsonrpc":"2.0","id":1,`))
			is.True(strings.HasPrefix(got[1], `{"jsonrpc":"2.0","id":2,`))
			is.Equal(got[2], "\xEF\xBB\xBFnot a BOM")
			is.Equal(b.Used(), int64(0))
		})
	}
}

// The budget is shared: what one stream holds leaves less for another.
func TestSSEBudgetIsShared(t *testing.T) {
	is := is.New(t)
	b := frame.NewBudget(1 << 20)
	first := newSSEBudget(strings.NewReader(strings.Repeat("data: x", 100<<10)), b) // 700 KiB, unterminated
	_, err := io.Copy(io.Discard, first)
	is.NoErr(err)
	is.Equal(b.Used(), int64(1<<20))
	second := newSSEBudget(strings.NewReader(bigEvent("1", 100<<10, "\n")), b)
	_, err = frame.NewSSEReader(second, 0).Next()
	is.True(errors.Is(err, frame.ErrOverBudget))
	raw, err := second.skip()
	is.NoErr(err)
	id, request := eventID(raw)
	is.Equal(id, frame.ID("1"))
	is.True(!request)
	_, err = frame.NewSSEReader(second, 0).Next()
	is.Equal(err, io.EOF) // nothing after it
	first.release()       // abandoned mid-event
	second.release()
	is.Equal(b.Used(), int64(0))
}

// eventID finds the id at the start of an event, wherever it was cut,
// and tells a request by its method.
func TestEventID(t *testing.T) {
	full := "event: message\nid: 9\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"result\":{\"text\":\"" + strings.Repeat("y", 5000)
	for _, tt := range []struct {
		raw     string
		id      frame.ID
		request bool
	}{
		{full[:probeMax], `"abc"`, false},
		{`data: {"jsonrpc":"2.0","result":{"x":"yyy`, "", false}, // after the bulk: not found
		{`data: {"jsonrpc":"2.0","id":4`, "4", false},            // cut right after
		{`data: {"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{"x":"yy`, "4", true},
		{`event: other` + "\n" + `data: {"jsonrpc":"2.0","id":4`, "", false}, // not a message
		{"", "", false},
		{"\r\r\r\r", "", false},
	} {
		id, request := eventID([]byte(tt.raw))
		if id != tt.id || request != tt.request {
			t.Errorf("eventID(%.60q) = %s, %v; want %s, %v", tt.raw, id, request, tt.id, tt.request)
		}
	}
}

// FuzzSSEBudget reads a stream directly and through an sseBudget: with
// room to spare, the events are the same; with a small budget, those read
// are the direct ones less some skipped, in order; either way nothing
// stays counted. In the input, '*' stands for 16 KiB of 'x', so that
// events big enough to be counted are cheap to make.
func FuzzSSEBudget(f *testing.F) {
	f.Add([]byte("data: {\"id\":1}\n\n"), uint8(0))
	f.Add([]byte("data: ****\n\ndata: b\n\n"), uint8(1))
	f.Add([]byte("data: *****\r\n\r\n: c\r\rdata: ******\rdata: x\r\r"), uint8(3))
	f.Add([]byte("id: 1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"t\":\"********\"}}\n\ndata: z\n\n"), uint8(2))
	f.Add([]byte("\xEF\xBB\xBFdata: *****\n\n\xEF\xBB\xBFdata: y\n\n"), uint8(0))
	f.Add([]byte(": ****\n: ****\n\ndata: ***\n"), uint8(4))
	f.Fuzz(func(t *testing.T, in []byte, room uint8) {
		if len(in) > 4096 || bytes.Count(in, []byte("*")) > 64 {
			return
		}
		stream := bytes.ReplaceAll(in, []byte("*"), bytes.Repeat([]byte("x"), 16<<10))
		type event struct{ typ, data, id string }
		read := func(rd *frame.SSEReader) (event, error) {
			ev, err := rd.Next()
			return event{ev.Type, string(ev.Data), ev.ID}, err
		}
		var direct []event
		rd := frame.NewSSEReader(bytes.NewReader(stream), 0)
		for {
			ev, err := read(rd)
			if err != nil {
				break
			}
			direct = append(direct, ev)
		}

		for _, limit := range []int64{1 << 40, frame.BudgetMin + int64(room)<<12} {
			b := frame.NewBudget(limit)
			c := newSSEBudget(iotest.HalfReader(bytes.NewReader(stream)), b)
			rd := frame.NewSSEReader(c, 0)
			var got []event
			skips := 0
			for {
				ev, err := read(rd)
				if errors.Is(err, frame.ErrOverBudget) {
					skips++
					if _, err = c.skip(); err == nil {
						rd = frame.NewSSEReader(c, 0)
						continue
					}
				}
				if err != nil {
					break
				}
				got = append(got, ev)
			}
			c.release()
			if b.Used() != 0 {
				t.Fatalf("budget %d: %d bytes still counted", limit, b.Used())
			}
			if skips == 0 {
				if len(got) != len(direct) {
					t.Fatalf("budget %d: %d events, want %d", limit, len(got), len(direct))
				}
				for i := range got {
					if got[i] != direct[i] {
						t.Fatalf("budget %d: event %d differs", limit, i)
					}
				}
				continue
			}
			// A subsequence of the direct events (ids aside: a new reader
			// starts without the last one). What was skipped may have been
			// no event at all (comments count too).
			j := 0
			for _, g := range got {
				for j < len(direct) && (direct[j].typ != g.typ || direct[j].data != g.data) {
					j++
				}
				if j == len(direct) {
					t.Fatalf("budget %d: event %.40q is not among the direct ones in order", limit, g.data)
				}
				j++
			}
		}
	})
}
