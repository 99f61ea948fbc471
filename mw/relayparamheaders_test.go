package mw

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// paramTools is a tools/list result with annotated tools.
const paramTools = `{"tools":[` +
	`{"name":"sql","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"shard":{"type":"integer","x-mcp-header":"Shard"},"dry":{"type":"boolean","x-mcp-header":"Dry"},"query":{"type":"string"}}}},` +
	`{"name":"plain","inputSchema":{"type":"object"}}]}`

// modernCtx is a context whose connection speaks 2026-07-28.
func modernCtx(t *testing.T) context.Context {
	return WithConn(t.Context(), NewConn(EraStateless))
}

// toolServer answers tools/list with list and everything else with an
// empty result, unless call says otherwise for a tools/call.
type toolServer struct {
	fakeServer
	mu   sync.Mutex
	list string
	call func(n int, m frame.Message) ([]frame.Message, error) // n: the calls so far, this one included
	n    int
}

func newToolServer(list string) *toolServer {
	s := &toolServer{list: list}
	s.answer = func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		if m.Kind() != frame.Request {
			return nil, nil
		}
		s.mu.Lock()
		list, call := s.list, s.call
		if m.Method() == "tools/call" {
			s.n++
		}
		n := s.n
		s.mu.Unlock()
		switch {
		case m.Method() == "tools/list":
			return []frame.Message{answerWith(m, list)}, nil
		case m.Method() == "tools/call" && call != nil:
			return call(n, m)
		}
		return []frame.Message{answerWith(m, `{"content":[]}`)}, nil
	}
	return s
}

func (s *toolServer) setList(list string) {
	s.mu.Lock()
	s.list = list
	s.mu.Unlock()
}

// paramHeadersOf returns the Mcp-Param-* headers m carries.
func paramHeadersOf(m frame.Message) http.Header {
	out := http.Header{}
	for k, v := range m.Header() {
		if strings.HasPrefix(k, frame.HeaderParamPrefix) {
			out[k] = v
		}
	}
	return out
}

func TestParamHeadersMirror(t *testing.T) {
	is := is.New(t)
	ctx := modernCtx(t)
	srv := newToolServer(paramTools)
	toServer, client := pipeline(&srv.fakeServer, ParamHeaders(ParamHeadersOptions{}))

	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sql","arguments":{"region":"Zürich","shard":42.0,"dry":false,"query":"SELECT 1"}}}`
	is.NoErr(toServer.Handle(ctx, frame.MustParse(call)))
	is.Equal(len(paramHeadersOf(srv.sent.all()[0])), 0) // before a list: no Mcp-Param-*

	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)))
	is.NoErr(toServer.Handle(ctx, frame.MustParse(strings.Replace(call, `"id":2`, `"id":4`, 1))))
	sent := srv.sent.all()[2]
	is.Equal(sent.String(), strings.Replace(call, `"id":2`, `"id":4`, 1)) // the body is untouched
	is.Equal(paramHeadersOf(sent), http.Header{
		"Mcp-Param-Region": {"=?base64?WsO8cmljaA==?="}, // non-ASCII: the sentinel
		"Mcp-Param-Shard":  {"42"},                      // an integer in decimal
		"Mcp-Param-Dry":    {"false"},
	})

	// Missing and null values get no header; other tools none at all.
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sql","arguments":{"region":null,"shard":-7}}}`)))
	is.Equal(paramHeadersOf(srv.sent.all()[3]), http.Header{"Mcp-Param-Shard": {"-7"}})
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"plain","arguments":{"region":"x"}}}`)))
	is.Equal(len(paramHeadersOf(srv.sent.all()[4])), 0)

	is.Equal(len(client.all()), 5) // every request answered once
}

func TestParamHeadersModes(t *testing.T) {
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sql","arguments":{"region":"eu"}}}`
	bad := `{"tools":[{"name":"bad","inputSchema":{"properties":{"a":{"type":"number","x-mcp-header":"A"}}}}]}`
	for _, tt := range []struct {
		name   string
		mode   ParamHeaderMode
		conn   *Conn
		mirror bool
	}{
		{"modern on 2026-07-28", ParamHeadersModern, NewConn(EraStateless), true},
		{"modern on the session era", ParamHeadersModern, NewConn(EraSession), false},
		{"modern with no Conn", ParamHeadersModern, nil, false},
		{"always on the session era", ParamHeadersAlways, NewConn(EraSession), true},
		{"always with no Conn", ParamHeadersAlways, nil, true},
		{"off on 2026-07-28", ParamHeadersOff, NewConn(EraStateless), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ctx := t.Context()
			if tt.conn != nil {
				ctx = WithConn(ctx, tt.conn)
			}
			for _, lst := range []string{paramTools, bad} {
				srv := newToolServer(lst)
				toServer, client := pipeline(&srv.fakeServer, ParamHeaders(ParamHeadersOptions{Mode: tt.mode}))
				is.NoErr(toServer.Handle(ctx, frame.MustParse(list)))
				is.NoErr(toServer.Handle(ctx, frame.MustParse(call)))
				got := paramHeadersOf(srv.sent.all()[1])
				if lst == bad {
					dropped := client.lines()[0] == `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`
					is.Equal(dropped, tt.mirror) // invalid tools are dropped only when the stage acts
					continue
				}
				is.Equal(len(got) == 1, tt.mirror) // headers only when the stage acts
				is.Equal(client.lines()[0], `{"jsonrpc":"2.0","id":1,"result":`+paramTools+`}`)
			}
		})
	}
}

