package transport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	pingReq  = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	pingResp = `{"jsonrpc":"2.0","id":1,"result":{}}`
)

// streamable returns a client for a loopback server running h. The server
// reads each request body before h runs, so that h sees r.Context() end when
// the client hangs up.
func streamable(t testing.TB, h http.HandlerFunc) (*StreamableClient, *collector) {
	t.Helper()
	srv, client := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		h(w, r)
	}))
	sink := newCollector()
	return &StreamableClient{URL: srv.URL + "/mcp", Client: client, ToClient: sink}, sink
}

func sseHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

func TestStreamableJSON(t *testing.T) {
	is := is.New(t)
	c, sink := streamable(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s-1")
		_, _ = io.WriteString(w, "  {\"jsonrpc\":\"2.0\", \"id\":1,\"result\":{\"n\":1.50}}\n")
	})
	is.NoErr(c.Handle(context.Background(), frame.MustParse(pingReq)))
	got := sink.all()
	is.Equal(len(got), 1)
	is.Equal(got[0].String(), `{"jsonrpc":"2.0", "id":1,"result":{"n":1.50}}`) // bytes kept, only trimmed
	is.Equal(got[0].Header().Get("Mcp-Session-Id"), "s-1")                     // response headers attached
}

func TestStreamableSSEOrder(t *testing.T) {
	is := is.New(t)
	gone := make(chan struct{})
	c, sink := streamable(t, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		flushWrite(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"n\":1}}\n\n")
		flushWrite(w, ": keepalive\n\n")
		flushWrite(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"n\":2}}\n\n")
		flushWrite(w, "event: message\ndata: not json at all\n\n")
		flushWrite(w, "event: other\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n")
		flushWrite(w, "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\r\n\r\n") // another id
		flushWrite(w, "event: message\ndata: "+pingResp+"\n\n")
		// The client stops reading at its response and hangs up, even though
		// the stream stays open.
		<-r.Context().Done()
		close(gone)
	})
	is.NoErr(c.Handle(context.Background(), frame.MustParse(pingReq)))
	is.Equal(sink.lines(), []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"n":1}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"n":2}}`,
		`{"jsonrpc":"2.0","id":2,"result":{}}`,
		pingResp,
	})
	for _, m := range sink.all() {
		is.Equal(m.Header().Get("Content-Type"), "text/event-stream")
	}
	waitFor(t, gone, "server to see the client hang up")
}

// waitFor fails the test if ch is not closed soon; it guards against a hang
// and is not used for ordering. The bound is generous: a loaded machine
// running the race detector moves 25 MiB slowly.
func waitFor(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestStreamableMultilineData(t *testing.T) {
	is := is.New(t)
	c, sink := streamable(t, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		flushWrite(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\ndata:   \"id\":1,\ndata: \"result\":{\"text\":\"a b\"}}\n\n")
	})
	is.NoErr(c.Handle(context.Background(), frame.MustParse(pingReq)))
	is.Equal(sink.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":{"text":"a b"}}`})
}

func TestStreamableNotificationAndEmptyAnswers(t *testing.T) {
	for _, code := range []int{http.StatusAccepted, http.StatusNoContent, http.StatusOK} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			is := is.New(t)
			c, sink := streamable(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(code)
			})
			is.NoErr(c.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)))
			err := c.Handle(context.Background(), frame.MustParse(pingReq))
			is.True(errors.Is(err, frame.ErrAnswerElsewhere)) // a request without its answer: reported
			is.Equal(len(sink.lines()), 0)
		})
	}
}

func TestStreamableBatchResponse(t *testing.T) {
	batch := `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":"2","error":{"code":1,"message":"m"}}]`
	c, sink := streamable(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, batch)
	})
	t.Run("answers", func(t *testing.T) {
		is := is.New(t)
		is.NoErr(c.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":"2","method":"ping"}`)))
		is.Equal(sink.lines(), []string{batch}) // one message, the array as it came
	})
	t.Run("does not answer", func(t *testing.T) {
		is := is.New(t)
		err := c.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)) // 2, not "2"
		var se *frame.SendError
		is.True(errors.As(err, &se))
		is.True(se.Sent)
		is.True(errors.Is(err, frame.ErrStreamEnded))
	})
}

