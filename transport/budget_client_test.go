package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// callReq is a tools/call request with a raw id.
func callReq(id, tool string) frame.Message {
	return frame.MustParse(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `"}}`)
}

// isOverBudget reports whether err is the failure of a request whose
// answer the budget could not take.
func isOverBudget(err error) bool {
	var se *frame.SendError
	return errors.As(err, &se) && se.Sent && errors.Is(err, frame.ErrOverBudget)
}

// Ten calls at once, each answered with an event of 300 KiB that never
// ends, against a budget of 1 MiB: each event counts 512 KiB once read,
// so at most two are held and at least eight calls fail with the
// over-budget error, while a call with a small answer goes through. When
// the server ends the streams mid-event, the others fail too, and nothing
// stays counted.
func TestStreamableBudgetAcrossConcurrentCalls(t *testing.T) {
	is := is.New(t)
	release := make(chan struct{})
	big := strings.Repeat("x", 300<<10)
	c, sink := streamable(t, func(w http.ResponseWriter, r *http.Request) {
		m := frame.MustParse(readAll(r.Body))
		if m.Get("params.name").String() == "small" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(frame.ResultResponse(m.ID(), []byte(`{}`)).Bytes())
			return
		}
		sseHeaders(w)
		flushWrite(w, `data: {"jsonrpc":"2.0","id":`+string(m.ID())+`,"result":{"text":"`+big)
		select { // the event never ends
		case <-release:
		case <-r.Context().Done():
		}
	})
	c.Budget = frame.NewBudget(1 << 20)

	const calls = 10
	results := make(chan error, calls)
	for i := range calls {
		go func() { results <- c.Handle(context.Background(), callReq(fmt.Sprint(i), "big")) }()
	}
	for range calls - 2 {
		err := <-results
		is.True(isOverBudget(err))
		is.True(strings.Contains(err.Error(), "1 MiB"))
	}
	is.NoErr(c.Handle(context.Background(), callReq(`"small"`, "small"))) // others are not affected
	is.Equal(sink.lines(), []string{`{"jsonrpc":"2.0","id":"small","result":{}}`})
	close(release)
	for range 2 {
		err := <-results
		is.True(isOverBudget(err) || errors.Is(err, frame.ErrStreamEnded))
	}
	is.Equal(c.Budget.Used(), int64(0))
}

// readAll returns a body as a string.
func readAll(r io.Reader) string {
	b, _ := io.ReadAll(r)
	return string(b)
}

// A JSON answer the budget cannot take fails its call, with a known
// length or without; nothing stays counted.
func TestStreamableBudgetJSONBody(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprint("chunked=", chunked), func(t *testing.T) {
			is := is.New(t)
			body := `{"jsonrpc":"2.0","id":1,"result":{"text":"` + strings.Repeat("x", 300<<10) + `"}}`
			c, _ := streamable(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if !chunked {
					w.Header().Set("Content-Length", fmt.Sprint(len(body)))
				}
				_, _ = io.WriteString(w, body)
			})
			c.Budget = frame.NewBudget(256 << 10)
			is.True(isOverBudget(c.Handle(context.Background(), callReq("1", "big"))))
			is.Equal(c.Budget.Used(), int64(0))
			c.Budget = frame.NewBudget(1 << 20)
			is.NoErr(c.Handle(context.Background(), callReq("1", "big")))
			is.Equal(c.Budget.Used(), int64(0))
		})
	}
}

// A stream given up mid-event — cancelled, gone idle, ended by the server
// — leaves nothing counted.
func TestStreamableBudgetReleasedWhenAStreamIsGivenUp(t *testing.T) {
	written := make(chan struct{}, 1)
	end := make(chan struct{})
	c, _ := streamable(t, func(w http.ResponseWriter, r *http.Request) {
		m := frame.MustParse(readAll(r.Body))
		sseHeaders(w)
		flushWrite(w, `data: {"jsonrpc":"2.0","id":`+string(m.ID())+`,"result":{"text":"`+strings.Repeat("x", 200<<10))
		written <- struct{}{}
		if m.Get("params.name").String() == "eof" {
			return
		}
		select {
		case <-end:
		case <-r.Context().Done():
		}
	})
	defer close(end)
	c.Budget = frame.NewBudget(1 << 20)

	t.Run("cancelled", func(t *testing.T) {
		is := is.New(t)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Handle(ctx, callReq("1", "hang")) }()
		<-written
		cancel()
		is.True(errors.Is(<-done, context.Canceled))
		is.Equal(c.Budget.Used(), int64(0))
	})
	t.Run("idle", func(t *testing.T) {
		is := is.New(t)
		c := *c
		c.IdleTimeout = 50 * time.Millisecond // the transport's own timer
		err := c.Handle(context.Background(), callReq("2", "hang"))
		<-written
		var idle *IdleTimeoutError
		is.True(errors.As(err, &idle))
		is.Equal(c.Budget.Used(), int64(0))
	})
	t.Run("EOF mid-event", func(t *testing.T) {
		is := is.New(t)
		err := c.Handle(context.Background(), callReq("3", "eof"))
		<-written
		is.True(errors.Is(err, frame.ErrStreamEnded))
		is.Equal(c.Budget.Used(), int64(0))
	})
}