func TestParseParamHeaderMode(t *testing.T) {
	is := is.New(t)
	for _, s := range []string{"modern", "always", "off"} {
		m, err := ParseParamHeaderMode(s)
		is.NoErr(err)
		is.Equal(m.String(), s)
	}
	_, err := ParseParamHeaderMode("Always")
	is.True(err != nil)
	is.Equal(ParamHeaderMode(0), ParamHeadersModern) // the zero value is the default
}

func TestParamHeadersDropInvalid(t *testing.T) {
	is := is.New(t)
	ctx := modernCtx(t)
	list := `{ "tools" : [ {"name":"ok1","x":1.50},` +
		`{"name":"items","inputSchema":{"properties":{"l":{"items":{"type":"string","x-mcp-header":"L"}}}}},` +
		` {"name":"ok2","inputSchema":{"properties":{"r":{"type":"string","x-mcp-header":"R"}}}} ,` +
		`{"name":"dup","inputSchema":{"properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"a"}}}}` +
		`], "nextCursor":"" , "_meta":{"k":"\u00e9"}}`
	srv := newToolServer(list)
	logger, logs := testLogger()
	toServer, client := pipeline(&srv.fakeServer, ParamHeaders(ParamHeadersOptions{Logger: logger}))
	for _, id := range []string{"1", "2"} {
		is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list"}`)))
	}
	want := `{ "tools" : [ {"name":"ok1","x":1.50},` +
		` {"name":"ok2","inputSchema":{"properties":{"r":{"type":"string","x-mcp-header":"R"}}}} ` +
		`], "nextCursor":"" , "_meta":{"k":"\u00e9"}}`
	lines := client.lines()
	is.Equal(lines[0], `{"jsonrpc":"2.0","id":1,"result":`+want+`}`) // the invalid tools deleted, every other byte kept
	is.Equal(lines[1], `{"jsonrpc":"2.0","id":2,"result":`+want+`}`)

	out := logs.String()
	is.Equal(strings.Count(out, "dropping a tool"), 2) // one warning per tool, not per list
	is.True(strings.Contains(out, "tool=items"))
	is.True(strings.Contains(out, "#/properties/l/items: the property is not reachable through properties keys alone"))
	is.True(strings.Contains(out, "tool=dup"))
	is.True(strings.Contains(out, "case-insensitive"))

	// A dropped tool is not mirrored; a kept one is.
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"items","arguments":{"l":["x"]}}}`)))
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ok2","arguments":{"r":"v"}}}`)))
	sent := srv.sent.all()
	is.Equal(len(paramHeadersOf(sent[2])), 0)
	is.Equal(paramHeadersOf(sent[3]), http.Header{"Mcp-Param-R": {"v"}})
}

