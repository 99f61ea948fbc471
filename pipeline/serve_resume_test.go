//go:build linux

package pipeline

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// Streams that break, end to end over loopback with the scripted child:
// a POST's event stream resumed with GET and Last-Event-ID (issue 9, item
// 12), and a GET stream whose connection died unnoticed, replaced by the
// client's next GET (item 6).

// doVia sends a request to url (the gateway's or a proxy's), each on a
// connection of its own; hdr are name, value pairs.
func (g *sessionGateway) doVia(t *testing.T, ctx context.Context, url, method, sid, accept, body string, hdr ...string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("Mcp-Session-Id", sid)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// primingEvent reads the first event of a POST's stream, which must be a
// priming event (an id and empty data), and returns its id and retry.
func primingEvent(t *testing.T, br *bufio.Reader) (id, retry string) {
	t.Helper()
	sawData := false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended before its priming event: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && id == "" && !sawData: // the end of a comment's event
		case line == "":
			if !sawData || id == "" {
				t.Fatalf("not a priming event: id %q, data %v", id, sawData)
			}
			return id, retry
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "retry: "):
			retry = strings.TrimPrefix(line, "retry: ")
		case line == "data:":
			sawData = true
		case strings.HasPrefix(line, ":"): // a comment
		default:
			t.Fatalf("not a priming event: %q", line)
		}
	}
}

// sseEvent reads the next event of a stream: its id and its message.
func sseEvent(t *testing.T, r *frame.SSEReader) (id, msg string) {
	t.Helper()
	ev, err := r.Next()
	if err != nil {
		t.Fatalf("event stream: %v", err)
	}
	return ev.ID, string(ev.Data)
}

// The client of a long call closes its connection mid-call: the call goes
// on, and a GET with Last-Event-ID gets the events after that id again,
// then the answer, and ends.
func TestSessionsPOSTStreamResumesAfterTheClientLeft(t *testing.T) {
	is := is.New(t)
	g := newSessionGateway(t, nil)
	sid := g.initialize(t)
	waiting := g.logs.Watch(regexp.MustCompile(`the stream waits for a resume`))

	ctx, leave := context.WithCancel(context.Background())
	resp := g.do(t, ctx, http.MethodPost, sid, acceptBoth, `{"jsonrpc":"2.0","id":"long","method":"wait"}`)
	br := bufio.NewReader(resp.Body)
	id, retry := primingEvent(t, br)
	is.Equal([]string{id, retry}, []string{"p1-0", "2000"})
	// A JSON POST cannot carry the child's notification: it rides on the
	// oldest event stream, the long call's.
	msgs, _ := g.call(t, sid, acceptJSON, `{"jsonrpc":"2.0","id":1,"method":"notify","params":{"data":"during the call"}}`)
	is.Equal(len(msgs), 1)
	events := frame.NewSSEReader(br, 0)
	id, msg := sseEvent(t, events)
	is.Equal(id, "p1-1")
	is.Equal(gjson.Get(msg, "params.data").Str, "during the call")
	leave() // the client goes away
	resp.Body.Close()
	waiting.Next(t, serveTestWait)

	is.Equal(g.status(t, "POST", sid, `{"jsonrpc":"2.0","method":"release"}`), http.StatusAccepted) // the call ends
	get := g.do(t, context.Background(), http.MethodGet, sid, "text/event-stream", "", "Last-Event-ID", "p1-0")
	defer get.Body.Close()
	is.Equal(get.StatusCode, http.StatusOK)
	resumed := frame.NewSSEReader(get.Body, 0)
	id, msg = sseEvent(t, resumed)
	is.Equal(id, "p1-1") // sent again: the client said it had not seen it
	is.Equal(gjson.Get(msg, "params.data").Str, "during the call")
	id, msg = sseEvent(t, resumed)
	is.Equal([]string{id, msg}, []string{"p1-2", `{"jsonrpc":"2.0","id":"long","result":{}}`})
	_, err := resumed.Next()
	is.Equal(err, io.EOF) // it ends after the answer, as the POST would have
}

// The connection of a long call dies without serve noticing: the client's
// GET with Last-Event-ID takes the stream over from the dead connection
// and gets the answer that went there.
func TestSessionsPOSTStreamResumesFromADeadConnection(t *testing.T) {
	is := is.New(t)
	g := newSessionGateway(t, nil)
	sid := g.initialize(t)
	proxy := transporttest.NewCutProxy(t, g.url)

	resp := g.doVia(t, context.Background(), proxy.URL, http.MethodPost, sid, acceptBoth, `{"jsonrpc":"2.0","id":"long","method":"wait"}`)
	br := bufio.NewReader(resp.Body)
	id, _ := primingEvent(t, br)
	is.Equal(id, "p1-0")
	is.Equal(proxy.Cut(http.MethodPost), 1)
	_, _ = io.Copy(io.Discard, br) // the client's side is gone
	resp.Body.Close()

	is.Equal(g.status(t, "POST", sid, `{"jsonrpc":"2.0","method":"release"}`), http.StatusAccepted) // answered into the dead connection, or not yet
	get := g.doVia(t, context.Background(), proxy.URL, http.MethodGet, sid, "text/event-stream", "", "Last-Event-ID", "p1-0")
	defer get.Body.Close()
	is.Equal(get.StatusCode, http.StatusOK)
	resumed := frame.NewSSEReader(get.Body, 0)
	id, msg := sseEvent(t, resumed)
	is.Equal([]string{id, msg}, []string{"p1-1", `{"jsonrpc":"2.0","id":"long","result":{}}`})
	_, err := resumed.Next()
	is.Equal(err, io.EOF)
}

// The GET stream's connection dies without serve noticing (the proxy cuts
// the client's side only). The client's next GET takes over — it used to
// get 409 while serve still counted the dead stream as open — and gets
// what went into the dead connection again (it names the last event it
// saw), then every later message of the child.
func TestSessionsGETStreamTakesOverADeadOne(t *testing.T) {
	is := is.New(t)
	g := newSessionGateway(t, nil)
	sid := g.initialize(t)
	proxy := transporttest.NewCutProxy(t, g.url)
	notify := func(id int, data string) {
		t.Helper()
		msgs, _ := g.call(t, sid, acceptJSON, `{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,"method":"notify","params":{"data":"`+data+`"}}`)
		is.Equal(len(msgs), 1)
	}
	data := func(msg string) string { return gjson.Get(msg, "params.data").Str }

	first := g.doVia(t, context.Background(), proxy.URL, http.MethodGet, sid, "text/event-stream", "")
	defer first.Body.Close()
	is.Equal(first.StatusCode, http.StatusOK)
	notify(1, "one")
	id, msg := sseEvent(t, frame.NewSSEReader(first.Body, 0))
	is.Equal([]string{id, data(msg)}, []string{"g1", "one"})

	is.Equal(proxy.Cut(http.MethodGet), 1)
	_, _ = io.Copy(io.Discard, first.Body) // the client's side is gone
	notify(2, "into the dead connection")

	second := g.doVia(t, context.Background(), proxy.URL, http.MethodGet, sid, "text/event-stream", "", "Last-Event-ID", "g1")
	defer second.Body.Close()
	is.Equal(second.StatusCode, http.StatusOK) // not 409
	events := frame.NewSSEReader(second.Body, 0)
	id, msg = sseEvent(t, events)
	is.Equal([]string{id, data(msg)}, []string{"g2", "into the dead connection"})
	notify(3, "three")
	id, msg = sseEvent(t, events)
	is.Equal([]string{id, data(msg)}, []string{"g3", "three"})
}
