package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// sseHarness is an SSEServer on loopback, minting session ids s1, s2, …
type sseHarness struct {
	srv    *HTTPServer
	sse    *SSEServer
	ts     *httptest.Server
	client *http.Client
}

func newSSEHarness(t *testing.T, cfg HTTPServerConfig, serve ServeFunc) *sseHarness {
	t.Helper()
	var mu sync.Mutex
	n := 0
	h := &sseHarness{srv: NewHTTPServer(cfg)}
	h.sse = NewSSEServer(h.srv, SSEServerConfig{
		Serve:       serve,
		StreamPath:  "/sse",
		MessagePath: "/message",
		NewSessionID: func() string {
			mu.Lock()
			defer mu.Unlock()
			n++
			return "s" + string(rune('0'+n))
		},
	})
	h.ts = httptest.NewServer(h.sse)
	h.client = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		h.ts.Close()
		h.client.CloseIdleConnections()
	})
	return h
}

// do sends one request to target (a path and query); hdr are name, value
// pairs.
func (h *sseHarness) do(t *testing.T, ctx context.Context, method, target, body string, hdr ...string) *http.Response {
	t.Helper()
	return sendTestRequest(t, ctx, h.client, method, h.ts.URL+target, body, hdr...)
}

// stream opens a stream and returns its response and a reader of its
// events.
func (h *sseHarness) stream(t *testing.T, ctx context.Context, hdr ...string) (*http.Response, *frame.SSEReader) {
	t.Helper()
	resp := h.do(t, ctx, http.MethodGet, "/sse", "", append([]string{"Accept", "text/event-stream"}, hdr...)...)
	t.Cleanup(func() { resp.Body.Close() })
	return resp, frame.NewSSEReader(resp.Body, 0)
}

// nextEvent reads the next event, failing after serverTestWait.
func nextEvent(t *testing.T, r *frame.SSEReader) frame.Event {
	t.Helper()
	type result struct {
		ev  frame.Event
		err error
	}
	got := make(chan result, 1)
	go func() {
		ev, err := r.Next()
		got <- result{ev, err}
	}()
	select {
	case res := <-got:
		if res.err != nil {
			t.Fatalf("reading the stream: %v", res.err)
		}
		return res.ev
	case <-time.After(serverTestWait):
		t.Fatalf("no event within %v", serverTestWait)
		return frame.Event{}
	}
}

// within fails t unless ch is closed (or receives) within serverTestWait.
func within[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(serverTestWait):
		t.Fatalf("%s: not within %v", what, serverTestWait)
	}
}

