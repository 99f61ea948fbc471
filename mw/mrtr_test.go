package mw

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// mrtrHostInit is a 2025-11-25 host's initialize declaring every kind of
// input.
const mrtrHostInit = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{},"url":{}},"sampling":{"tools":{}},"roots":{"listChanged":true}},"clientInfo":{"name":"host","version":"1"}}}`

// mrtrEnv is the MRTR bridge between a scripted host and a scripted
// 2026-07-28 server.
type mrtrEnv struct {
	ctx      context.Context
	toServer Handler
	host     *recorder // everything the host is sent
	srv      *fakeServer
	sleeps   []time.Duration

	mu sync.Mutex
	// replies answers the host's input requests by method; a method
	// without one is left unanswered.
	replies map[string]string
	// script answers the server's requests in order: a result object, a
	// whole response (starting {"jsonrpc"), or "hold" (wait for the
	// request's context to end, then fail with its cause).
	script []string
	// aborted records the cause of each request the server held.
	aborted []error
}

func newMRTREnv(t *testing.T, init string, script ...string) *mrtrEnv {
	e := &mrtrEnv{host: &recorder{}, script: script, replies: map[string]string{}}
	conn := NewConn(EraStateless)
	if init != "" {
		conn.Initialized(frame.MustParse(init), frame.MustParse(`{"jsonrpc":"2.0","id":0,"result":{}}`))
	}
	e.ctx = WithConn(t.Context(), conn)
	e.srv = &fakeServer{answer: e.serve}
	var entry Late
	host := HandlerFunc(func(ctx context.Context, m frame.Message) error {
		e.host.Handle(ctx, m)
		if m.Kind() != frame.Request {
			return nil
		}
		e.mu.Lock()
		reply, ok := e.replies[m.Method()]
		e.mu.Unlock()
		if !ok {
			return nil
		}
		var answer frame.Message
		if strings.HasPrefix(reply, `{"jsonrpc"`) {
			answer, _ = frame.MustParse(reply).WithID(m.ID())
		} else {
			answer = answerWith(m, reply)
		}
		return entry.Handle(ctx, answer)
	})
	d := MRTRBridge(MRTROptions{Sleep: func(ctx context.Context, d time.Duration) error {
		e.mu.Lock()
		e.sleeps = append(e.sleeps, d)
		e.mu.Unlock()
		return ctx.Err()
	}})(Duplex{ToServer: e.srv, ToClient: host})
	e.srv.up.Bind(d.ToClient)
	entry.Bind(d.ToServer)
	e.toServer = d.ToServer
	return e
}

func (e *mrtrEnv) serve(ctx context.Context, m frame.Message) ([]frame.Message, error) {
	if m.Kind() != frame.Request {
		return nil, nil
	}
	e.mu.Lock()
	if len(e.script) == 0 {
		e.mu.Unlock()
		return []frame.Message{frame.ErrorResponse(m.ID(), frame.CodeInternalError, "script ended")}, nil
	}
	next := e.script[0]
	e.script = e.script[1:]
	e.mu.Unlock()
	switch {
	case next == "hold":
		<-ctx.Done()
		e.mu.Lock()
		e.aborted = append(e.aborted, context.Cause(ctx))
		e.mu.Unlock()
		return nil, context.Cause(ctx)
	case strings.HasPrefix(next, `{"jsonrpc"`):
		r, err := frame.MustParse(next).WithID(m.ID())
		return []frame.Message{r}, err
	}
	return []frame.Message{answerWith(m, next)}, nil
}

func (e *mrtrEnv) reply(method, result string) {
	e.mu.Lock()
	e.replies[method] = result
	e.mu.Unlock()
}

// upstream returns the requests the server was sent.
func (e *mrtrEnv) upstream() []string {
	var out []string
	for _, m := range e.srv.sent.all() {
		out = append(out, m.String())
	}
	return out
}

const (
	callLine  = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy","arguments":{"env":"prod"}}}`
	elicitReq = `{"method":"elicitation/create","params":{"message":"Deploy to prod?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}`
	done      = `{"resultType":"complete","content":[{"type":"text","text":"deployed"}]}`
)

func TestMRTROneRoundElicitation(t *testing.T) {
	is := is.New(t)
	e := newMRTREnv(t, mrtrHostInit,
		`{"resultType":"input_required","inputRequests":{"confirm":`+elicitReq+`},"requestState":"st-1"}`,
		done)
	e.reply("elicitation/create", `{"action":"accept","content":{"ok":true}}`)
	is.NoErr(e.toServer.Handle(e.ctx, frame.MustParse(callLine)))

	is.Equal(e.upstream(), []string{
		callLine, // the opening call goes as the host sent it
		`{"jsonrpc":"2.0","id":"mcp-stdio/mrtr/1","method":"tools/call","params":{"name":"deploy","arguments":{"env":"prod"},"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":"st-1"}}`,
	})
	is.Equal(e.host.lines(), []string{
		`{"jsonrpc":"2.0","id":"mcp-stdio/mrtr-input/1","method":"elicitation/create","params":{"message":"Deploy to prod?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"deployed"}]}}`,
	})
}

func TestMRTRSeveralRounds(t *testing.T) {
	is := is.New(t)
	e := newMRTREnv(t, mrtrHostInit,
		`{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list"},"s":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}},"requestState":"a"}`,
		`{"resultType":"input_required","inputRequests":{"e":`+elicitReq+`}}`,
		done)
	e.reply("roots/list", `{"roots":[{"uri":"file:///w"}]}`)
	e.reply("sampling/createMessage", `{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}`)
	e.reply("elicitation/create", `{"action":"accept","content":{"ok":true}}`)
	is.NoErr(e.toServer.Handle(e.ctx, frame.MustParse(callLine)))

	up := e.upstream()
	is.Equal(len(up), 3)
	is.Equal(up[1], `{"jsonrpc":"2.0","id":"mcp-stdio/mrtr/1","method":"tools/call","params":{"name":"deploy","arguments":{"env":"prod"},"inputResponses":{"r":{"roots":[{"uri":"file:///w"}]},"s":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}},"requestState":"a"}}`)
	// Round 2 carries only its own answers, and no requestState: none was given.
	is.Equal(up[2], `{"jsonrpc":"2.0","id":"mcp-stdio/mrtr/2","method":"tools/call","params":{"name":"deploy","arguments":{"env":"prod"},"inputResponses":{"e":{"action":"accept","content":{"ok":true}}}}}`)
	host := e.host.lines()
	is.Equal(host, []string{
		`{"jsonrpc":"2.0","id":"mcp-stdio/mrtr-input/1","method":"roots/list"}`,
		`{"jsonrpc":"2.0","id":"mcp-stdio/mrtr-input/2","method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}`,
		`{"jsonrpc":"2.0","id":"mcp-stdio/mrtr-input/3","method":"elicitation/create","params":{"message":"Deploy to prod?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}`,
		`{"jsonrpc":"2.0","id":1,"result":` + done + `}`,
	})
}

func TestMRTRStateOnlyBackoff(t *testing.T) {
	is := is.New(t)
	e := newMRTREnv(t, mrtrHostInit,
		`{"resultType":"input_required","requestState":"busy-1"}`,
		`{"resultType":"input_required","inputRequests":{},"requestState":"busy-2"}`,
		done)
	is.NoErr(e.toServer.Handle(e.ctx, frame.MustParse(callLine)))
	is.Equal(e.sleeps, []time.Duration{50 * time.Millisecond, 150 * time.Millisecond})
	up := e.upstream()
	is.Equal(len(up), 3)
	is.Equal(up[1], `{"jsonrpc":"2.0","id":"mcp-stdio/mrtr/1","method":"tools/call","params":{"name":"deploy","arguments":{"env":"prod"},"requestState":"busy-1"}}`)
	is.Equal(up[2], `{"jsonrpc":"2.0","id":"mcp-stdio/mrtr/2","method":"tools/call","params":{"name":"deploy","arguments":{"env":"prod"},"requestState":"busy-2"}}`)
	is.Equal(e.host.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":` + done + `}`}) // the host is asked nothing
}

func TestMRTRStateOnlyLimit(t *testing.T) {
	is := is.New(t)
	busy := `{"resultType":"input_required","requestState":"busy"}`
	e := newMRTREnv(t, mrtrHostInit, busy, busy, busy, busy, done)
	is.NoErr(e.toServer.Handle(e.ctx, frame.MustParse(callLine)))
	is.Equal(e.sleeps, []time.Duration{50 * time.Millisecond, 150 * time.Millisecond, 250 * time.Millisecond})
	is.Equal(len(e.upstream()), 4) // the opening call and 3 re-issues
	is.Equal(e.host.lines(), []string{
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"the server still asked to come back later after 3 tries"}}`,
	})
}

func TestMRTRBackoff(t *testing.T) {
	is := is.New(t)
	var got []time.Duration
	for n := 0; n <= 5; n++ {
		got = append(got, MRTRBackoff(n))
	}
	ms := time.Millisecond
	is.Equal(got, []time.Duration{50 * ms, 50 * ms, 150 * ms, 250 * ms, 250 * ms, 250 * ms})
}

func TestMRTRRoundLimit(t *testing.T) {
	is := is.New(t)
	ask := `{"resultType":"input_required","inputRequests":{"e":` + elicitReq + `},"requestState":"again"}`
	var script []string
	for range 12 {
		script = append(script, ask)
	}
	e := newMRTREnv(t, mrtrHostInit, script...)
	e.reply("elicitation/create", `{"action":"accept","content":{"ok":true}}`)
	is.NoErr(e.toServer.Handle(e.ctx, frame.MustParse(callLine)))
	is.Equal(len(e.upstream()), 11) // the opening call and 10 re-issues
	host := e.host.lines()
	is.Equal(len(host), 11) // 10 elicitations, then the error
	is.Equal(host[10], `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"the server still asked for input after 10 rounds"}}`)
}

func TestMRTRHostErrorAborts(t *testing.T) {
	is := is.New(t)
	e := newMRTREnv(t, mrtrHostInit,
		`{"resultType":"input_required","inputRequests":{"a":`+elicitReq+`,"b":{"method":"roots/list"}},"requestState":"s"}`)
	e.reply("elicitation/create", `{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"Method not found","data":{"x":1.50}}}`)
	// roots/list is left unanswered: the error ends the round first.
	is.NoErr(e.toServer.Handle(e.ctx, frame.MustParse(callLine)))
	is.Equal(len(e.upstream()), 1) // nothing re-issued
	is.Equal(e.host.lines(), []string{
		`{"jsonrpc":"2.0","id":"mcp-stdio/mrtr-input/1","method":"elicitation/create","params":{"message":"Deploy to prod?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}`,
		`{"jsonrpc":"2.0","id":"mcp-stdio/mrtr-input/2","method":"roots/list"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"mcp-stdio/mrtr-input/2","reason":"the request it was made for ended"}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found","data":{"x":1.50}}}`,
	})
}