func TestParamHeadersListChanged(t *testing.T) {
	is := is.New(t)
	ctx := modernCtx(t)
	srv := newToolServer(paramTools)
	toServer, client := pipeline(&srv.fakeServer, ParamHeaders(ParamHeadersOptions{}))
	call := func(id string) http.Header {
		is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"sql","arguments":{"region":"eu"}}}`)))
		sent := srv.sent.all()
		return paramHeadersOf(sent[len(sent)-1])
	}
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)))
	is.Equal(len(call("2")), 1)

	changed := frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	is.NoErr(srv.up.Handle(t.Context(), changed))                     // from any stream: no Conn needed
	is.Equal(client.lines()[len(client.lines())-1], changed.String()) // passed on
	is.Equal(len(call("3")), 0)                                       // forgotten

	// A list sent before a list_changed does not teach.
	srv.answer = func(ctx context.Context, m frame.Message) ([]frame.Message, error) {
		if m.Method() == "tools/list" {
			return []frame.Message{changed, answerWith(m, paramTools)}, nil
		}
		return []frame.Message{answerWith(m, `{}`)}, nil
	}
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)))
	is.Equal(len(call("5")), 0)
}

// mismatchError is the HTTP error a server answers a header mismatch with.
func mismatchError(id frame.ID) error {
	return &frame.StatusError{Code: 400, Body: []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32020,"message":"Mcp-Param-Region missing"}}`)}
}

func TestParamHeadersSelfHeal(t *testing.T) {
	for _, tt := range []struct {
		name   string
		refuse func(m frame.Message) ([]frame.Message, error)
	}{
		{"in an HTTP error", func(m frame.Message) ([]frame.Message, error) { return nil, mismatchError(m.ID()) }},
		{"as an error response", func(m frame.Message) ([]frame.Message, error) {
			return []frame.Message{frame.ErrorResponse(m.ID(), frame.CodeHeaderMismatch, "mismatch")}, nil
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ctx := modernCtx(t)
			srv := newToolServer(paramTools)
			srv.call = func(n int, m frame.Message) ([]frame.Message, error) {
				if n == 1 {
					return tt.refuse(m)
				}
				return []frame.Message{answerWith(m, `{"content":[{"type":"text","text":"ok"}]}`)}, nil
			}
			logger, logs := testLogger()
			toServer, client := pipeline(&srv.fakeServer, ParamHeaders(ParamHeadersOptions{Logger: logger}))
			call := `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"sql","arguments":{"region":"eu","shard":3}}}`
			is.NoErr(toServer.Handle(ctx, frame.MustParse(call)))

			is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","id":"c1","result":{"content":[{"type":"text","text":"ok"}]}}`}) // one answer, the last
			sent := srv.sent.all()
			is.Equal(len(sent), 3)
			is.Equal(sent[0].String(), call)                                // first as the client sent it,
			is.Equal(len(paramHeadersOf(sent[0])), 0)                       // with no schema seen, no headers
			is.Equal(sent[1].Method(), "tools/list")                        // then the stage's own list,
			is.True(IsMinted(sent[1].ID()))                                 // under a minted id
			is.Equal(sent[2].Method(), "tools/call")                        // then the call once more,
			is.True(IsMinted(sent[2].ID()) && sent[2].ID() != sent[1].ID()) // under a new id,
			is.Equal(strings.Replace(sent[2].String(), `"id":`+string(sent[2].ID()), `"id":"c1"`, 1), call)
			is.Equal(paramHeadersOf(sent[2]), http.Header{"Mcp-Param-Region": {"eu"}, "Mcp-Param-Shard": {"3"}}) // with its headers
			is.True(strings.Contains(logs.String(), "retrying once"))

			// What the stage listed is known from now on.
			is.NoErr(toServer.Handle(ctx, frame.MustParse(strings.Replace(call, `"c1"`, `"c2"`, 1))))
			is.Equal(len(paramHeadersOf(srv.sent.all()[3])), 2)
		})
	}
}

func TestParamHeadersSelfHealOnce(t *testing.T) {
	is := is.New(t)
	ctx := modernCtx(t)
	srv := newToolServer(paramTools)
	srv.call = func(_ int, m frame.Message) ([]frame.Message, error) { return nil, mismatchError(m.ID()) }
	toServer, client := pipeline(&srv.fakeServer, ParamHeaders(ParamHeadersOptions{}))
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"sql","arguments":{}}}`)))
	is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","id":9,"error":{"code":-32020,"message":"Mcp-Param-Region missing"}}`}) // the retry's refusal, under the client's id
	is.Equal(len(srv.sent.all()), 3)                                                                                            // call, list, call: no second heal
}

