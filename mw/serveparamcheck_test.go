package mw

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// checkTools is a tools/list result for CheckParamHeaders: annotated
// tools, one whose annotations are invalid, one with a nested argument.
const checkTools = `{"tools":[` +
	`{"name":"sql","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"shard":{"type":"integer","x-mcp-header":"Shard"},"dry":{"type":"boolean","x-mcp-header":"Dry"},"query":{"type":"string"}}}},` +
	`{"name":"bad","inputSchema":{"type":"object","properties":{"a":{"type":"number","x-mcp-header":"A"}}}},` +
	`{"name":"nested","inputSchema":{"type":"object","properties":{"opts":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}}}}},` +
	`{"name":"plain","inputSchema":{"type":"object"}}]}`

// ownList is the stage's own tools/list, first one.
const ownList = `{"jsonrpc":"2.0","id":"mcp-stdio/paramcheck/AAAAAAAAAAAAAAAA/1","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`

// checkCall is a 2026-07-28 tools/call under a minted id, as the router
// hands it down.
func checkCall(n int, tool, args string) frame.Message {
	return frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/serve/` + strconv.Itoa(n) + `","method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `,` + modernMeta + `}}`)
}

func TestCheckParamHeaders(t *testing.T) {
	for _, tt := range []struct {
		name   string
		tool   string
		args   string
		header http.Header
		why    string // "" passes
	}{
		{"string", "sql", `{"region":"eu"}`, hdr("Mcp-Param-Region", "eu"), ""},
		{"string differs", "sql", `{"region":"eu"}`, hdr("Mcp-Param-Region", "EU"), "the Mcp-Param-Region header does not match its argument"},
		{"sentinel", "sql", `{"region":"Zürich"}`, hdr("Mcp-Param-Region", "=?base64?WsO8cmljaA==?="), ""},
		{"sentinel for a plain value", "sql", `{"region":"eu"}`, hdr("Mcp-Param-Region", "=?base64?ZXU=?="), ""},
		{"upper-case markers are literal", "sql", `{"region":"eu"}`, hdr("Mcp-Param-Region", "=?BASE64?ZXU=?="), "the Mcp-Param-Region header does not match its argument"},
		{"bad base64", "sql", `{"region":"eu"}`, hdr("Mcp-Param-Region", "=?base64?ZXU?="), "the Mcp-Param-Region header is not valid =?base64?…?="},
		{"integer", "sql", `{"shard":42}`, hdr("Mcp-Param-Shard", "42"), ""},
		{"integer 42.0 in the body", "sql", `{"shard":42.0}`, hdr("Mcp-Param-Shard", "42"), ""},
		{"integer 42.0 in the header", "sql", `{"shard":42}`, hdr("Mcp-Param-Shard", "42.0"), ""},
		{"integer 4.2e1", "sql", `{"shard":42}`, hdr("Mcp-Param-Shard", "4.2e1"), ""},
		{"integer negative", "sql", `{"shard":-7}`, hdr("Mcp-Param-Shard", "-7"), ""},
		{"integer differs", "sql", `{"shard":42}`, hdr("Mcp-Param-Shard", "43"), "the Mcp-Param-Shard header does not match its argument"},
		{"integer not a JSON number", "sql", `{"shard":42}`, hdr("Mcp-Param-Shard", "042"), "the Mcp-Param-Shard header does not match its argument"},
		{"integer hex", "sql", `{"shard":42}`, hdr("Mcp-Param-Shard", "0x2A"), "the Mcp-Param-Shard header does not match its argument"},
		{"integer huge exponent", "sql", `{"shard":1e999999999}`, hdr("Mcp-Param-Shard", "1e999999999"), ""},
		{"integer huge exponent differs", "sql", `{"shard":1e999999999}`, hdr("Mcp-Param-Shard", "10e999999998"), "the Mcp-Param-Shard header does not match its argument"},
		{"boolean", "sql", `{"dry":false}`, hdr("Mcp-Param-Dry", "false"), ""},
		{"boolean true", "sql", `{"dry":true}`, hdr("Mcp-Param-Dry", "true"), ""},
		{"boolean spelled otherwise", "sql", `{"dry":true}`, hdr("Mcp-Param-Dry", "True"), "the Mcp-Param-Dry header does not match its argument"},
		{"boolean differs", "sql", `{"dry":true}`, hdr("Mcp-Param-Dry", "false"), "the Mcp-Param-Dry header does not match its argument"},
		{"all three", "sql", `{"region":"eu","shard":1,"dry":true,"query":"x"}`, hdr("Mcp-Param-Region", "eu", "Mcp-Param-Shard", "1", "Mcp-Param-Dry", "true"), ""},
		{"missing", "sql", `{"region":"eu"}`, hdr(), "the Mcp-Param-Region header is missing"},
		{"one of two missing", "sql", `{"region":"eu","dry":true}`, hdr("Mcp-Param-Region", "eu"), "the Mcp-Param-Dry header is missing"},
		{"sent twice", "sql", `{"region":"eu"}`, hdr("Mcp-Param-Region", "eu", "Mcp-Param-Region", "eu"), "the Mcp-Param-Region header is sent more than once"},
		{"sent twice, names in two cases", "sql", `{"region":"eu"}`, http.Header{"Mcp-Param-Region": {"eu"}, "mcp-param-REGION": {"eu"}}, "the Mcp-Param-Region header is sent more than once"},
		{"name in any case", "sql", `{"region":"eu"}`, http.Header{"mcp-param-REGION": {"eu"}}, ""},
		{"absent argument", "sql", `{}`, hdr("Mcp-Param-Region", "eu"), "the Mcp-Param-Region header is sent for an argument that is absent or null"},
		{"null argument", "sql", `{"region":null}`, hdr("Mcp-Param-Region", "null"), "the Mcp-Param-Region header is sent for an argument that is absent or null"},
		{"null argument, no header", "sql", `{"region":null}`, hdr(), ""},
		{"no arguments", "sql", `null`, hdr(), ""},
		{"object argument gets no header", "sql", `{"region":{"a":1}}`, hdr(), ""},
		{"empty string", "sql", `{"region":""}`, hdr("Mcp-Param-Region", ""), ""},
		{"empty string, no header", "sql", `{"region":""}`, hdr(), "the Mcp-Param-Region header is missing"},
		{"extra header naming no annotation", "sql", `{"query":"x"}`, hdr("Mcp-Param-Query", "y", "Mcp-Param-Other", "z"), ""},
		{"nested", "nested", `{"opts":{"zone":"a"}}`, hdr("Mcp-Param-Zone", "a"), ""},
		{"nested differs", "nested", `{"opts":{"zone":"a"}}`, hdr("Mcp-Param-Zone", "b"), "the Mcp-Param-Zone header does not match its argument"},
		{"invalid annotations: skipped", "bad", `{"a":1.5}`, hdr("Mcp-Param-A", "nonsense"), ""},
		{"no annotations", "plain", `{"region":"x"}`, hdr("Mcp-Param-Region", "y"), ""},
		{"unknown tool", "nope", `{"region":"x"}`, hdr("Mcp-Param-Region", "y"), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			srv := newToolServer(checkTools)
			toServer, client := pipeline(&srv.fakeServer, CheckParamHeaders(ParamCheckOptions{Rand: zeros{}}))
			call := checkCall(1, tt.tool, tt.args).WithHeaders(tt.header)
			err := toServer.Handle(modernCtx(t), call)
			sent := srv.sent.lines()
			is.True(len(sent) >= 1)
			is.Equal(sent[0], ownList) // the stage's own tools/list first
			status, body := refusal(err)
			if tt.why == "" {
				is.NoErr(err)
				is.Equal(sent[1:], []string{call.String()})                                                              // the call passes, byte for byte
				is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","result":{"content":[]}}`}) // and only its answer comes up
				return
			}
			is.Equal(status, 400)
			is.Equal(body, `{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","error":{"code":-32020,"message":"Header mismatch: `+tt.why+`"}}`)
			is.Equal(len(sent), 1)           // the call stops here
			is.Equal(len(client.lines()), 0) // the list's answer never goes up
		})
	}
}