func TestStreamableInvalidJSONResponse(t *testing.T) {
	for _, tt := range []struct{ ct, body, msg string }{
		{"text/html", "<html><body>Login</body></html>", "invalid JSON response (Content-Type: text/html)"},
		{"application/json", `{"jsonrpc":"2.0","id":1,"result":`, "invalid JSON response (Content-Type: application/json)"},
		{"application/json", `"just a string"`, "invalid JSON response (Content-Type: application/json)"},
		{"", "garbage", "invalid JSON response (Content-Type: none)"},
	} {
		t.Run(tt.body, func(t *testing.T) {
			is := is.New(t)
			c, sink := streamable(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = []string{tt.ct}
				_, _ = io.WriteString(w, tt.body)
			})
			err := c.Handle(context.Background(), frame.MustParse(pingReq))
			var se *frame.SendError
			is.True(errors.As(err, &se))
			is.True(se.Sent)
			is.Equal(err.Error(), tt.msg)
			is.Equal(len(sink.lines()), 0) // nothing delivered
		})
	}
}

// A response whose envelope is invalid is not dropped, which would leave its
// request waiting: the request gets -32603 with the reason instead, on an
// event stream and in a JSON body alike. Other invalid messages are
// skipped.
func TestStreamableInvalidResponseStandsIn(t *testing.T) {
	const want = `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"invalid response from the server: result must be an object"}}`
	t.Run("event stream", func(t *testing.T) {
		is := is.New(t)
		c, sink := streamable(t, func(w http.ResponseWriter, r *http.Request) {
			sseHeaders(w)
			flushWrite(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":[1]}\n\n") // skipped
			flushWrite(w, "data: {\"jsonrpc\":\"2.0\",\"id\":true,\"result\":{}}\n\n")                            // no id to answer: skipped
			flushWrite(w, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}\n\n")
		})
		is.NoErr(c.Handle(context.Background(), frame.MustParse(pingReq))) // answered
		is.Equal(sink.lines(), []string{want})
	})
	t.Run("JSON body", func(t *testing.T) {
		is := is.New(t)
		c, sink := streamable(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":null}`)
		})
		is.NoErr(c.Handle(context.Background(), frame.MustParse(pingReq)))
		is.Equal(sink.lines(), []string{want})
	})
}

// Invalid UTF-8 in what the server sends reaches the sink as U+FFFD, in an
// event and in a JSON body alike.
func TestStreamableReplacesInvalidUTF8(t *testing.T) {
	const want = `{"jsonrpc":"2.0","id":1,"result":{"t":"` + "\uFFFD\uFFFD" + `"}}`
	for _, sse := range []bool{true, false} {
		t.Run(strconv.FormatBool(sse), func(t *testing.T) {
			is := is.New(t)
			c, sink := streamable(t, func(w http.ResponseWriter, r *http.Request) {
				resp := `{"jsonrpc":"2.0","id":1,"result":{"t":"` + "\xc0\xaf" + `"}}`
				if sse {
					sseHeaders(w)
					flushWrite(w, "data: "+resp+"\n\n")
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, resp)
			})
			is.NoErr(c.Handle(context.Background(), frame.MustParse(pingReq)))
			is.Equal(sink.lines(), []string{want})
		})
	}
}

