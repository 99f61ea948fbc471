package transport

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// lines returns the lines written to b so far.
func lines(b *transporttest.SyncBuffer) []string {
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// handled records what a Stdio hands over, in order.
type handled struct {
	mu   sync.Mutex
	msgs []string
	h    func(ctx context.Context, m frame.Message) error
}

func (r *handled) Handle(ctx context.Context, m frame.Message) error {
	r.mu.Lock()
	r.msgs = append(r.msgs, m.String())
	r.mu.Unlock()
	if r.h != nil {
		return r.h(ctx, m)
	}
	return nil
}

func (r *handled) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}

// Lines that are not usable messages are answered on the writer by
// default, and reading goes on.
func TestStdioAnswersBadLines(t *testing.T) {
	is := is.New(t)
	in := "\n" +
		"not json\n" +
		`{"hello":"world"}` + "\n" +
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"text":"` + strings.Repeat("x", 200) + `"}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\r\n"
	var out transporttest.SyncBuffer
	h := &handled{}
	s := NewStdio(strings.NewReader(in), &out, StdioConfig{MaxMessageSize: 100, MaxInFlight: 4})
	is.NoErr(s.Serve(t.Context(), h))
	is.Equal(h.all(), []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`}) // only the usable message
	is.Equal(lines(&out), []string{
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: invalid JSON"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: not a JSON-RPC message"}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"message too large (limit 100 bytes)"}}`,
	})
}

