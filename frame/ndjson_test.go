package frame_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// readAll drains r, recording messages and line errors.
func readAll(r *frame.Reader) (msgs []string, errs []*frame.LineError, end error) {
	for {
		m, err := r.Read()
		var le *frame.LineError
		switch {
		case err == nil:
			msgs = append(msgs, m.String())
		case errors.As(err, &le):
			errs = append(errs, le)
		default:
			return msgs, errs, err
		}
	}
}

func TestReaderLines(t *testing.T) {
	is := is.New(t)
	in := "{\"id\":1,\"method\":\"a\"}\n\n   \r\n{\"id\":2,\"method\":\"b\"}\r\n  {\"id\":3,\"method\":\"c\"}  \n{\"id\":4,\"method\":\"d\"}"
	msgs, errs, end := readAll(frame.NewReader(strings.NewReader(in), 0))
	is.Equal(end, io.EOF)
	is.Equal(len(errs), 0)
	is.Equal(msgs, []string{`{"id":1,"method":"a"}`, `{"id":2,"method":"b"}`, `{"id":3,"method":"c"}`, `{"id":4,"method":"d"}`})
}

func TestReaderBadLineThenContinues(t *testing.T) {
	is := is.New(t)
	in := "not json\n{\"id\":1,\"method\":\"a\"}\n{\"id\":2,\n"
	msgs, errs, end := readAll(frame.NewReader(strings.NewReader(in), 0))
	is.Equal(end, io.EOF)
	is.Equal(msgs, []string{`{"id":1,"method":"a"}`})
	is.Equal(len(errs), 2)
	is.Equal(errs[0].Line, 1)
	is.True(errors.Is(errs[0], frame.ErrSyntax))
	is.Equal(errs[0].Code(), frame.CodeParseError)
	is.Equal(errs[1].Line, 3)
}

func TestReaderLongLinesBeyond64KiB(t *testing.T) {
	is := is.New(t)
	big := strings.Repeat("x", 5<<20)
	in := `{"id":1,"method":"a","params":{"s":"` + big + `"}}` + "\n" + `{"id":2,"method":"b"}` + "\n"
	msgs, errs, _ := readAll(frame.NewReader(strings.NewReader(in), 0))
	is.Equal(len(errs), 0)
	is.Equal(len(msgs), 2)
	is.Equal(len(msgs[0]), len(in)-len(`{"id":2,"method":"b"}`)-2)
}

func TestReaderOversizedLineSkipped(t *testing.T) {
	is := is.New(t)
	big := strings.Repeat("y", 300<<10)
	in := `{"jsonrpc":"2.0","id":"big-1","method":"tools/call","params":{"s":"` + big + `"}}` + "\n" +
		`[` + big + "]\n" +
		`{"id":2,"method":"b"}` + "\n"
	msgs, errs, end := readAll(frame.NewReader(strings.NewReader(in), 100<<10))
	is.Equal(end, io.EOF)
	is.Equal(msgs, []string{`{"id":2,"method":"b"}`})
	is.Equal(len(errs), 2)
	is.True(errors.Is(errs[0], frame.ErrTooLarge))
	is.Equal(errs[0].ID, frame.ID(`"big-1"`)) // recovered so the sender can be answered
	is.Equal(errs[0].Code(), frame.CodeInvalidRequest)
	is.Equal(errs[1].ID, frame.ID(""))
}

func TestReaderExactCap(t *testing.T) {
	is := is.New(t)
	line := `{"id":1,"method":"a"}`
	msgs, errs, _ := readAll(frame.NewReader(strings.NewReader(line+"\r\n"+line+"x\n"), len(line)))
	is.Equal(msgs, []string{line})
	is.Equal(len(errs), 1)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestReaderUnderlyingError(t *testing.T) {
	is := is.New(t)
	boom := errors.New("boom")
	r := frame.NewReader(io.MultiReader(strings.NewReader(`{"id":1,"method":"a"}`+"\n"), errReader{boom}), 0)
	_, err := r.Read()
	is.NoErr(err)
	_, err = r.Read()
	is.Equal(err, boom)
}

func TestWriterOneLinePerMessage(t *testing.T) {
	is := is.New(t)
	var buf bytes.Buffer
	w := frame.NewWriter(&buf)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := frame.MustParse("{\n\"jsonrpc\":\"2.0\",\"id\":" + frame.IntID(int64(i)).String() + ",\r\n\"result\":{\"s\":\"" + strings.Repeat("z", 10000) + "\"}}")
			is.NoErr(w.Write(m))
		}()
	}
	wg.Wait()
	lines := strings.Split(buf.String(), "\n")
	is.Equal(len(lines), 51)
	is.Equal(lines[50], "")
	is.True(!strings.Contains(buf.String(), "\r"))
	for _, l := range lines[:50] {
		m, err := frame.Parse([]byte(l))
		is.NoErr(err)
		is.Equal(m.Kind(), frame.Result)
	}
	is.Equal(w.Write(frame.Message{}), frame.ErrEmpty)
}