func TestMRTRDeclineIsAnAnswer(t *testing.T) {
	is := is.New(t)
	e := newMRTREnv(t, mrtrHostInit,
		`{"resultType":"input_required","inputRequests":{"confirm":`+elicitReq+`},"requestState":"st"}`,
		`{"resultType":"complete","content":[],"isError":true}`)
	e.reply("elicitation/create", `{"action":"decline"}`)
	is.NoErr(e.toServer.Handle(e.ctx, frame.MustParse(callLine)))
	up := e.upstream()
	is.Equal(len(up), 2)
	is.True(strings.Contains(up[1], `"inputResponses":{"confirm":{"action":"decline"}},"requestState":"st"`))
	host := e.host.lines()
	is.Equal(host[len(host)-1], `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[],"isError":true}}`)
}

func TestMRTRHostCancelMidRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		e := newMRTREnv(t, mrtrHostInit,
			`{"resultType":"input_required","inputRequests":{"confirm":`+elicitReq+`},"requestState":"st"}`)
		// The host never answers the elicitation.
		result := make(chan error, 1)
		go func() { result <- e.toServer.Handle(e.ctx, frame.MustParse(callLine)) }()
		synctest.Wait()
		is.Equal(len(e.host.lines()), 1) // the elicitation is out

		cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user"}}`
		is.NoErr(e.toServer.Handle(e.ctx, frame.MustParse(cancel)))
		is.True(errors.Is(<-result, frame.ErrCancelled)) // no answer is due
		is.Equal(e.host.lines()[1:], []string{
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"mcp-stdio/mrtr-input/1","reason":"the request it was made for ended"}}`,
		})
		// The server hears the cancel of the call it answered; nothing is re-issued.
		is.Equal(e.upstream(), []string{callLine, cancel})

		// A late answer from the host is the bridge's: it is dropped, not sent on.
		is.NoErr(e.toServer.Handle(e.ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/mrtr-input/1","result":{"action":"accept"}}`)))
		is.Equal(len(e.upstream()), 2)
		is.Equal(len(e.host.lines()), 2) // and the host gets no answer for id 1
	})
}

