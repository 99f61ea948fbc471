package frame_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestBudget(t *testing.T) {
	is := is.New(t)
	b := frame.NewBudget(100)
	is.True(b.Acquire(60))
	is.True(!b.Acquire(41)) // 101 > 100: refused, nothing counted
	is.Equal(b.Used(), int64(60))
	is.True(b.Acquire(40))
	b.Add(50) // bytes changing hands are counted whatever the total
	is.Equal(b.Used(), int64(150))
	is.True(!b.Acquire(1))
	b.Release(90)
	is.True(b.Acquire(40))
	b.Release(100)
	is.Equal(b.Used(), int64(0))
	is.Equal(b.Limit(), int64(100))

	var none *frame.Budget // no budget: no limit, nothing counted
	is.True(none.Acquire(1 << 40))
	none.Add(5)
	none.Release(5)
	is.Equal(none.Used(), int64(0))
}

// bigLine returns a request line of about n bytes with the given id.
func bigLine(id string, n int) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"x","params":{"s":"` + strings.Repeat("b", n) + `"}}` + "\n"
}

func TestReaderRefusesALineOverTheBudget(t *testing.T) {
	is := is.New(t)
	b := frame.NewBudget(256 << 10)
	in := bigLine(`"big"`, 300<<10) + `{"jsonrpc":"2.0","id":2,"method":"small"}` + "\n" + bigLine("3", 100<<10)
	r := frame.NewReader(strings.NewReader(in), 0) // the size cap (64 MiB) is not what stops it
	r.SetBudget(b)

	_, err := r.Read()
	var le *frame.LineError
	is.True(errors.As(err, &le))
	is.True(errors.Is(err, frame.ErrOverBudget))
	is.Equal(le.ID, frame.ID(`"big"`)) // recovered, so the sender can be answered
	is.Equal(le.Code(), frame.CodeGateway)
	is.Equal(b.Used(), int64(0)) // the refused line left nothing behind

	m, err := r.Read()
	is.NoErr(err)
	is.Equal(m.Method(), "small")
	is.Equal(r.TakeHeld(), int64(0)) // short messages are not counted

	m, err = r.Read()
	is.NoErr(err)
	is.Equal(m.ID(), frame.ID("3"))
	held := r.TakeHeld()
	is.True(held >= int64(m.Len())) // the message holds its buffer...
	is.Equal(b.Used(), held)        // ...and nothing else is kept: no input waits
	b.Release(held)
	_, err = r.Read()
	is.Equal(err, io.EOF)
	is.Equal(b.Used(), int64(0))
}

func TestReaderHandsOverItsBufferWhenACopyDoesNotFit(t *testing.T) {
	is := is.New(t)
	// 100 KiB lines, more input waiting after each but the last: each is
	// assembled in a 128 KiB scratch buffer, kept for the next, and copied
	// into its message while the budget has room for the copy.
	b := frame.NewBudget(300 << 10)
	r := frame.NewReader(strings.NewReader(bigLine("1", 100<<10)+bigLine("2", 100<<10)+bigLine("3", 100<<10)), 0)
	r.SetBudget(b)
	m, err := r.Read()
	is.NoErr(err)
	first := r.TakeHeld()
	is.Equal(first, int64(m.Len())) // a copy
	is.True(b.Used() > first)       // and the kept scratch buffer
	// The second copy does not fit beside the first message and the
	// scratch buffer: the buffer itself becomes the message.
	m, err = r.Read()
	is.NoErr(err)
	is.Equal(m.ID(), frame.ID("2"))
	second := r.TakeHeld()
	is.Equal(b.Used(), first+second)
	b.Release(first)
	b.Release(second)
	// The last line, with nothing after it: its buffer is the message.
	m, err = r.Read()
	is.NoErr(err)
	is.Equal(m.ID(), frame.ID("3"))
	is.True(b.Used() >= int64(m.Len())) // the message's buffer, and nothing kept
	_, err = r.Read()                   // releases what nobody took
	is.Equal(err, io.EOF)
	is.Equal(b.Used(), int64(0))
}

func TestReaderReleasesWhatNobodyTook(t *testing.T) {
	is := is.New(t)
	b := frame.NewBudget(8 << 20)
	r := frame.NewReader(strings.NewReader(bigLine("1", 2<<20)+`{"id":2,"method":"a"}`+"\n"), 0)
	r.SetBudget(b)
	_, err := r.Read()
	is.NoErr(err)
	is.True(b.Used() >= 2<<20) // handed over whole: it is longer than the kept scratch
	_, err = r.Read()          // nobody took the first message's bytes: released now
	is.NoErr(err)
	is.Equal(b.Used(), int64(0))
}

// FuzzReaderBudget reads arbitrary input with a budget: every '~' in the
// input stands for n KiB of filler, so that short inputs make lines
// longer than the read buffer. Whatever arrives, the bytes counted never
// exceed the limit, every message is valid, and once the input has ended
// and every message's bytes are released, nothing is counted.
func FuzzReaderBudget(f *testing.F) {
	for _, s := range []string{
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"s\":\"~\"}}\n{\"id\":2,\"method\":\"b\"}\n",
		"{\"id\":\"x\",\"result\":\"~~~~\"}\r\n{\"id\":3,\"result\":\"~\"}\n",
		"[~]\n{~}\n\"~\"\n",
		"{\"id\":7,\"result\":\"~~~~~~~~~~~~~~~~~~~~\"}",
	} {
		f.Add([]byte(s), uint8(70), uint32(256<<10), 1<<20)
	}
	f.Fuzz(func(t *testing.T, in []byte, kib uint8, limit uint32, max int) {
		if max < 16 || max > 4<<20 {
			max = 4 << 20
		}
		in = bytes.ReplaceAll(in, []byte("~"), bytes.Repeat([]byte("a"), int(kib)<<10))
		if len(in) > 16<<20 {
			return
		}
		b := frame.NewBudget(int64(limit))
		r := frame.NewReader(bytes.NewReader(in), max)
		r.SetBudget(b)
		var held int64
		for range len(in) + 2 {
			m, err := r.Read()
			if used := b.Used(); used > b.Limit() || used < 0 {
				t.Fatalf("%d bytes counted, limit %d", used, b.Limit())
			}
			if err != nil {
				var le *frame.LineError
				if errors.As(err, &le) {
					if le.Code() != frame.CodeParseError && le.Code() != frame.CodeInvalidRequest && le.Code() != frame.CodeGateway {
						t.Fatalf("bad code %d", le.Code())
					}
					if le.ID != "" && !gjson.Valid(string(le.ID)) {
						t.Fatalf("recovered id %q is not a JSON token", le.ID)
					}
					continue
				}
				b.Release(held)
				if b.Used() != 0 {
					t.Fatalf("%d bytes still counted at the end", b.Used())
				}
				return
			}
			if len(m.Bytes()) > max || !gjson.ValidBytes(m.Bytes()) {
				t.Fatalf("bad message %q", m.Bytes())
			}
			if m.Len() >= frame.BudgetMin {
				held += r.TakeHeld() // keep every big message until the end
			}
		}
		t.Fatal("reader did not terminate")
	})
}