func TestCheckParamHeadersPassesTheRest(t *testing.T) {
	is := is.New(t)
	srv := newToolServer(checkTools)
	toServer, client := pipeline(&srv.fakeServer, CheckParamHeaders(ParamCheckOptions{Rand: zeros{}}))
	ctx := modernCtx(t)
	list := frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/serve/1","method":"tools/list","params":{` + modernMeta + `}}`)
	cancel := frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"mcp-stdio/serve/1"}}`)
	noName := frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/serve/2","method":"tools/call","params":{"arguments":{}}}`).WithHeaders(hdr("Mcp-Param-Region", "x"))
	for _, m := range []frame.Message{list, cancel, noName} {
		is.NoErr(toServer.Handle(ctx, m))
	}
	is.Equal(srv.sent.lines(), []string{list.String(), cancel.String(), noName.String()}) // no tools/list of its own
	is.Equal(len(client.lines()), 2)                                                      // the answers to both requests
}

func TestCheckParamHeadersPages(t *testing.T) {
	is := is.New(t)
	srv := newToolServer("")
	srv.answer = func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		if m.Method() != "tools/list" {
			return []frame.Message{answerWith(m, `{}`)}, nil
		}
		switch m.Get("params.cursor").String() {
		case "":
			return []frame.Message{answerWith(m, `{"tools":[{"name":"plain","inputSchema":{}}],"nextCursor":"p2"}`)}, nil
		case "p2":
			return []frame.Message{answerWith(m, `{"tools":[{"name":"sql","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}],"nextCursor":"p2"}`)}, nil
		}
		return nil, nil
	}
	toServer, _ := pipeline(&srv.fakeServer, CheckParamHeaders(ParamCheckOptions{Rand: zeros{}}))
	status, _ := refusal(toServer.Handle(modernCtx(t), checkCall(1, "sql", `{"region":"eu"}`)))
	is.Equal(status, 400) // the tool on page 2 is checked
	is.Equal(srv.sent.lines(), []string{
		ownList,
		`{"jsonrpc":"2.0","id":"mcp-stdio/paramcheck/AAAAAAAAAAAAAAAA/2","method":"tools/list","params":{"cursor":"p2","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
	}) // a cursor seen before ends the listing
}

func TestCheckParamHeadersMaxPages(t *testing.T) {
	is := is.New(t)
	srv := newToolServer("")
	srv.answer = func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		return []frame.Message{answerWith(m, `{"tools":[],"nextCursor":"`+string(m.ID()[1:len(m.ID())-1])+`"}`)}, nil
	}
	toServer, _ := pipeline(&srv.fakeServer, CheckParamHeaders(ParamCheckOptions{MaxPages: 3, Rand: zeros{}}))
	is.NoErr(toServer.Handle(modernCtx(t), checkCall(1, "sql", `{}`)))
	is.Equal(len(srv.sent.all()), 3+1) // three pages, then the call
}

func TestCheckParamHeadersVersion(t *testing.T) {
	// the stage's tools/list claims the version of the call that needs it
	is := is.New(t)
	srv := newToolServer(checkTools)
	toServer, _ := pipeline(&srv.fakeServer, CheckParamHeaders(ParamCheckOptions{Rand: zeros{}}))
	call := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"plain","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-12-01","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}}`)
	is.NoErr(toServer.Handle(modernCtx(t), call))
	is.Equal(srv.sent.lines()[0], `{"jsonrpc":"2.0","id":"mcp-stdio/paramcheck/AAAAAAAAAAAAAAAA/1","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-12-01","io.modelcontextprotocol/clientCapabilities":{}}}}`)
}