func TestMRTRHostCancelDuringReissue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		e := newMRTREnv(t, mrtrHostInit,
			`{"resultType":"input_required","inputRequests":{"confirm":`+elicitReq+`},"requestState":"st"}`,
			"hold")
		e.reply("elicitation/create", `{"action":"accept","content":{"ok":true}}`)
		result := make(chan error, 1)
		go func() { result <- e.toServer.Handle(e.ctx, frame.MustParse(callLine)) }()
		synctest.Wait()
		is.Equal(len(e.upstream()), 2) // the re-issue is in flight

		is.NoErr(e.toServer.Handle(e.ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)))
		is.True(errors.Is(<-result, frame.ErrCancelled))
		e.mu.Lock()
		is.Equal(len(e.aborted), 1)                          // the upstream request's context ended
		is.True(errors.Is(e.aborted[0], frame.ErrCancelled)) // because the host cancelled
		e.mu.Unlock()
		// The cancel names the request the server runs.
		is.Equal(e.upstream()[2], `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"mcp-stdio/mrtr/1"}}`)
		is.Equal(len(e.host.lines()), 1) // the elicitation only: no answer
	})
}

func TestMRTRUndeclaredCapability(t *testing.T) {
	formOnly := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"h","version":"1"}}}`
	for _, tt := range []struct {
		name, init, request, want string
	}{
		{"no elicitation", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{}}}`, elicitReq,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"the server asked for form elicitation, which the client did not declare in its initialize capabilities","data":{"requiredCapabilities":{"elicitation":{"form":{}}}}}}`},
		{"url with form only", formOnly, `{"method":"elicitation/create","params":{"mode":"url","message":"Sign in","url":"https://x.test/a"}}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"the server asked for URL-mode elicitation, which the client did not declare in its initialize capabilities","data":{"requiredCapabilities":{"elicitation":{"url":{}}}}}}`},
		{"sampling", formOnly, `{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"the server asked for sampling, which the client did not declare in its initialize capabilities","data":{"requiredCapabilities":{"sampling":{}}}}}`},
		{"roots", formOnly, `{"method":"roots/list"}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"the server asked for roots, which the client did not declare in its initialize capabilities","data":{"requiredCapabilities":{"roots":{}}}}}`},
		{"no initialize recorded", "", `{"method":"roots/list"}`, // nothing declared: the first entry is refused
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"the server asked for form elicitation, which the client did not declare in its initialize capabilities","data":{"requiredCapabilities":{"elicitation":{"form":{}}}}}}`},
		{"not an input kind", mrtrHostInit, `{"method":"ping"}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"the server asked for input with \"ping\", which is not an input request"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			// The declared request comes first: nothing is asked when any is refused.
			e := newMRTREnv(t, tt.init,
				`{"resultType":"input_required","inputRequests":{"ok":{"method":"elicitation/create","params":{"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{}}}},"x":`+tt.request+`},"requestState":"s"}`)
			is.NoErr(e.toServer.Handle(e.ctx, frame.MustParse(callLine)))
			is.Equal(e.host.lines(), []string{tt.want})
			is.Equal(len(e.upstream()), 1)
		})
	}
}

func TestMRTRCapabilityForms(t *testing.T) {
	// An empty elicitation capability is form mode; form alone is not url.
	for _, tt := range []struct {
		caps, input string
		ok          bool
	}{
		{`{"elicitation":{}}`, `{"method":"elicitation/create","params":{"message":"m"}}`, true},
		{`{"elicitation":{"url":{}}}`, `{"method":"elicitation/create","params":{"message":"m"}}`, false},
		{`{"elicitation":{"url":{}}}`, `{"method":"elicitation/create","params":{"mode":"url","url":"u","message":"m"}}`, true},
		{`{"elicitation":{"form":{}}}`, `{"method":"elicitation/create","params":{"mode":"form","message":"m"}}`, true},
		{`{"sampling":{}}`, `{"method":"sampling/createMessage","params":{"messages":[],"tools":[]}}`, false},
		{`{"sampling":{"tools":{}}}`, `{"method":"sampling/createMessage","params":{"messages":[],"tools":[]}}`, true},
		{`{"sampling":{}}`, `{"method":"sampling/createMessage","params":{"messages":[]}}`, true},
		{`{"roots":{}}`, `{"method":"roots/list"}`, true},
	} {
		t.Run(tt.caps+tt.input, func(t *testing.T) {
			is := is.New(t)
			caps := frame.MustParse(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":` + tt.caps + `}}`).Get("params.capabilities")
			refusal := checkInput("1", frame.MustParse(`{"jsonrpc":"2.0","id":0,"result":`+tt.input+`}`).Get("result"), caps)
			is.Equal(refusal.Len() == 0, tt.ok)
		})
	}
}

func TestMRTRURLElicitationGetsAnID(t *testing.T) {
	is := is.New(t)
	e := newMRTREnv(t, mrtrHostInit,
		`{"resultType":"input_required","inputRequests":{"signin":{"method":"elicitation/create","params":{"mode":"url","message":"Sign in","url":"https://auth.test/x"}},"given":{"method":"elicitation/create","params":{"mode":"url","message":"Pay","url":"https://pay.test/","elicitationId":"pay-7"}}}}`,
		done)
	e.reply("elicitation/create", `{"action":"accept"}`)
	is.NoErr(e.toServer.Handle(e.ctx, frame.MustParse(callLine)))
	host := e.host.lines()
	is.Equal(host[0], `{"jsonrpc":"2.0","id":"mcp-stdio/mrtr-input/1","method":"elicitation/create","params":{"mode":"url","message":"Sign in","url":"https://auth.test/x","elicitationId":"mcp-stdio/mrtr-input/1"}}`)
	is.Equal(host[1], `{"jsonrpc":"2.0","id":"mcp-stdio/mrtr-input/2","method":"elicitation/create","params":{"mode":"url","message":"Pay","url":"https://pay.test/","elicitationId":"pay-7"}}`) // kept
	is.True(strings.Contains(e.upstream()[1], `"inputResponses":{"signin":{"action":"accept"},"given":{"action":"accept"}}}`))
}

func TestMRTRRequestStateByteExact(t *testing.T) {
	is := is.New(t)
	state := `"a\u00e9\/b\"c==\n"`
	e := newMRTREnv(t, mrtrHostInit,
		`{"resultType":"input_required","requestState":`+state+`}`,
		done)
	line := `{"jsonrpc":"2.0","id":"c-1","method":"prompts/get","params":{"name":"p","arguments":{"n":1.50},"_meta":{"progressToken":7}}}`
	is.NoErr(e.toServer.Handle(e.ctx, frame.MustParse(line)))
	is.Equal(e.upstream()[1], `{"jsonrpc":"2.0","id":"mcp-stdio/mrtr/1","method":"prompts/get","params":{"name":"p","arguments":{"n":1.50},"_meta":{"progressToken":7},"requestState":`+state+`}}`)
	is.Equal(e.host.lines(), []string{`{"jsonrpc":"2.0","id":"c-1","result":` + done + `}`})
}

func TestMRTRReissueKeepsHeaders(t *testing.T) {
	is := is.New(t)
	e := newMRTREnv(t, mrtrHostInit, `{"resultType":"input_required","requestState":"s"}`, done)
	req := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a"}}`).
		WithHeader("Mcp-Param-Region", "eu").WithHeader("Authorization", "Bearer t")
	is.NoErr(e.toServer.Handle(e.ctx, req))
	sent := e.srv.sent.all()
	is.Equal(len(sent), 2)
	is.Equal(sent[1].Header().Get("Mcp-Param-Region"), "eu")
	is.Equal(sent[1].Header().Get("Authorization"), "Bearer t")
}

func TestMRTRErrorsAndResultsPassThrough(t *testing.T) {
	for _, first := range []string{
		done,
		`{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"Unknown tool"}}`,
	} {
		is := is.New(t)
		e := newMRTREnv(t, mrtrHostInit, first)
		is.NoErr(e.toServer.Handle(e.ctx, frame.MustParse(callLine)))
		is.Equal(e.upstream(), []string{callLine})
		is.Equal(len(e.host.lines()), 1)
		is.True(strings.HasPrefix(e.host.lines()[0], `{"jsonrpc":"2.0","id":1,`)) // the server's answer, untouched
	}
}

func TestMRTRLaterErrorReachesHost(t *testing.T) {
	is := is.New(t)
	e := newMRTREnv(t, mrtrHostInit,
		`{"resultType":"input_required","requestState":"s"}`,
		`{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"bad state"}}`)
	is.NoErr(e.toServer.Handle(e.ctx, frame.MustParse(callLine)))
	is.Equal(e.host.lines(), []string{`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad state"}}`})
}

func TestMRTRReissueStatusError(t *testing.T) {
	is := is.New(t)
	e := newMRTREnv(t, mrtrHostInit, `{"resultType":"input_required","requestState":"s"}`)
	e.srv.answer = func(ctx context.Context, m frame.Message) ([]frame.Message, error) {
		if IsMinted(m.ID()) {
			return nil, &frame.StatusError{Code: 400, Body: []byte(`{"jsonrpc":"2.0","id":` + string(m.ID()) + `,"error":{"code":-32020,"message":"header mismatch"}}`)}
		}
		return e.serve(ctx, m)
	}
	is.NoErr(e.toServer.Handle(e.ctx, frame.MustParse(callLine)))
	is.Equal(e.host.lines(), []string{`{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"header mismatch"}}`})
}

func TestMRTRMalformed(t *testing.T) {
	for _, tt := range []struct{ result, want string }{
		{`{"resultType":"input_required"}`, "the server's input_required result has neither inputRequests nor requestState"},
		{`{"resultType":"input_required","inputRequests":[]}`, "the server's input_required result is malformed"},
		{`{"resultType":"input_required","requestState":7}`, "the server's input_required result is malformed"},
		{`{"resultType":"input_required","inputRequests":{"a":1}}`, "the server's input request is malformed"},
	} {
		t.Run(tt.result, func(t *testing.T) {
			is := is.New(t)
			e := newMRTREnv(t, mrtrHostInit, tt.result)
			is.NoErr(e.toServer.Handle(e.ctx, frame.MustParse(callLine)))
			is.Equal(e.host.lines(), []string{`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"` + tt.want + `"}}`})
		})
	}
}

func TestMRTRPassesWhatItDoesNotBridge(t *testing.T) {
	ask := `{"resultType":"input_required","inputRequests":{"confirm":` + elicitReq + `}}`
	for _, tt := range []struct {
		name string
		era  Era
		line string
	}{
		{"session-era server", EraSession, callLine},
		{"modern host", EraStateless, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`},
		{"other method", EraStateless, `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			e := newMRTREnv(t, mrtrHostInit, ask)
			ConnOf(e.ctx).SetEra(tt.era)
			is.NoErr(e.toServer.Handle(e.ctx, frame.MustParse(tt.line)))
			is.Equal(e.upstream(), []string{tt.line})
			is.Equal(e.host.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":` + ask + `}`}) // untouched
		})
	}
	t.Run("no conn", func(t *testing.T) {
		is := is.New(t)
		e := newMRTREnv(t, mrtrHostInit, ask)
		is.NoErr(e.toServer.Handle(t.Context(), frame.MustParse(callLine)))
		is.Equal(e.host.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":` + ask + `}`})
	})
	t.Run("other traffic", func(t *testing.T) {
		is := is.New(t)
		e := newMRTREnv(t, mrtrHostInit)
		for _, line := range []string{
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`,
			`{"jsonrpc":"2.0","id":"srv-1","result":{}}`,                  // an answer to a server's request
			`{"jsonrpc":"2.0","id":"mcp-stdio/page/1","result":{}}`,       // another stage's id
			`{"jsonrpc":"2.0","id":"mcp-stdio/mrtr-input/9","result":{}}`, // the bridge's, not waited for: dropped
		} {
			is.NoErr(e.toServer.Handle(e.ctx, frame.MustParse(line)))
		}
		is.Equal(len(e.upstream()), 3)
	})
}

// FuzzMRTRInputRequired feeds the bridge arbitrary input_required results
// (untrusted bytes from the server) and checks what it promises whatever
// they hold: no panic, every request the host gets is valid and under a
// minted id, and the call gets exactly one answer, under its own id.
func FuzzMRTRInputRequired(f *testing.F) {
	f.Add(`{"confirm":`+elicitReq+`}`, `"st"`)
	f.Add(`{"a":{"method":"roots/list"},"b":{"method":"sampling/createMessage","params":{"tools":[]}}}`, `"x\u00e9"`)
	f.Add(`{"u":{"method":"elicitation/create","params":{"mode":"url","url":"u","message":"m"}}}`, `null`)
	f.Add(`{}`, `7`)
	f.Add(`[]`, `"s"`)
	f.Add(`{"\"k":{"method":"ping"}}`, `{}`)
	f.Add(`{"a":{"method":"roots/list"},"a":{"method":"sampling/createMessage"}}`, `"s","requestState":"t"`)
	f.Add(`{"a":{"method":"roots/list","params":`+strings.Repeat("[", 600)+strings.Repeat("]", 600)+`}}`, `"s"`)
	f.Fuzz(func(t *testing.T, requests, state string) {
		result := `{"resultType":"input_required","inputRequests":` + requests + `,"requestState":` + state + `}`
		if !json.Valid([]byte(result)) {
			return
		}
		// The server asks again whatever it is sent, so the limits are reached too.
		script := make([]string, 0, 12)
		for range 12 {
			script = append(script, result)
		}
		e := newMRTREnv(t, mrtrHostInit, script...)
		for _, m := range []string{"elicitation/create", "sampling/createMessage", "roots/list"} {
			e.reply(m, `{"action":"accept"}`)
		}
		if err := e.toServer.Handle(e.ctx, frame.MustParse(callLine)); err != nil {
			t.Fatalf("Handle: %v", err)
		}
		answers := 0
		for _, m := range e.host.all() {
			switch m.Kind() {
			case frame.Request:
				if !strings.HasPrefix(string(m.ID()), mrtrInputPrefix) {
					t.Fatalf("a request to the host under a foreign id: %s", m)
				}
			case frame.Result, frame.Error:
				if m.ID() != "1" {
					t.Fatalf("an answer under another id: %s", m)
				}
				answers++
			case frame.Notification:
			default:
				t.Fatalf("the host got an invalid message: %s", m)
			}
		}
		if answers != 1 {
			t.Fatalf("the call got %d answers: %q", answers, e.host.lines())
		}
	})
}