// A bad line is logged with its length and an escaped excerpt of its
// start (at most frame.LineHeadSize bytes), so that whoever reads the log
// sees what the peer wrote.
func TestStdioLogsBadLinesWithAnExcerpt(t *testing.T) {
	is := is.New(t)
	logs := &transporttest.SyncBuffer{}
	long := "Debugger listening on ws://127.0.0.1:9229/" + strings.Repeat("0", 200)
	in := long + "\n" + `{"jsonrpc":"2.0","id":"a\u0000","result":` + "\x07\n" + `{"jsonrpc":"1.0","id":3}` + "\n"
	s := NewStdio(strings.NewReader(in), &transporttest.SyncBuffer{}, StdioConfig{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	is.NoErr(s.Serve(t.Context(), &handled{}))
	got := lines(logs)
	is.Equal(len(got), 3)
	is.True(strings.Contains(got[0], `msg="bad line" line=1 err="invalid JSON" bytes=`+strconv.Itoa(len(long))+` excerpt="Debugger listening on ws://127.0.0.1:9229/000`))
	is.True(strings.HasSuffix(got[0], `000…"`))                                                                         // cut, and says so
	is.True(strings.Contains(got[1], `bytes=42 excerpt="{\"jsonrpc\":\"2.0\",\"id\":\"a\\\\u0000\",\"result\":\\x07"`)) // a control byte escaped
	is.True(strings.Contains(got[2], `err="not a JSON-RPC message" bytes=24 excerpt="{\"jsonrpc\":\"1.0\",\"id\":3}"`))
}

// A message whose envelope is invalid is answered -32600 with the reason,
// under its id when it is a request whose id is fine, else under null, and
// is not handed over. A response-shaped one is answered under null too: its
// id is the peer's, not one the sender waits on.
func TestStdioAnswersInvalidEnvelopes(t *testing.T) {
	is := is.New(t)
	in := `{"jsonrpc":"2.0","id":true,"method":"ping"}` + "\n" +
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}` + "\n" +
		`{"jsonrpc":"2.0","id":null,"method":"ping"}` + "\n" +
		`{"id":5,"method":"ping"}` + "\n" +
		`{"jsonrpc":"1.0","id":"x","method":"ping"}` + "\n" +
		`{"jsonrpc":"2.0","id":6,"method":"tools/list","params":[]}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":null}` + "\n" +
		`{"id":7,"result":{}}` + "\n" +
		`{"jsonrpc":"2.0","id":8,"result":{},"error":{"code":1,"message":""}}` + "\n" +
		`{"jsonrpc":"2.0","id":9,"method":"ping"}` + "\n"
	var out transporttest.SyncBuffer
	h := &handled{}
	s := NewStdio(strings.NewReader(in), &out, StdioConfig{MaxInFlight: 4})
	is.NoErr(s.Serve(t.Context(), h))
	is.Equal(h.all(), []string{`{"jsonrpc":"2.0","id":9,"method":"ping"}`}) // only the valid message
	is.Equal(lines(&out), []string{
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: the id of a request must be a string or an integer"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: the id of a request must be a string or an integer"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: the id of a request must be a string or an integer"}}`,
		`{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"invalid request: jsonrpc must be \"2.0\""}}`,
		`{"jsonrpc":"2.0","id":"x","error":{"code":-32600,"message":"invalid request: jsonrpc must be \"2.0\""}}`,
		`{"jsonrpc":"2.0","id":6,"error":{"code":-32600,"message":"invalid request: params must be an object"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: params must be an object"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: jsonrpc must be \"2.0\""}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: a response has a result or an error, not both"}}`,
	})
}

// A line that is not valid UTF-8 is handed over with each bad byte turned
// into U+FFFD: whatever is written on, on stdout or to a child, is JSON.
func TestStdioReplacesInvalidUTF8(t *testing.T) {
	is := is.New(t)
	var out transporttest.SyncBuffer
	h := &handled{}
	s := NewStdio(strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{"t":"a`+"\xff"+`b"}}`+"\n"), &out, StdioConfig{})
	is.NoErr(s.Serve(t.Context(), h))
	is.Equal(h.all(), []string{`{"jsonrpc":"2.0","id":1,"result":{"t":"a` + "\uFFFD" + `b"}}`})
}

// A BadLine hook replaces the default answer; JSON that is not JSON-RPC
// reaches it as frame.ErrNotJSONRPC.
func TestStdioBadLineHook(t *testing.T) {
	is := is.New(t)
	var out transporttest.SyncBuffer
	var bad []string
	s := NewStdio(strings.NewReader("[1\n7\n"), &out, StdioConfig{BadLine: func(_ context.Context, le *frame.LineError) {
		bad = append(bad, le.Error())
	}})
	is.NoErr(s.Serve(t.Context(), &handled{}))
	is.Equal(bad, []string{"line 1: invalid JSON", "line 2: not a JSON-RPC message"})
	is.Equal(lines(&out), []string{""}) // nothing written
}

// A request whose handler fails is answered through Failed; a batch gets
// one batch of answers; a zero answer means none; a failed notification is
// not answered.
func TestStdioAnswersFailedRequests(t *testing.T) {
	is := is.New(t)
	in := `{"jsonrpc":"2.0","id":1,"method":"a"}` + "\n" +
		`{"jsonrpc":"2.0","method":"n"}` + "\n" +
		`[{"jsonrpc":"2.0","id":2,"method":"b"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"x","method":"cancelled"}]` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"cancelled"}` + "\n"
	boom := errors.New("boom")
	var out transporttest.SyncBuffer
	s := NewStdio(strings.NewReader(in), &out, StdioConfig{
		MaxInFlight: 1, // one at a time: the answers come in input order
		Failed: func(req frame.Message, err error) frame.Message {
			if req.Method() == "cancelled" {
				return frame.Message{}
			}
			return frame.ErrorResponse(req.ID(), -1, err.Error())
		},
	})
	is.NoErr(s.Serve(t.Context(), &handled{h: func(context.Context, frame.Message) error { return boom }}))
	is.Equal(lines(&out), []string{
		`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"boom"}}`,
		`[{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"boom"}}]`,
	})
}

// Without MaxInFlight, every message is handed over in order, each once
// the one before it was handled.
func TestStdioOrdered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		in := `{"jsonrpc":"2.0","id":1,"method":"slow"}` + "\n" +
			`{"jsonrpc":"2.0","method":"n"}` + "\n" +
			`{"jsonrpc":"2.0","id":2,"result":{}}` + "\n"
		h := &handled{h: func(_ context.Context, m frame.Message) error {
			if m.Method() == "slow" {
				time.Sleep(time.Second)
			}
			return nil
		}}
		s := NewStdio(strings.NewReader(in), &transporttest.SyncBuffer{}, StdioConfig{})
		is.NoErr(s.Serve(t.Context(), h))
		is.Equal(len(h.all()), 3)
		is.Equal(h.all()[1], `{"jsonrpc":"2.0","method":"n"}`) // after the slow request
	})
}