func TestCheckParamHeadersListFails(t *testing.T) {
	for _, tt := range []struct {
		name   string
		answer func(m frame.Message) ([]frame.Message, error)
	}{
		{"error response", func(m frame.Message) ([]frame.Message, error) {
			return []frame.Message{frame.ErrorResponse(m.ID(), frame.CodeMethodNotFound, "no tools")}, nil
		}},
		{"no tools array", func(m frame.Message) ([]frame.Message, error) {
			return []frame.Message{answerWith(m, `{"tools":{}}`)}, nil
		}},
		{"not delivered", func(m frame.Message) ([]frame.Message, error) {
			return nil, frame.ErrUnavailable
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			log, buf := testLogger()
			srv := newToolServer(checkTools)
			inner := srv.answer
			srv.answer = func(ctx context.Context, m frame.Message) ([]frame.Message, error) {
				if m.Method() == "tools/list" {
					return tt.answer(m)
				}
				return inner(ctx, m)
			}
			toServer, client := pipeline(&srv.fakeServer, CheckParamHeaders(ParamCheckOptions{Logger: log, Rand: zeros{}}))
			ctx := modernCtx(t)
			bad := checkCall(1, "sql", `{"region":"eu"}`).WithHeaders(hdr("Mcp-Param-Region", "us"))
			is.NoErr(toServer.Handle(ctx, bad)) // unchecked, not blocked
			is.True(strings.Contains(buf.String(), "level=DEBUG msg=\"tools/list failed: a tools/call passes with its Mcp-Param headers unchecked\""))
			is.NoErr(toServer.Handle(ctx, checkCall(2, "sql", `{}`)))
			var lists int
			for _, m := range srv.sent.all() {
				if m.Method() == "tools/list" {
					lists++
				}
			}
			is.Equal(lists, 2)               // a failure is not kept: each call lists again
			is.Equal(len(client.lines()), 2) // the calls' answers, nothing of the lists
		})
	}
}