func TestStreamableStreamEndsBeforeResponse(t *testing.T) {
	is := is.New(t)
	c, sink := streamable(t, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		flushWrite(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n")
		// go-sdk style: an unframed error after the stream started is not an event.
		flushWrite(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`+"\n")
	})
	err := c.Handle(context.Background(), frame.MustParse(pingReq))
	var se *frame.SendError
	is.True(errors.As(err, &se))
	is.True(se.Sent)
	is.True(errors.Is(err, frame.ErrStreamEnded))
	is.Equal(len(sink.lines()), 1) // the notification arrived
}

func TestStreamableServerDiesMidStream(t *testing.T) {
	is := is.New(t)
	c, _ := streamable(t, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		flushWrite(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n")
		panic(http.ErrAbortHandler) // drop the connection mid-response
	})
	err := c.Handle(context.Background(), frame.MustParse(pingReq))
	var se *frame.SendError
	is.True(errors.As(err, &se))
	is.True(se.Sent)
	is.True(!errors.Is(err, frame.ErrStreamEnded)) // broken, not ended
}

func TestStreamableConnectionRefused(t *testing.T) {
	is := is.New(t)
	c := &StreamableClient{URL: "http://" + deadAddr(t) + "/mcp", Client: NewHTTPClient(HTTPOptions{})}
	err := c.Handle(context.Background(), frame.MustParse(pingReq))
	var se *frame.SendError
	is.True(errors.As(err, &se))
	is.True(!se.Sent) // certainly never reached a server
	is.True(strings.Contains(err.Error(), "refused"))
}

func TestStreamableStatusError(t *testing.T) {
	big := strings.Repeat("e", 200<<10)
	for _, tt := range []struct {
		code int
		body string
	}{
		{http.StatusServiceUnavailable, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"busy"}}`},
		{http.StatusTooManyRequests, "slow down"},
		{http.StatusNotFound, big},
		{http.StatusMovedPermanently, ""},
	} {
		t.Run(strconv.Itoa(tt.code), func(t *testing.T) {
			is := is.New(t)
			c, sink := streamable(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "7")
				w.WriteHeader(tt.code)
				_, _ = io.WriteString(w, tt.body)
			})
			err := c.Handle(context.Background(), frame.MustParse(pingReq))
			var st *frame.StatusError
			is.True(errors.As(err, &st))
			is.Equal(st.Code, tt.code)
			is.Equal(st.Header.Get("Retry-After"), "7")
			want := tt.body
			if len(want) > 64<<10 {
				want = want[:64<<10]
			}
			is.Equal(string(st.Body), want)
			is.Equal(len(sink.lines()), 0)
		})
	}
}

func TestStreamableTooLarge(t *testing.T) {
	huge := `{"jsonrpc":"2.0","id":1,"result":{"x":"` + strings.Repeat("a", 300) + `"}}`
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprint("sse=", sse), func(t *testing.T) {
			is := is.New(t)
			c, sink := streamable(t, func(w http.ResponseWriter, r *http.Request) {
				if sse {
					sseHeaders(w)
					flushWrite(w, "data: "+huge+"\n\n")
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, huge)
			})
			c.MaxMessageSize = 200
			err := c.Handle(context.Background(), frame.MustParse(pingReq))
			var se *frame.SendError
			is.True(errors.As(err, &se))
			is.True(se.Sent)
			is.True(errors.Is(err, frame.ErrTooLarge))
			is.Equal(len(sink.lines()), 0)
		})
	}
}

func TestStreamableIdleTimeout(t *testing.T) {
	is := is.New(t)
	gone := make(chan struct{})
	c, sink := streamable(t, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		flushWrite(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n")
		<-r.Context().Done() // silent until the client gives up
		close(gone)
	})
	c.IdleTimeout = 50 * time.Millisecond // the behaviour under test
	err := c.Handle(context.Background(), frame.MustParse(pingReq))
	var se *frame.SendError
	is.True(errors.As(err, &se))
	is.True(se.Sent)
	var idle *IdleTimeoutError
	is.True(errors.As(err, &idle))
	is.Equal(err.Error(), "no data from the server for 0.05s")
	is.Equal(len(sink.lines()), 1)
	waitFor(t, gone, "server to see the hang-up")
}

func TestStreamableIdleTimeoutIgnoresSlowConsumer(t *testing.T) {
	is := is.New(t)
	c, _ := streamable(t, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		flushWrite(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n"+"data: "+pingResp+"\n\n")
	})
	c.IdleTimeout = 20 * time.Millisecond
	slow := make(chan struct{})
	c.ToClient = SinkFunc(func(ctx context.Context, m frame.Message) error {
		if m.Kind() == frame.Notification {
			// Block delivery well past the idle timeout; only server
			// silence counts.
			timer := time.NewTimer(100 * time.Millisecond)
			defer timer.Stop()
			select {
			case <-timer.C:
			case <-slow:
			}
		}
		return nil
	})
	is.NoErr(c.Handle(context.Background(), frame.MustParse(pingReq)))
}

func TestStreamableCancel(t *testing.T) {
	for _, phase := range []string{"before headers", "mid body"} {
		t.Run(phase, func(t *testing.T) {
			is := is.New(t)
			started, gone := make(chan struct{}), make(chan struct{})
			c, _ := streamable(t, func(w http.ResponseWriter, r *http.Request) {
				if phase == "mid body" {
					sseHeaders(w)
				}
				close(started)
				<-r.Context().Done()
				close(gone)
			})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- c.Handle(ctx, frame.MustParse(pingReq)) }()
			waitFor(t, started, "request to arrive")
			cancel()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Handle did not return after cancel")
			}
			is.True(errors.Is(err, context.Canceled))
			waitFor(t, gone, "server to observe the disconnect")
		})
	}
}

