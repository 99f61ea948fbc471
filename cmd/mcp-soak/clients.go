//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// The clients of the serve soak. Each runs until ctx ends, then leaves
// the way a well-behaved client does (a session is deleted, an HTTP+SSE
// stream closed) so that what serve holds for it can be checked gone.

// modernMeta is the _meta of a 2026-07-28 request.
const modernMeta = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
	`"io.modelcontextprotocol/clientInfo":{"name":"mcp-soak","version":"1"}`

// sessionVersion is the protocol version of the session-era clients.
const sessionVersion = "2025-11-25"

// callTimeout bounds every request: past it the driver gives up, and the
// request counts as lost.
const callTimeout = 90 * time.Second

// cancelAfter is how long a call to be cancelled runs before it is.
const cancelAfter = 300 * time.Millisecond

// load is what the clients share.
type load struct {
	url, sseURL string
	hc          *http.Client
	t           *tracker
	think       time.Duration

	statuses      sync.Map // HTTP status (int) → *atomic.Int64, of answers with an error status
	notifications atomic.Int64
	sessions      atomic.Int64 // session-era sessions opened
	deletes       atomic.Int64 // DELETEs answered 2xx
	deleteFailed  atomic.Int64
	sseStreams    atomic.Int64 // HTTP+SSE streams opened
	streamsFailed atomic.Int64 // GET or HTTP+SSE streams refused
	transportErrs atomic.Int64
}

func (l *load) status(code int) {
	v, _ := l.statuses.LoadOrStore(code, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// pause waits about the think time (0.5–1.5×) or until ctx ends.
func (l *load) pause(ctx context.Context) {
	d := time.Duration(float64(l.think) * (0.5 + rand.Float64()))
	_ = frame.Sleep(ctx, d)
}

// route counts one message a client received: an answer goes to the
// tracker, anything else is a notification or a request of the server.
func (l *load) route(msg []byte) {
	if len(msg) > 0 && msg[0] == '[' {
		gjson.ParseBytes(msg).ForEach(func(_, v gjson.Result) bool {
			l.route([]byte(v.Raw))
			return true
		})
		return
	}
	r := gjson.GetManyBytes(msg, "id", "method", "error")
	if r[1].Exists() {
		l.notifications.Add(1)
		return
	}
	if r[0].Type == gjson.Number {
		l.t.answer(r[0].Int(), r[2].Exists(), "message "+string(msg))
	}
}

// readAnswers reads an HTTP answer (a JSON body or an event stream) and
// routes its messages.
func (l *load) readAnswers(resp *http.Response) {
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		rd := frame.NewSSEReader(resp.Body, 0)
		for {
			ev, err := rd.Next()
			if err != nil {
				return
			}
			if len(bytes.TrimSpace(ev.Data)) > 0 {
				l.route(ev.Data)
			}
		}
	}
	b, _ := io.ReadAll(resp.Body)
	if len(bytes.TrimSpace(b)) > 0 {
		l.route(b)
	}
}

// post sends body, a request with id (0 for a notification), with the
// headers hdr, and reads its answers. An error status counts as the
// request's answer. It returns the status (0 when no answer came) and the
// response's headers.
func (l *load) post(ctx context.Context, target string, hdr map[string]string, id int64, body string) (int, http.Header) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := l.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil || context.Cause(ctx) == context.DeadlineExceeded {
			l.transportErrs.Add(1) // not a request the driver aborted
		}
		return 0, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		l.status(resp.StatusCode)
		if id != 0 {
			l.t.answer(id, true, "HTTP "+resp.Status+" to its POST")
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header
	}
	l.readAnswers(resp)
	return resp.StatusCode, resp.Header
}