// A stream opens with its endpoint event; a POST there is handed over with
// the stream's session id and an exchange the stream carries, and gets
// 202; what is sent on that exchange comes on the stream as message
// events without ids, and the exchange is over once ended.
func TestSSEServerCarriesAnswersOnTheStream(t *testing.T) {
	is := is.New(t)
	type seen struct {
		method, sid, lastID, body string
		sse                       bool
	}
	var mu sync.Mutex
	var got []seen
	over := make(chan struct{})
	h := newSSEHarness(t, HTTPServerConfig{}, func(ctx context.Context, m frame.Message, x *Exchange) error {
		mu.Lock()
		got = append(got, seen{x.Method(), m.Header().Get(frame.HeaderSessionID), m.Header().Get(frame.HeaderLastEventID), m.String(), x.EventStream()})
		mu.Unlock()
		x.NumberEvents(func(frame.Message) string { return "never" }) // no ids on HTTP+SSE
		x.Prime("p1-0", time.Second)                                  // nor priming events
		x.HoldHeader()                                                // the stream's header is out already
		if x.Method() == http.MethodPost && m.IsRequest() {
			x.OnDone(func(unsent []frame.Message) {
				if len(unsent) == 0 {
					close(over)
				}
			})
			go func() {
				_ = x.Send(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/progress"}`), "")
				_ = x.SendLast(context.Background(), frame.ResultResponse(m.ID(), []byte(`{"ok":true}`)), "own")
			}()
		}
		return nil
	})
	resp, events := h.stream(t, t.Context(), "Last-Event-ID", "g7", "Mcp-Session-Id", "forged")
	is.Equal(resp.StatusCode, http.StatusOK)
	is.Equal(resp.Header.Get("Content-Type"), "text/event-stream")
	ev := nextEvent(t, events)
	is.Equal(ev.Type, "endpoint")
	is.Equal(string(ev.Data), "/message?session=s1")

	post := h.do(t, t.Context(), http.MethodPost, "/message?session=s1", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, "X-Tenant", "acme")
	is.Equal(body(t, post), "")
	is.Equal(post.StatusCode, http.StatusAccepted)
	is.Equal(post.Header.Get("Content-Length"), "0")
	ev = nextEvent(t, events)
	is.Equal(ev.Type, "message")
	is.Equal(string(ev.Data), `{"jsonrpc":"2.0","method":"notifications/progress"}`)
	is.Equal(ev.ID, "") // no ids, whatever NumberEvents or Send asked
	ev = nextEvent(t, events)
	is.Equal(string(ev.Data), `{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`)
	is.Equal(ev.ID, "")
	within(t, over, "the POST's exchange over once ended")

	mu.Lock()
	defer mu.Unlock()
	is.Equal(got, []seen{
		{"GET", "s1", "", "", true}, // the minted id, not the client's; no Last-Event-ID
		{"POST", "s1", "", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, true},
	})
}

// Cut ends an exchange a stream carries, which holds nothing of its own:
// what was sent on it is on the stream, which goes on.
func TestSSEServerCutCarried(t *testing.T) {
	is := is.New(t)
	carried := make(chan *Exchange, 1)
	over := make(chan struct{})
	h := newSSEHarness(t, HTTPServerConfig{}, func(ctx context.Context, m frame.Message, x *Exchange) error {
		if x.Method() == http.MethodPost && m.IsRequest() {
			x.OnDone(func([]frame.Message) { close(over) })
			carried <- x
		}
		return nil
	})
	_, events := h.stream(t, t.Context())
	nextEvent(t, events)
	body(t, h.do(t, t.Context(), http.MethodPost, "/message?session=s1", `{"jsonrpc":"2.0","id":1,"method":"slow"}`))
	x := <-carried
	is.NoErr(x.Send(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","method":"a"}`), ""))
	is.Equal(len(x.Cut()), 0)
	within(t, over, "the cut exchange over")
	is.True(errors.Is(x.Send(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","method":"b"}`), ""), frame.ErrExchangeOver))
	is.Equal(string(nextEvent(t, events).Data), `{"jsonrpc":"2.0","method":"a"}`)
	post := h.do(t, t.Context(), http.MethodPost, "/message?session=s1", `{"jsonrpc":"2.0","method":"n"}`)
	body(t, post)
	is.Equal(post.StatusCode, http.StatusAccepted) // the stream goes on
}

// The message path's refusals, and the methods and paths it knows.
func TestSSEServerRefusals(t *testing.T) {
	h := newSSEHarness(t, HTTPServerConfig{}, func(ctx context.Context, m frame.Message, x *Exchange) error {
		if m.Method() == "refuse" {
			return &frame.StatusError{Code: http.StatusTeapot, Body: []byte(`{"no":1}`)}
		}
		return nil
	})
	_, events := h.stream(t, t.Context())
	is.New(t).Equal(string(nextEvent(t, events).Data), "/message?session=s1")
	call := `{"jsonrpc":"2.0","id":1,"method":"a"}`
	for _, tt := range []struct {
		name, method, target, body string
		hdr                        []string
		status                     int
		want                       string
	}{
		{"unknown session", "POST", "/message?session=s9", call, nil, 404, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"session not found"}}`},
		{"no session", "POST", "/message", call, nil, 400, ""},
		{"two sessions", "POST", "/message?session=s1&session=s1", call, nil, 400, ""},
		{"text content type", "POST", "/message?session=s1", call, []string{"Content-Type", "text/plain"}, 415, ""},
		{"not JSON", "POST", "/message?session=s1", `{"jsonrpc"`, nil, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: the body is not JSON"}}`},
		{"bad envelope", "POST", "/message?session=s1", `{"jsonrpc":"2.0","id":2,"method":"a","params":[]}`, nil, 400, `{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"invalid request: params must be an object"}}`},
		{"refused by the handler", "POST", "/message?session=s1", `{"jsonrpc":"2.0","id":1,"method":"refuse"}`, nil, 418, `{"no":1}`},
		{"taken", "POST", "/message?session=s1&other=x", call, nil, 202, ""},
		{"GET on the message path", "GET", "/message", "", nil, 405, ""},
		{"POST on the stream path", "POST", "/sse", call, nil, 405, ""},
		{"unknown path", "GET", "/mcp", "", nil, 404, ""},
		{"stream not acceptable", "GET", "/sse", "", []string{"Accept", "application/json"}, 406, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			resp := h.do(t, t.Context(), tt.method, tt.target, tt.body, tt.hdr...)
			got := body(t, resp)
			is.Equal(resp.StatusCode, tt.status)
			if tt.want != "" {
				is.Equal(got, tt.want)
			}
			switch tt.status {
			case 405:
				is.True(resp.Header.Get("Allow") == "GET" || resp.Header.Get("Allow") == "POST")
			case 202:
				is.Equal(got, "")
			}
		})
	}
}

// One path may serve both: GET streams, POST carries messages.
func TestSSEServerOnePath(t *testing.T) {
	is := is.New(t)
	srv := NewHTTPServer(HTTPServerConfig{})
	sse := NewSSEServer(srv, SSEServerConfig{
		Serve:        func(context.Context, frame.Message, *Exchange) error { return nil },
		StreamPath:   "/events",
		MessagePath:  "/events",
		Endpoint:     "/prefix/events",
		NewSessionID: func() string { return "only" },
	})
	ts := httptest.NewServer(sse)
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/events", nil)
	resp, err := client.Do(req)
	is.NoErr(err)
	defer resp.Body.Close()
	is.Equal(string(nextEvent(t, frame.NewSSEReader(resp.Body, 0)).Data), "/prefix/events?session=only")
	post, err := client.Post(ts.URL+"/events?session=only", "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"n"}`))
	is.NoErr(err)
	body(t, post)
	is.Equal(post.StatusCode, http.StatusAccepted)
	req, _ = http.NewRequest(http.MethodDelete, ts.URL+"/events", nil)
	del, err := client.Do(req)
	is.NoErr(err)
	body(t, del)
	is.Equal(del.StatusCode, http.StatusMethodNotAllowed)
	is.Equal(del.Header.Get("Allow"), "GET, POST")
}

// When the client goes away, the stream is over, and so is every exchange
// it carries; the session's id gets 404 from then on.
func TestSSEServerStreamEndEndsWhatItCarries(t *testing.T) {
	is := is.New(t)
	carried := make(chan *Exchange, 1)
	streamOver, carriedOver := make(chan struct{}), make(chan struct{})
	h := newSSEHarness(t, HTTPServerConfig{}, func(ctx context.Context, m frame.Message, x *Exchange) error {
		if x.Method() == http.MethodGet {
			x.OnDone(func([]frame.Message) { close(streamOver) })
			return nil
		}
		x.OnDone(func([]frame.Message) { close(carriedOver) })
		carried <- x
		return nil
	})
	ctx, cancel := context.WithCancel(t.Context())
	_, events := h.stream(t, ctx)
	nextEvent(t, events)
	post := h.do(t, t.Context(), http.MethodPost, "/message?session=s1", `{"jsonrpc":"2.0","id":1,"method":"slow"}`)
	body(t, post)
	is.Equal(post.StatusCode, http.StatusAccepted)
	x := <-carried

	cancel() // the client goes away
	within(t, carriedOver, "the carried exchange over")
	within(t, streamOver, "the stream over")
	is.True(errors.Is(x.Send(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"result":{}}`), ""), frame.ErrExchangeOver))
	post = h.do(t, t.Context(), http.MethodPost, "/message?session=s1", `{"jsonrpc":"2.0","method":"n"}`)
	body(t, post)
	is.Equal(post.StatusCode, http.StatusNotFound)
}

// When the stream's exchange ends (its session ended), the stream's
// response ends after what was queued, and a POST for it gets 404.
func TestSSEServerStreamEndedByTheHandler(t *testing.T) {
	is := is.New(t)
	streams := make(chan *Exchange, 1)
	h := newSSEHarness(t, HTTPServerConfig{}, func(ctx context.Context, m frame.Message, x *Exchange) error {
		if x.Method() == http.MethodGet {
			streams <- x
		}
		return nil
	})
	resp, events := h.stream(t, t.Context())
	nextEvent(t, events)
	x := <-streams
	is.NoErr(x.SendLast(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","method":"bye"}`), ""))
	is.Equal(string(nextEvent(t, events).Data), `{"jsonrpc":"2.0","method":"bye"}`)
	rest, err := io.ReadAll(resp.Body)
	is.NoErr(err) // a clean end
	is.Equal(string(rest), "")
	post := h.do(t, t.Context(), http.MethodPost, "/message?session=s1", `{"jsonrpc":"2.0","method":"n"}`)
	body(t, post)
	is.Equal(post.StatusCode, http.StatusNotFound)
}

// A request a stream carries counts as in flight until it is answered;
// WaitIdle waits for it, and meanwhile streams still open and requests
// are still taken.
func TestSSEServerWaitIdle(t *testing.T) {
	is := is.New(t)
	carried := make(chan *Exchange, 2)
	h := newSSEHarness(t, HTTPServerConfig{}, func(ctx context.Context, m frame.Message, x *Exchange) error {
		if x.Method() == http.MethodPost && m.IsRequest() {
			carried <- x
		}
		return nil
	})
	_, events := h.stream(t, t.Context())
	nextEvent(t, events)
	post := h.do(t, t.Context(), http.MethodPost, "/message?session=s1", `{"jsonrpc":"2.0","id":1,"method":"slow"}`)
	body(t, post)
	x := <-carried
	is.Equal(h.srv.InFlight(), 1)

	ended, cancel := context.WithCancel(t.Context())
	cancel()
	is.Equal(h.srv.WaitIdle(ended), context.Canceled) // a request is in flight
	idle := make(chan error, 1)
	go func() { idle <- h.srv.WaitIdle(context.Background()) }()

	resp := h.do(t, t.Context(), http.MethodPost, "/message?session=s1", `{"jsonrpc":"2.0","id":2,"method":"more"}`)
	body(t, resp)
	is.Equal(resp.StatusCode, http.StatusAccepted)
	y := <-carried
	is.Equal(h.srv.InFlight(), 2)

	is.NoErr(x.SendLast(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"result":{}}`), ""))
	is.Equal(string(nextEvent(t, events).Data), `{"jsonrpc":"2.0","id":1,"result":{}}`)
	is.NoErr(y.SendLast(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":2,"result":{}}`), ""))
	is.Equal(string(nextEvent(t, events).Data), `{"jsonrpc":"2.0","id":2,"result":{}}`)
	within(t, idle, "WaitIdle")
}

// A 16 MiB message each way: in a POST's body, and on the stream.
func TestSSEServerLargeMessages(t *testing.T) {
	is := is.New(t)
	h := newSSEHarness(t, HTTPServerConfig{}, func(ctx context.Context, m frame.Message, x *Exchange) error {
		if x.Method() == http.MethodPost {
			return echoServe(ctx, m, x)
		}
		return nil
	})
	_, events := h.stream(t, t.Context())
	nextEvent(t, events)
	big := strings.Repeat("0123456789abcdef", 16<<20/16)
	post := h.do(t, t.Context(), http.MethodPost, "/message?session=s1", `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"s":"`+big+`"}}`)
	body(t, post)
	is.Equal(post.StatusCode, http.StatusAccepted)
	is.Equal(string(nextEvent(t, events).Data), `{"jsonrpc":"2.0","id":1,"result":{"s":"`+big+`"}}`)
}

func TestSessionParam(t *testing.T) {
	for _, tt := range []struct {
		query, id string
		ok        bool
	}{
		{"session=ABC234", "ABC234", true},
		{"a=1&session=x-y_z&b", "x-y_z", true},
		{"", "", false},
		{"sessionid=x", "", false},
		{"session=", "", false},
		{"session", "", false},
		{"session=a&session=a", "", false},
		{"session=a%20b", "", false},
		{"session=pod-0.ABC234", "pod-0.ABC234", true}, // a routable id (mw.ReplicaSessionIDs)
		{"session=a/b", "", false},
		{"session=" + strings.Repeat("a", 129), "", false},
		{"session=" + strings.Repeat("a", 128), strings.Repeat("a", 128), true},
	} {
		t.Run(tt.query, func(t *testing.T) {
			is := is.New(t)
			id, ok := SessionParam(tt.query)
			is.Equal(ok, tt.ok)
			is.Equal(id, tt.id)
		})
	}
}

// FuzzSessionParam checks that no query crashes the parser, and that an
// id it accepts is one a URL carries as it is, and that it finds it again
// in a query it builds.
func FuzzSessionParam(f *testing.F) {
	for _, q := range []string{"session=ABC", "a=1&session=b&c=2", "session=a&session=b", "session=%41", "&&=&session", "session=é"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, query string) {
		id, ok := SessionParam(query)
		if !ok {
			if id != "" {
				t.Fatalf("%q: not ok, but id %q", query, id)
			}
			return
		}
		if !validSessionID(id) || !strings.Contains(query, "session="+id) {
			t.Fatalf("%q: accepted id %q", query, id)
		}
		if again, ok := SessionParam("x=1&session=" + id); !ok || again != id {
			t.Fatalf("%q: id %q not found again", query, id)
		}
	})
}