// With MaxInFlight, requests run side by side, and each waits for the
// notifications read before it.
func TestStdioRequestsRunSideBySide(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		in := `{"jsonrpc":"2.0","method":"first"}` + "\n" +
			`{"jsonrpc":"2.0","id":1,"method":"slow"}` + "\n" +
			`{"jsonrpc":"2.0","id":2,"method":"quick"}` + "\n"
		var mu sync.Mutex
		var done []string
		h := &handled{h: func(_ context.Context, m frame.Message) error {
			switch m.Method() {
			case "first":
				time.Sleep(time.Second) // the requests wait for it
			case "slow":
				time.Sleep(time.Minute)
			}
			mu.Lock()
			done = append(done, m.Method())
			mu.Unlock()
			return nil
		}}
		start := time.Now()
		s := NewStdio(strings.NewReader(in), &transporttest.SyncBuffer{}, StdioConfig{MaxInFlight: 8, DrainTimeout: time.Hour})
		is.NoErr(s.Serve(t.Context(), h))
		is.Equal(done, []string{"first", "quick", "slow"}) // quick did not wait for slow
		is.Equal(time.Since(start), time.Minute+time.Second)
	})
}

// Once the input ends, what is in flight gets DrainTimeout; then its
// context is cancelled with frame.ErrClosed, and the request is answered
// with that error.
func TestStdioDrainTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		var out transporttest.SyncBuffer
		var cause error
		h := &handled{h: func(ctx context.Context, _ frame.Message) error {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return ctx.Err()
		}}
		s := NewStdio(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"stuck"}`+"\n"), &out,
			StdioConfig{MaxInFlight: 8, DrainTimeout: 5 * time.Second})
		start := time.Now()
		is.NoErr(s.Serve(t.Context(), h))
		is.Equal(time.Since(start), 5*time.Second)
		is.True(errors.Is(cause, frame.ErrClosed))
		is.Equal(lines(&out), []string{`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"gateway closed"}}`})
	})
}

// Draining is called when the input ends, while a request is in flight:
// it ends what the request waits for (here, as the relay's listens do),
// and the drain is over at once, not at its timeout. A hook that does not
// return by itself is ended by the drain's timeout, and Serve waits for
// it.
func TestStdioDraining(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		release := make(chan struct{})
		h := &handled{h: func(ctx context.Context, _ frame.Message) error {
			<-release
			return nil
		}}
		s := NewStdio(strings.NewReader(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen"}`+"\n"), &transporttest.SyncBuffer{},
			StdioConfig{MaxInFlight: 8, DrainTimeout: time.Hour, Draining: func(context.Context) { close(release) }})
		start := time.Now()
		is.NoErr(s.Serve(t.Context(), h))
		is.Equal(time.Since(start), time.Duration(0)) // no wait for the timeout

		var cause error
		s = NewStdio(strings.NewReader(""), &transporttest.SyncBuffer{}, StdioConfig{DrainTimeout: 5 * time.Second,
			Draining: func(ctx context.Context) {
				<-ctx.Done()
				cause = context.Cause(ctx)
			}})
		start = time.Now()
		is.NoErr(s.Serve(t.Context(), h))
		is.Equal(time.Since(start), 5*time.Second) // the hook held the drain to its bound
		is.True(errors.Is(cause, frame.ErrClosed))
	})
}

// Handle writes one line per message.
func TestStdioHandleWritesLines(t *testing.T) {
	is := is.New(t)
	var out transporttest.SyncBuffer
	s := NewStdio(nil, &out, StdioConfig{})
	is.NoErr(s.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","method":"a"}`)))
	is.NoErr(s.Handle(t.Context(), frame.MustParse("{\n\"jsonrpc\":\"2.0\",\"method\":\"b\"}")))
	is.True(s.Handle(t.Context(), frame.Message{}) != nil) // no bytes: refused
	is.Equal(lines(&out), []string{`{"jsonrpc":"2.0","method":"a"}`, `{"jsonrpc":"2.0","method":"b"}`})
	is.NoErr(s.Serve(t.Context(), &handled{})) // no input: nothing to serve
}