// Long lines come back in buffers of their own, never shared with the next
// line: copied out of the reader's buffer up to its scratch size (1 MiB),
// the scratch buffer itself handed over beyond.
func TestReaderLongLinesDoNotAlias(t *testing.T) {
	for _, size := range []int{300 << 10, 3 << 20} {
		is := is.New(t)
		a := `{"id":1,"result":"` + strings.Repeat("a", size) + `"}`
		b := `{"id":2,"result":"` + strings.Repeat("b", size/3) + `"}`
		r := frame.NewReader(strings.NewReader(a+"\r\n"+b+"\n"+`{"id":3,"result":1}`+"\n"+a+"\n"), 0)
		var got []frame.Message // compared once all are read
		for {
			m, err := r.Read()
			if err != nil {
				is.Equal(err, io.EOF)
				break
			}
			got = append(got, m)
		}
		is.Equal(len(got), 4)
		is.True(got[0].String() == a)
		is.True(got[1].String() == b)
		is.Equal(got[2].String(), `{"id":3,"result":1}`)
		is.True(got[3].String() == a)
	}
}

func TestReaderLine(t *testing.T) {
	is := is.New(t)
	r := frame.NewReader(strings.NewReader("\n{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n\n7\n"), 0)
	_, err := r.Read()
	is.NoErr(err)
	is.Equal(r.Line(), 2) // blank lines count
	m, err := r.Read()
	is.NoErr(err)
	is.Equal(m.Kind(), frame.Invalid)
	is.Equal(r.Line(), 4)
}

// A bad line keeps its start and its length, so that a log can show what
// was refused: at most LineHeadSize bytes, escaped, and "…" when cut.
func TestReaderBadLineHeadAndSize(t *testing.T) {
	is := is.New(t)
	long := "oops " + strings.Repeat("z", 200)
	huge := `{"id":"h","s":"` + strings.Repeat("q", 200<<10) + `"}`
	in := "not json\x01é\r\n" + long + "\n" + huge + "\r\n"
	_, errs, _ := readAll(frame.NewReader(strings.NewReader(in), 100<<10))
	is.Equal(len(errs), 3)
	is.Equal(string(errs[0].Head), "not json\x01é")
	is.Equal(errs[0].Size, int64(len("not json\x01é")))
	is.Equal(errs[0].Excerpt(), `not json\x01é`)
	is.Equal(len(errs[1].Head), frame.LineHeadSize)
	is.Equal(errs[1].Size, int64(len(long)))
	is.Equal(errs[1].Excerpt(), long[:frame.LineHeadSize]+"…")
	is.True(errors.Is(errs[2], frame.ErrTooLarge)) // over the cap: its length still counted
	is.Equal(errs[2].Size, int64(len(huge)))
	is.Equal(string(errs[2].Head), huge[:frame.LineHeadSize])
}

// Excerpt escapes what a log line should not carry raw, and drops a
// character the cut split.
func TestLineErrorExcerpt(t *testing.T) {
	is := is.New(t)
	for _, c := range []struct {
		head string
		size int64
		want string
	}{
		{`{"a":"b\n"}`, 11, `{"a":"b\\n"}`},
		{"tab\there\x7f\xff\u2028", 0, `tab\x09here\x7f\xff\u2028`},
		{"ab\xc3", 10, "ab…"},     // é cut after its first byte
		{"ab\xe2\x82", 10, "ab…"}, // € cut after two
		{"abé", 10, "abé…"},
	} {
		is.Equal((&frame.LineError{Head: []byte(c.head), Size: c.size}).Excerpt(), c.want)
	}
}