func TestCheckParamHeadersCache(t *testing.T) {
	is := is.New(t)
	srv := newToolServer(checkTools)
	toServer, client := pipeline(&srv.fakeServer, CheckParamHeaders(ParamCheckOptions{Rand: zeros{}}))
	ctx := modernCtx(t)
	lists := func() int {
		n := 0
		for _, m := range srv.sent.all() {
			if m.Method() == "tools/list" {
				n++
			}
		}
		return n
	}
	good := func(n int) frame.Message {
		return checkCall(n, "sql", `{"region":"eu"}`).WithHeaders(hdr("Mcp-Param-Region", "eu"))
	}
	is.NoErr(toServer.Handle(ctx, good(1)))
	is.NoErr(toServer.Handle(ctx, good(2)))
	is.Equal(lists(), 1) // listed once

	// The tool changes: region is mirrored into another header.
	srv.setList(`{"tools":[{"name":"sql","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Area"}}}}]}`)
	is.NoErr(toServer.Handle(ctx, good(3))) // still what was learned
	is.Equal(lists(), 1)

	changed := frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	is.NoErr(srv.up.Handle(ctx, changed))
	is.Equal(client.lines()[len(client.lines())-1], changed.String()) // passed on

	status, body := refusal(toServer.Handle(ctx, good(4)))
	is.Equal(lists(), 2) // listed again
	is.Equal(status, 400)
	is.Equal(body, `{"jsonrpc":"2.0","id":"mcp-stdio/serve/4","error":{"code":-32020,"message":"Header mismatch: the Mcp-Param-Area header is missing"}}`)
	is.NoErr(toServer.Handle(ctx, checkCall(5, "sql", `{"region":"eu"}`).WithHeaders(hdr("Mcp-Param-Area", "eu"))))
	is.Equal(lists(), 2)
}

// slowChild is a child that answers when the test says: it records what
// it is sent and hands each message to got.
type slowChild struct {
	up   Late
	sent recorder
	got  chan frame.Message
}

func newSlowChild() *slowChild { return &slowChild{got: make(chan frame.Message, 64)} }

func (c *slowChild) Handle(ctx context.Context, m frame.Message) error {
	c.sent.Handle(ctx, m)
	c.got <- m
	return nil
}

// lists returns the tools/list requests the child was sent.
func (c *slowChild) lists() []frame.Message {
	var out []frame.Message
	for _, m := range c.sent.all() {
		if m.Method() == "tools/list" {
			out = append(out, m)
		}
	}
	return out
}

func slowPipeline(c *slowChild, o ParamCheckOptions) (Handler, *recorder) {
	client := &recorder{}
	d := CheckParamHeaders(o)(Duplex{ToServer: c, ToClient: client})
	c.up.Bind(d.ToClient)
	return d.ToServer, client
}

func TestCheckParamHeadersSingleFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		child := newSlowChild()
		toServer, _ := slowPipeline(child, ParamCheckOptions{})
		conn := NewConn(EraStateless)
		ctx := WithConn(t.Context(), conn)
		defer conn.Close(context.Canceled)

		const n = 8
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			region := "eu"
			if i%2 == 1 {
				region = "us" // disagrees
			}
			call := checkCall(i+1, "sql", `{"region":"eu"}`).WithHeaders(hdr("Mcp-Param-Region", region))
			wg.Go(func() { errs[i] = toServer.Handle(ctx, call) })
		}
		synctest.Wait() // every call waits for the one listing
		is.Equal(len(child.lists()), 1)
		list := child.lists()[0]
		is.NoErr(child.up.Handle(ctx, answerWith(list, checkTools)))
		wg.Wait()
		for i, err := range errs {
			status, _ := refusal(err)
			if i%2 == 1 {
				is.Equal(status, 400)
			} else {
				is.NoErr(err)
			}
		}
		is.Equal(len(child.lists()), 1)
	})
}

func TestCheckParamHeadersListTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		child := newSlowChild()
		toServer, _ := slowPipeline(child, ParamCheckOptions{ListTimeout: time.Second})
		ctx := WithConn(t.Context(), NewConn(EraStateless))
		start := time.Now()
		bad := checkCall(1, "sql", `{"region":"eu"}`).WithHeaders(hdr("Mcp-Param-Region", "us"))
		is.NoErr(toServer.Handle(ctx, bad)) // the child never answers: unchecked after ListTimeout
		is.Equal(time.Since(start), time.Second)
		is.Equal(child.sent.lines()[1], bad.String())
	})
}

func TestCheckParamHeadersChildGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		child := newSlowChild()
		toServer, _ := slowPipeline(child, ParamCheckOptions{})
		conn := NewConn(EraStateless)
		ctx := WithConn(t.Context(), conn)
		done := make(chan error, 1)
		go func() { done <- toServer.Handle(ctx, checkCall(1, "sql", `{}`)) }()
		synctest.Wait()
		conn.Close(frame.ErrUnavailable)
		is.NoErr(<-done) // passed unchecked, at once
		is.Equal(len(child.sent.all()), 2)
	})
}

func TestCheckParamHeadersCallerGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		child := newSlowChild()
		toServer, _ := slowPipeline(child, ParamCheckOptions{})
		conn := NewConn(EraStateless)
		defer conn.Close(context.Canceled)
		ctx, cancel := context.WithCancel(WithConn(t.Context(), conn))
		done := make(chan error, 1)
		go func() { done <- toServer.Handle(ctx, checkCall(1, "sql", `{}`)) }()
		synctest.Wait()
		cancel()
		is.Equal(<-done, context.Canceled) // the call is over
		is.Equal(len(child.sent.all()), 1) // and never reached the child

		// The listing goes on for the next call.
		ctx2 := WithConn(t.Context(), conn)
		go func() { done <- toServer.Handle(ctx2, checkCall(2, "sql", `{"region":"eu"}`)) }()
		synctest.Wait()
		is.NoErr(child.up.Handle(ctx2, answerWith(child.lists()[0], checkTools)))
		status, _ := refusal(<-done)
		is.Equal(status, 400) // checked against the one listing
		is.Equal(len(child.lists()), 1)
	})
}

func FuzzParamHeaderAgreement(f *testing.F) {
	for _, s := range []string{`"eu"`, `"Zürich"`, `""`, `" x "`, `"=?base64?ZXU=?="`, `42`, `42.0`, `-0`, `4.2e1`, `1e400`, `1.5`, `true`, `false`, `null`, `{}`} {
		f.Add(s, "42")
	}
	f.Add(`42`, "42.0")
	f.Add(`"a"`, "=?base64?YQ==?=")
	f.Add(`1`, "1e-999999999999")
	f.Fuzz(func(t *testing.T, raw, header string) {
		if !gjson.Valid(raw) || !utf8.ValidString(raw) { // frame.Parse makes every message UTF-8
			return
		}
		arg := gjson.Parse(raw)
		// What the relay sends for a value always agrees with it.
		if text, ok := headerText(arg); ok {
			sent := frame.EncodeHeaderValue(text)
			got, err := frame.DecodeHeaderValue(sent)
			if err != nil || !argumentAgrees(arg, got) {
				t.Fatalf("%s: the relay's header %q does not agree (%v)", raw, sent, err)
			}
		}
		// Any header value is judged without panicking; agreement is
		// symmetric between numbers.
		got, err := frame.DecodeHeaderValue(header)
		if err != nil {
			return
		}
		agrees := argumentAgrees(arg, got)
		if arg.Type == gjson.Number && isJSONNumber(got) && numbersEqual(got, arg.Raw) != agrees {
			t.Fatalf("numbersEqual(%s, %s) is not symmetric", raw, got)
		}
	})
}

// Over AwaitAnswers, as in a pooled child's entry chain, the stage's
// tools/list waits there for its answer, and the check holds the same.
func TestCheckParamHeadersOverAwaitAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		child := newSlowChild()
		conn := NewConn(EraStateless)
		defer conn.Close(context.Canceled)
		client := &recorder{}
		d := Chain(CheckParamHeaders(ParamCheckOptions{Rand: zeros{}}), AwaitAnswers(conn))(Duplex{ToServer: child, ToClient: client})
		child.up.Bind(d.ToClient)
		ctx := WithConn(t.Context(), conn)
		done := make(chan error, 1)
		go func() {
			done <- d.ToServer.Handle(ctx, checkCall(1, "sql", `{"region":"eu"}`).WithHeaders(hdr("Mcp-Param-Region", "us")))
		}()
		synctest.Wait()
		is.NoErr(child.up.Handle(ctx, answerWith(child.lists()[0], checkTools)))
		status, _ := refusal(<-done)
		is.Equal(status, 400)
		is.Equal(len(client.all()), 0) // the list's answer stopped at the stage
	})
}