func TestStreamableHeaders(t *testing.T) {
	type seen struct {
		h    http.Header
		body string
	}
	got := make(chan seen, 1)
	c, _ := streamable(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Header.Clone(), string(b)}
		w.WriteHeader(http.StatusAccepted)
	})
	body := `{"jsonrpc":"2.0",  "method":"notifications/x","params":{"n":1.50,"n":2}}`
	msg := frame.MustParse(body)

	t.Run("defaults", func(t *testing.T) {
		is := is.New(t)
		is.NoErr(c.Handle(context.Background(), msg))
		s := <-got
		is.Equal(s.h.Get("Content-Type"), "application/json")
		is.Equal(s.h.Get("Accept"), "application/json, text/event-stream")
		is.Equal(s.body, body) // byte-identical
	})
	t.Run("precedence", func(t *testing.T) {
		is := is.New(t)
		c.Header = http.Header{
			"Accept":        {"application/json"},
			"Authorization": {"Bearer static"},
			"X-Both":        {"static"},
			"x-lower":       {"kept"},
		}
		defer func() { c.Header = nil }()
		m := msg.WithHeader("X-Both", "message").WithHeader("Mcp-Session-Id", "s-9").WithHeader("MCP-Protocol-Version", "2025-11-25")
		is.NoErr(c.Handle(context.Background(), m))
		s := <-got
		is.Equal(s.h.Get("Content-Type"), "application/json")
		is.Equal(s.h.Values("Accept"), []string{"application/json"}) // static replaces the default
		is.Equal(s.h.Get("Authorization"), "Bearer static")
		is.Equal(s.h.Values("X-Both"), []string{"message"}) // the message's side channel wins
		is.Equal(s.h.Get("X-Lower"), "kept")
		is.Equal(s.h.Get("Mcp-Session-Id"), "s-9")
		is.Equal(s.h.Get("Mcp-Protocol-Version"), "2025-11-25")
		is.Equal(s.body, body)
	})
}

func TestStreamableLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("50 MiB bodies")
	}
	const size = 50 << 20
	blob := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	var resp bytes.Buffer
	resp.WriteString(`{"jsonrpc":"2.0","id":1,"result":{"blob":"`)
	resp.Write(blob)
	resp.WriteString(`"}}`)
	large := resp.Bytes()
	want := sha256.Sum256(large)

	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprint("sse=", sse), func(t *testing.T) {
			is := is.New(t)
			halfway := make(chan struct{})
			smallDone := make(chan struct{})
			c, _ := streamable(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				if string(b) != pingReq {
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":2,"result":{}}`)
					return
				}
				half := len(large) / 2
				if sse {
					sseHeaders(w)
					flushWrite(w, "event: message\ndata: ")
				} else {
					w.Header().Set("Content-Type", "application/json")
					w.Header().Set("Content-Length", strconv.Itoa(len(large)))
				}
				flushWrite(w, string(large[:half]))
				close(halfway)
				<-smallDone // the small request completes while this one is mid-body
				_, _ = w.Write(large[half:])
				if sse {
					_, _ = io.WriteString(w, "\n\n")
				}
			})
			// Registered after the server's, this runs first: a test that
			// fails half-way still lets the handler end, so the server can close.
			var release sync.Once
			t.Cleanup(func() { release.Do(func() { close(smallDone) }) })
			var got [32]byte
			var gotLen int
			c.ToClient = SinkFunc(func(ctx context.Context, m frame.Message) error {
				if m.ID() == "1" {
					got, gotLen = sha256.Sum256(m.Bytes()), m.Len()
				}
				return nil
			})
			done := make(chan error, 1)
			go func() { done <- c.Handle(context.Background(), frame.MustParse(pingReq)) }()
			waitFor(t, halfway, "large response to start")
			is.NoErr(c.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)))
			release.Do(func() { close(smallDone) })
			is.NoErr(<-done)
			is.Equal(gotLen, len(large))
			is.Equal(got, want) // delivered intact
		})
	}
}