// An event of the GET stream the budget cannot take is skipped, with a
// warning that says what to do; the stream goes on, and the messages after
// it are delivered.
func TestListenSkipsAMessageOverBudget(t *testing.T) {
	is := is.New(t)
	c, sink := streamable(t, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		flushWrite(w, "id: e1\n"+`data: {"jsonrpc":"2.0","id":"srv-1","method":"sampling/createMessage","params":{"text":"`+strings.Repeat("x", 400<<10)+`"}}`+"\n\n")
		flushWrite(w, "id: e2\n"+`data: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":"after"}}`+"\n\n")
	})
	logs := &transporttest.SyncBuffer{}
	c.Logger = debugLogger(logs)
	c.Budget = frame.NewBudget(256 << 10)
	c.Remedy = func(err error) string {
		if errors.Is(err, frame.ErrOverBudget) {
			return "raise --max-buffered"
		}
		return ""
	}
	last, err := c.Listen(context.Background(), nil, nil)
	is.NoErr(err)
	is.Equal(last, "e2")
	is.Equal(sink.lines(), []string{`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"after"}}`})
	is.True(strings.Contains(logs.String(), `level=WARN msg="skipped a message of the GET stream`))
	is.True(strings.Contains(logs.String(), "raise --max-buffered"))
	is.True(strings.Contains(logs.String(), `id="\"srv-1\""`))
	is.Equal(c.Budget.Used(), int64(0))
}

// On HTTP+SSE, an answer the budget cannot take fails its request; the
// stream, and the other requests on it, go on.
func TestSSEClientBudget(t *testing.T) {
	is := is.New(t)
	ls := newSSEServer(t)
	c, sink := ls.newClient()
	c.Budget = frame.NewBudget(256 << 10)
	stop := runSSE(t, c)
	conn := ls.conn(t)
	conn.endpoint("/message")
	<-c.Ready()

	results := map[string]chan error{"1": make(chan error, 1), "2": make(chan error, 1)}
	for id, ch := range results {
		go func() { ch <- c.Handle(context.Background(), callReq(id, "t")) }()
	}
	ls.post(t)
	ls.post(t)
	conn.message(`{"jsonrpc":"2.0","id":1,"result":{"text":"` + strings.Repeat("x", 400<<10) + `"}}`)
	conn.message(`{"jsonrpc":"2.0","id":2,"result":{}}`)
	is.True(isOverBudget(<-results["1"]))
	is.NoErr(<-results["2"])
	is.Equal(len(sink.lines()), 1)
	select {
	case <-ls.conns:
		t.Fatal("the stream was opened again")
	default:
	}
	is.NoErr(stop())
	is.Equal(c.Budget.Used(), int64(0))
}

// The budget's error says what happened, with the limit.
func TestOverBudgetError(t *testing.T) {
	is := is.New(t)
	err := overBudgetError(frame.NewBudget(256 << 20))
	is.True(errors.Is(err, frame.ErrOverBudget))
	is.True(strings.Contains(err.Error(), "256 MiB"))
	is.Equal(sizeText(3<<29), "1.5 GiB")
	is.Equal(sizeText(100), "100 B")
}

// On HTTP+SSE, a server's request the budget cannot take is skipped, with
// a warning, even when its id is one of ours in flight: that request
// still gets its own answer.
func TestSSEClientBudgetSkipsAServersRequest(t *testing.T) {
	is := is.New(t)
	ls := newSSEServer(t)
	c, sink := ls.newClient()
	logs := &transporttest.SyncBuffer{}
	c.Logger = debugLogger(logs)
	c.Budget = frame.NewBudget(256 << 10)
	stop := runSSE(t, c)
	conn := ls.conn(t)
	conn.endpoint("/message")
	<-c.Ready()

	result := make(chan error, 1)
	go func() { result <- c.Handle(context.Background(), callReq("1", "t")) }()
	ls.post(t)
	conn.message(`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"text":"` + strings.Repeat("x", 400<<10) + `"}}`)
	conn.message(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	is.NoErr(<-result)
	is.Equal(sink.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":{}}`})
	is.True(strings.Contains(logs.String(), `level=WARN msg="skipped a message of the SSE stream`))
	is.NoErr(stop())
	is.Equal(c.Budget.Used(), int64(0))
}

// A POST's stream resumed with a GET that brings an answer the budget
// cannot take fails the call with the over-budget error, not as a stream
// that ended.
func TestStreamableBudgetOnAResumedStream(t *testing.T) {
	is := is.New(t)
	c, _ := streamable(t, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		if r.Method == http.MethodPost {
			flushWrite(w, "id: p-1\nretry: 1\ndata:\n\n") // then the stream ends: resume it
			return
		}
		flushWrite(w, "id: p-2\n"+`data: {"jsonrpc":"2.0","id":1,"result":{"text":"`+strings.Repeat("x", 400<<10)+`"}}`+"\n\n")
	})
	c.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	c.Budget = frame.NewBudget(256 << 10)
	err := c.Handle(context.Background(), callReq("1", "t"))
	is.True(isOverBudget(err))
	is.True(!errors.Is(err, frame.ErrStreamEnded))
	is.Equal(c.Budget.Used(), int64(0))
}