// callBody is a tools/call of tool with args and extra _meta members.
func callBody(id int64, tool, args, meta string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{%s}}}`, id, tool, args, meta)
}

// op is one kind of call the clients make, picked at random.
type op int

const (
	opEcho op = iota
	opSlow
	opList
	opCancel
)

func pickOp() op {
	switch r := rand.Float64(); {
	case r < 0.08:
		return opCancel
	case r < 0.23:
		return opSlow
	case r < 0.28:
		return opList
	default:
		return opEcho
	}
}

// modernClient is a 2026-07-28 client: every request stands alone.
func (l *load) modernClient(ctx context.Context) {
	for ctx.Err() == nil {
		o := pickOp()
		kind := [...]string{"2026-07-28 echo", "2026-07-28 slow", "2026-07-28 tools/list", "2026-07-28 cancel"}[o]
		id := l.t.start(kind)
		hdr := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}
		var body string
		switch o {
		case opEcho:
			hdr["Mcp-Name"] = "echo"
			body = callBody(id, "echo", fmt.Sprintf(`{"text":"soak %d"}`, id), modernMeta)
		case opSlow:
			hdr["Mcp-Name"] = "slow"
			body = callBody(id, "slow", `{"seconds":0.5,"steps":5}`, modernMeta+fmt.Sprintf(`,"progressToken":%d,"io.modelcontextprotocol/logLevel":"info"`, id))
		case opList:
			hdr["Mcp-Method"] = "tools/list"
			body = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{"_meta":{%s}}}`, id, modernMeta)
		case opCancel:
			// A 2026-07-28 client cancels by closing its request.
			hdr["Mcp-Name"] = "slow"
			body = callBody(id, "slow", `{"seconds":30,"steps":30}`, modernMeta+fmt.Sprintf(`,"progressToken":%d`, id))
		}
		if o == opCancel {
			cctx, cancel := context.WithCancel(context.Background())
			timer := time.AfterFunc(cancelAfter, func() { l.t.cancel(id); cancel() })
			l.post(cctx, l.url, hdr, id, body)
			timer.Stop()
			cancel()
		} else {
			// A call begun is finished even when the run ends.
			l.post(context.WithoutCancel(ctx), l.url, hdr, id, body)
		}
		l.t.finish(id)
		l.pause(ctx)
	}
}

// sessionClient is a client of the session era: it opens a session with a
// GET stream, makes calls in it, and deletes it, over and over.
func (l *load) sessionClient(ctx context.Context, callsPerSession int) {
	for ctx.Err() == nil {
		l.oneSession(ctx, callsPerSession)
		l.pause(ctx)
	}
}