func TestParamHeadersSelfHealListFails(t *testing.T) {
	is := is.New(t)
	ctx := modernCtx(t)
	srv := newToolServer(paramTools)
	srv.answer = func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		if m.Method() == "tools/list" {
			return []frame.Message{frame.ErrorResponse(m.ID(), frame.CodeInternalError, "down")}, nil
		}
		return nil, mismatchError(m.ID())
	}
	logger, logs := testLogger()
	toServer, client := pipeline(&srv.fakeServer, ParamHeaders(ParamHeadersOptions{Logger: logger}))
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"sql"}}`)))
	is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","id":9,"error":{"code":-32020,"message":"Mcp-Param-Region missing"}}`}) // the first refusal
	is.Equal(len(srv.sent.all()), 2)                                                                                            // no retry
	is.True(strings.Contains(logs.String(), "could not list the tools again"))
}

func TestParamHeadersSelfHealPages(t *testing.T) {
	page2 := `{"tools":[{"name":"late","inputSchema":{"properties":{"t":{"type":"string","x-mcp-header":"T"}}}}]}`
	for _, merged := range []bool{false, true} {
		name := "following cursors itself"
		if merged {
			name = "through pagination merge"
		}
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			ctx := modernCtx(t)
			srv := pagedServer(map[string]string{
				"":   `{"tools":[{"name":"sql","inputSchema":{}}],"nextCursor":"p2"}`,
				"p2": page2,
			})
			calls := 0
			list := srv.answer
			srv.answer = func(ctx context.Context, m frame.Message) ([]frame.Message, error) {
				if m.Method() != "tools/call" {
					return list(ctx, m)
				}
				if calls++; calls == 1 {
					return nil, mismatchError(m.ID())
				}
				return []frame.Message{answerWith(m, `{}`)}, nil
			}
			stages := []Middleware{ParamHeaders(ParamHeadersOptions{})}
			if merged {
				stages = append(stages, PaginationMerge(PaginationOptions{}))
			}
			toServer, client := pipeline(srv, stages...)
			is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"late","arguments":{"t":"v"}}}`)))
			is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":{}}`})
			sent := srv.sent.all()
			is.Equal(len(sent), 4) // call, two pages, call
			is.Equal(sent[2].Get("params.cursor").String(), "p2")
			is.Equal(paramHeadersOf(sent[3]), http.Header{"Mcp-Param-T": {"v"}}) // learned from page 2
		})
	}
}

func TestParamHeadersCancelDuringRetry(t *testing.T) {
	is := is.New(t)
	ctx := modernCtx(t)
	srv := newToolServer(paramTools)
	retried := make(chan frame.ID, 1)
	release := make(chan struct{})
	srv.call = func(n int, m frame.Message) ([]frame.Message, error) {
		if n == 1 {
			return nil, mismatchError(m.ID())
		}
		retried <- m.ID()
		<-release
		return []frame.Message{answerWith(m, `{}`)}, nil
	}
	toServer, _ := pipeline(&srv.fakeServer, ParamHeaders(ParamHeadersOptions{}))
	done := make(chan error, 1)
	go func() {
		done <- toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sql"}}`))
	}()
	minted := <-retried
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)))
	close(release)
	is.NoErr(<-done)
	sent := srv.sent.all()
	last := sent[len(sent)-1]
	is.Equal(last.Method(), "notifications/cancelled")
	is.Equal(last.Get("params.requestId").Raw, string(minted)) // the cancel names the request in flight
}

func TestHeaderMismatch(t *testing.T) {
	is := is.New(t)
	body := func(id string, code int) error {
		return &frame.StatusError{Code: 400, Body: []byte(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":` + strconv.Itoa(code) + `,"message":"m"}}`)}
	}
	for _, tt := range []struct {
		err error
		ok  bool
	}{
		{body(`7`, -32020), true},
		{body(`null`, -32020), true},
		{body(`"mcp-stdio/retry/1"`, -32020), true}, // an attempt under a minted id
		{body(`8`, -32020), false},                  // another request's
		{body(`"7"`, -32020), false},                // 7 and "7" differ
		{body(`7`, -32602), false},
		{&frame.StatusError{Code: 400, Body: []byte(`Bad Request`)}, false},
		{frame.ErrStreamEnded, false},
	} {
		r, ok := headerMismatch(tt.err, "7")
		is.Equal(ok, tt.ok)
		if ok {
			is.Equal(r.ID(), frame.ID("7")) // under the call's id
		}
	}
}