func TestListen(t *testing.T) {
	is := is.New(t)
	seen := make(chan http.Header, 1)
	c, sink := streamable(t, func(w http.ResponseWriter, r *http.Request) {
		is.Equal(r.Method, http.MethodGet)
		seen <- r.Header.Clone()
		w.Header().Set("Mcp-Session-Id", "s-1")
		sseHeaders(w)
		flushWrite(w, "id: 7\ndata: \n\n") // priming event: an id, no data
		flushWrite(w, ": keepalive\n\n")
		flushWrite(w, "id: 8\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
		flushWrite(w, "id: 9\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"roots/list\"}\n\n")
	})
	c.Header = http.Header{"Authorization": {"Bearer t"}}
	deliveredWhenOpened := -1
	opened := func() { deliveredWhenOpened = len(sink.all()) }
	last, err := c.Listen(context.Background(), http.Header{"Mcp-Session-Id": {"s-1"}, "Last-Event-Id": {"3"}}, opened)
	is.NoErr(err)                    // a clean end of stream
	is.Equal(deliveredWhenOpened, 0) // opened was called, before anything was delivered
	is.Equal(last, "9")
	h := <-seen
	is.Equal(h.Get("Accept"), "text/event-stream")
	is.Equal(h.Get("Authorization"), "Bearer t")
	is.Equal(h.Get("Mcp-Session-Id"), "s-1")
	is.Equal(h.Get("Last-Event-ID"), "3")
	is.Equal(sink.lines(), []string{
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","id":"s1","method":"roots/list"}`,
	})
	is.Equal(sink.all()[0].Header().Get("Mcp-Session-Id"), "s-1")
}

func TestListenRefused(t *testing.T) {
	t.Run("405", func(t *testing.T) {
		is := is.New(t)
		c, _ := streamable(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", "POST")
			w.WriteHeader(http.StatusMethodNotAllowed)
		})
		opened := false
		last, err := c.Listen(context.Background(), http.Header{"Last-Event-Id": {"4"}}, func() { opened = true })
		var st *frame.StatusError
		is.True(errors.As(err, &st))
		is.Equal(st.Code, http.StatusMethodNotAllowed)
		is.Equal(last, "4") // nothing newer
		is.True(!opened)    // a refusal opens nothing
	})
	t.Run("not an event stream", func(t *testing.T) {
		is := is.New(t)
		c, _ := streamable(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, "{}")
		})
		_, err := c.Listen(context.Background(), nil, nil)
		var st *frame.StatusError
		is.True(errors.As(err, &st))
		is.Equal(st.Code, http.StatusOK)
		is.True(strings.Contains(err.Error(), "not an event stream"))
	})
}

func TestListenEnds(t *testing.T) {
	t.Run("ctx", func(t *testing.T) {
		is := is.New(t)
		c, sink := streamable(t, func(w http.ResponseWriter, r *http.Request) {
			sseHeaders(w)
			flushWrite(w, "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\n")
			<-r.Context().Done()
		})
		ctx, cancel := context.WithCancel(context.Background())
		c.ToClient = SinkFunc(func(ctx context.Context, m frame.Message) error {
			cancel() // stop listening after the first message
			return sink.Handle(ctx, m)
		})
		last, err := c.Listen(ctx, nil, nil)
		is.True(errors.Is(err, context.Canceled))
		is.Equal(last, "1")
	})
	t.Run("idle", func(t *testing.T) {
		is := is.New(t)
		c, _ := streamable(t, func(w http.ResponseWriter, r *http.Request) {
			sseHeaders(w)
			<-r.Context().Done()
		})
		c.StreamIdleTimeout = 30 * time.Millisecond
		_, err := c.Listen(context.Background(), nil, nil)
		var se *frame.SendError
		is.True(errors.As(err, &se))
		var idle *IdleTimeoutError
		is.True(errors.As(err, &idle))
	})
	t.Run("broken", func(t *testing.T) {
		is := is.New(t)
		c, _ := streamable(t, func(w http.ResponseWriter, r *http.Request) {
			sseHeaders(w)
			flushWrite(w, "id: 5\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\n")
			panic(http.ErrAbortHandler)
		})
		last, err := c.Listen(context.Background(), nil, nil)
		var se *frame.SendError
		is.True(errors.As(err, &se))
		is.True(se.Sent)
		is.Equal(last, "5")
	})
}