func (l *load) oneSession(ctx context.Context, calls int) {
	bg := context.WithoutCancel(ctx)
	id := l.t.start("session initialize")
	status, h := l.post(bg, l.url, nil, id, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"mcp-soak","version":"1"}}}`, id, sessionVersion))
	l.t.finish(id)
	sid := ""
	if h != nil {
		sid = h.Get("Mcp-Session-Id")
	}
	if status != http.StatusOK || sid == "" {
		return
	}
	l.sessions.Add(1)
	hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": sessionVersion}
	l.post(bg, l.url, hdr, 0, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	id = l.t.start("session logging/setLevel")
	l.post(bg, l.url, hdr, id, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"logging/setLevel","params":{"level":"info"}}`, id))
	l.t.finish(id)

	// The GET stream, for the server's own messages.
	gctx, gcancel := context.WithCancel(bg)
	gdone := make(chan struct{})
	go func() {
		defer close(gdone)
		req, _ := http.NewRequestWithContext(gctx, http.MethodGet, l.url, nil)
		req.Header.Set("Accept", "text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := l.hc.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			l.streamsFailed.Add(1)
			l.status(resp.StatusCode)
			return
		}
		l.readAnswers(resp)
	}()

	gone := false
	for i := 0; i < calls && !gone && ctx.Err() == nil; i++ {
		o := pickOp()
		kind := [...]string{"session echo", "session slow", "session tools/list", "session cancel"}[o]
		id := l.t.start(kind)
		switch o {
		case opEcho:
			status, _ = l.post(bg, l.url, hdr, id, callBody(id, "echo", fmt.Sprintf(`{"text":"soak %d"}`, id), ""))
		case opSlow:
			status, _ = l.post(bg, l.url, hdr, id, callBody(id, "slow", `{"seconds":0.5,"steps":5}`, fmt.Sprintf(`"progressToken":%d`, id)))
		case opList:
			status, _ = l.post(bg, l.url, hdr, id, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, id))
		case opCancel:
			done := make(chan int, 1)
			go func() {
				s, _ := l.post(bg, l.url, hdr, id, callBody(id, "slow", `{"seconds":30,"steps":30}`, fmt.Sprintf(`"progressToken":%d`, id)))
				done <- s
			}()
			_ = frame.Sleep(bg, cancelAfter)
			l.t.cancel(id)
			l.post(bg, l.url, hdr, 0, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"soak"}}`, id))
			status = <-done
		}
		l.t.finish(id)
		gone = status == http.StatusNotFound // its process was killed: the session is over
		l.pause(ctx)
	}
	gcancel()
	<-gdone
	if !gone {
		l.deleteSession(bg, hdr)
	}
}

// deleteSession ends a session with DELETE, as a client does that honours
// 503 and Retry-After: it tries again after the wait asked for (a second
// when none), up to 5 times.
func (l *load) deleteSession(ctx context.Context, hdr map[string]string) {
	for try := 0; ; try++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, l.url, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := l.hc.Do(req)
		if err != nil {
			l.deleteFailed.Add(1)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode/100 == 2:
			l.deletes.Add(1)
			return
		case resp.StatusCode == http.StatusNotFound: // ended already, by a crash
			return
		case resp.StatusCode == http.StatusServiceUnavailable && try < 5:
			l.status(resp.StatusCode)
			wait := time.Second
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 && s <= 60 {
				wait = time.Duration(s) * time.Second
			}
			_ = frame.Sleep(ctx, wait)
		default:
			l.deleteFailed.Add(1)
			l.status(resp.StatusCode)
			return
		}
	}
}

// sseClient is a client of HTTP+SSE (2024-11-05): it opens the stream,
// makes calls whose answers come on it, and closes it, over and over.
func (l *load) sseClient(ctx context.Context, callsPerStream int) {
	for ctx.Err() == nil {
		l.oneSSE(ctx, callsPerStream)
		l.pause(ctx)
	}
}

func (l *load) oneSSE(ctx context.Context, calls int) {
	bg := context.WithoutCancel(ctx)
	sctx, scancel := context.WithCancel(bg)
	defer scancel()
	req, _ := http.NewRequestWithContext(sctx, http.MethodGet, l.sseURL, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := l.hc.Do(req)
	if err != nil {
		l.transportErrs.Add(1)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		l.streamsFailed.Add(1)
		l.status(resp.StatusCode)
		return
	}
	rd := frame.NewSSEReader(resp.Body, 0)
	ev, err := rd.Next()
	if err != nil || ev.Type != "endpoint" {
		l.streamsFailed.Add(1)
		return
	}
	base, _ := url.Parse(l.sseURL)
	ep, err := base.Parse(string(bytes.TrimSpace(ev.Data)))
	if err != nil {
		l.streamsFailed.Add(1)
		return
	}
	l.sseStreams.Add(1)
	// answered tells the caller an answer to its id came.
	var mu sync.Mutex
	waiting := map[int64]chan struct{}{}
	streamEnded := make(chan struct{})
	go func() {
		defer close(streamEnded)
		for {
			ev, err := rd.Next()
			if err != nil {
				return
			}
			r := gjson.GetManyBytes(ev.Data, "id", "method")
			l.route(ev.Data)
			if r[1].Exists() || r[0].Type != gjson.Number {
				continue
			}
			mu.Lock()
			if c := waiting[r[0].Int()]; c != nil {
				close(c)
				delete(waiting, r[0].Int())
			}
			mu.Unlock()
		}
	}()
	// call sends a request and waits for its answer on the stream.
	call := func(kind string, body func(id int64) string) bool {
		id := l.t.start(kind)
		defer l.t.finish(id)
		c := make(chan struct{})
		mu.Lock()
		waiting[id] = c
		mu.Unlock()
		status, _ := l.post(bg, ep.String(), nil, id, body(id))
		if status != http.StatusAccepted && status != http.StatusOK {
			return false
		}
		select {
		case <-c:
			return true
		case <-streamEnded:
			return false
		case <-time.After(callTimeout):
			return false
		}
	}
	if !call("sse initialize", func(id int64) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"mcp-soak","version":"1"}}}`, id)
	}) {
		return
	}
	l.post(bg, ep.String(), nil, 0, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i := 0; i < calls && ctx.Err() == nil; i++ {
		ok := true
		if rand.Float64() < 0.2 {
			ok = call("sse slow", func(id int64) string {
				return callBody(id, "slow", `{"seconds":0.5,"steps":5}`, fmt.Sprintf(`"progressToken":%d`, id))
			})
		} else {
			ok = call("sse echo", func(id int64) string {
				return callBody(id, "echo", fmt.Sprintf(`{"text":"soak %d"}`, id), "")
			})
		}
		if !ok {
			return
		}
		l.pause(ctx)
	}
}