func TestEndSession(t *testing.T) {
	for _, tt := range []struct {
		code int
		ok   bool
	}{
		{http.StatusNoContent, true}, {http.StatusOK, true}, {http.StatusNotFound, true},
		{http.StatusMethodNotAllowed, true}, {http.StatusInternalServerError, false}, {http.StatusUnauthorized, false},
	} {
		t.Run(strconv.Itoa(tt.code), func(t *testing.T) {
			is := is.New(t)
			var mu sync.Mutex
			var method, session, auth string
			c, _ := streamable(t, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				method, session, auth = r.Method, r.Header.Get("Mcp-Session-Id"), r.Header.Get("Authorization")
				mu.Unlock()
				w.WriteHeader(tt.code)
			})
			c.Header = http.Header{"Authorization": {"Bearer t"}}
			err := c.EndSession(context.Background(), http.Header{"Mcp-Session-Id": {"s-1"}})
			mu.Lock()
			is.Equal(method, http.MethodDelete)
			is.Equal(session, "s-1")
			is.Equal(auth, "Bearer t")
			mu.Unlock()
			if tt.ok {
				is.NoErr(err)
				return
			}
			var st *frame.StatusError
			is.True(errors.As(err, &st))
			is.Equal(st.Code, tt.code)
		})
	}
}

// TestStreamableGoSDK talks to the official Go SDK's stateful Streamable
// HTTP server, carrying the session headers the way the session stage will.
func TestStreamableGoSDK(t *testing.T) {
	for _, jsonResponse := range []bool{false, true} {
		t.Run(fmt.Sprint("json=", jsonResponse), func(t *testing.T) {
			is := is.New(t)
			server := newSDKServer()
			handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
				&mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
			srv, client := newServer(t, handler)
			sink := newCollector()
			c := &StreamableClient{URL: srv.URL, Client: client, ToClient: sink}
			ctx := context.Background()

			is.NoErr(c.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)))
			init := sink.all()[0]
			is.Equal(init.ID(), frame.ID("1"))
			is.Equal(init.Get("result.protocolVersion").String(), "2025-11-25")
			session := init.Header().Get("Mcp-Session-Id")
			is.True(session != "") // from the response headers on the side channel

			withSession := func(m frame.Message) frame.Message {
				return m.WithHeader("Mcp-Session-Id", session).WithHeader("MCP-Protocol-Version", "2025-11-25")
			}
			is.NoErr(c.Handle(ctx, withSession(frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))))
			is.NoErr(c.Handle(ctx, withSession(frame.MustParse(`{"jsonrpc":"2.0","id":"two","method":"tools/list"}`))))
			list := sink.all()[1]
			is.Equal(list.ID(), frame.ID(`"two"`))
			is.Equal(list.Get("result.tools.0.name").String(), "echo")
			is.NoErr(c.Handle(ctx, withSession(frame.MustParse(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`))))
			is.Equal(sink.all()[2].Get("result.content.0.text").String(), "hi")

			is.NoErr(c.EndSession(ctx, http.Header{"Mcp-Session-Id": {session}}))
			err := c.Handle(ctx, withSession(frame.MustParse(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)))
			var st *frame.StatusError
			is.True(errors.As(err, &st))
			is.Equal(st.Code, http.StatusNotFound) // the session is gone
		})
	}
}

// newSDKServer returns a go-sdk server with one echo tool.
func newSDKServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "sdk-peer", Version: "1.0.0"}, nil)
	type args struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo the text"},
		func(ctx context.Context, req *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	return s
}

func BenchmarkStreamablePOST(b *testing.B) {
	srv, client := newServer(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id := bytes.TrimSuffix(bytes.TrimPrefix(body, []byte(`{"jsonrpc":"2.0","id":`)), []byte(`,"method":"ping"}`))
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, id)
	}))
	c := &StreamableClient{URL: srv.URL, Client: client, ToClient: SinkFunc(func(context.Context, frame.Message) error { return nil })}
	msg := frame.MustParse(pingReq)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Handle(ctx, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// resumeServer answers a POST with an event stream that stops after a
// numbered priming event (with the retry field when retry is not empty),
// cleanly or by breaking its connection, and answers a GET through get.
func resumeServer(t *testing.T, retry string, breakConn bool, get http.HandlerFunc) (*StreamableClient, *collector, *[]time.Duration) {
	t.Helper()
	c, sink := streamable(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			get(w, r)
			return
		}
		sseHeaders(w)
		prime := "id: p1\n"
		if retry != "" {
			prime += "retry: " + retry + "\n"
		}
		flushWrite(w, prime+"data:\n\n")
		if breakConn {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		}
	})
	var waits []time.Duration
	c.Sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	return c, sink, &waits
}

func TestStreamableResumesAPOSTStream(t *testing.T) {
	for _, broken := range []bool{false, true} {
		t.Run(fmt.Sprintf("broken=%v", broken), func(t *testing.T) {
			is := is.New(t)
			var gets []http.Header
			c, sink, waits := resumeServer(t, "500", broken, func(w http.ResponseWriter, r *http.Request) {
				gets = append(gets, r.Header.Clone())
				sseHeaders(w)
				if len(gets) == 1 { // the first GET brings one more event and ends
					flushWrite(w, "id: p2\nretry: 2000\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n")
					return
				}
				flushWrite(w, "id: p3\ndata: "+pingResp+"\n\n")
			})
			c.Header = http.Header{"Authorization": {"Bearer t"}}
			req := frame.MustParse(pingReq).WithHeaders(http.Header{frame.HeaderSessionID: {"s-9"}})
			is.NoErr(c.Handle(t.Context(), req))
			is.Equal(sink.lines(), []string{`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`, pingResp})
			is.Equal(*waits, []time.Duration{500 * time.Millisecond, 2 * time.Second}) // each stream's retry field
			is.Equal(len(gets), 2)
			is.Equal(gets[0].Get("Last-Event-Id"), "p1")
			is.Equal(gets[1].Get("Last-Event-Id"), "p2")
			is.Equal(gets[0].Get("Accept"), "text/event-stream")
			is.Equal(gets[0].Get(frame.HeaderSessionID), "s-9") // the POST's side channel
			is.Equal(gets[0].Get("Authorization"), "Bearer t")
		})
	}
}

func TestStreamableResumeGivesUp(t *testing.T) {
	t.Run("no new event", func(t *testing.T) {
		is := is.New(t)
		gets := 0
		c, _, waits := resumeServer(t, "", false, func(w http.ResponseWriter, r *http.Request) {
			gets++
			sseHeaders(w) // ends at once, with nothing new
		})
		err := c.Handle(t.Context(), frame.MustParse(pingReq))
		var se *frame.SendError
		is.True(errors.As(err, &se) && se.Sent)
		is.True(errors.Is(err, frame.ErrStreamEnded))
		is.Equal(gets, maxIdleResumes)
		is.Equal((*waits)[0], DefaultResumeDelay) // no retry field
	})
	t.Run("refused", func(t *testing.T) {
		is := is.New(t)
		c, _, _ := resumeServer(t, "10", false, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusMethodNotAllowed)
		})
		err := c.Handle(t.Context(), frame.MustParse(pingReq))
		is.True(errors.Is(err, frame.ErrStreamEnded))
		is.True(strings.Contains(err.Error(), "resuming it failed: HTTP 405"))
		var st *frame.StatusError
		is.True(!errors.As(err, &st)) // not mistaken for the POST's own status
	})
	t.Run("a stream without ids", func(t *testing.T) {
		is := is.New(t)
		c, _ := streamable(t, func(w http.ResponseWriter, r *http.Request) {
			is.Equal(r.Method, http.MethodPost) // never resumed: nothing names where to resume
			sseHeaders(w)
			flushWrite(w, "retry: 10\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n")
		})
		is.True(errors.Is(c.Handle(t.Context(), frame.MustParse(pingReq)), frame.ErrStreamEnded))
	})
	t.Run("idle", func(t *testing.T) {
		is := is.New(t)
		c, _ := streamable(t, func(w http.ResponseWriter, r *http.Request) {
			is.Equal(r.Method, http.MethodPost) // a silent stream is not resumed: the read timeout is the user's bound
			sseHeaders(w)
			flushWrite(w, "id: q1\ndata:\n\n")
			<-r.Context().Done()
		})
		c.IdleTimeout = 50 * time.Millisecond
		err := c.Handle(t.Context(), frame.MustParse(pingReq))
		var idle *IdleTimeoutError
		is.True(errors.As(err, &idle))
	})
}
