package mw

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// pagedServer answers a list request with pages[cursor] ("" for no cursor).
// A page that is not a result object is sent as the whole response, under
// the request's id.
func pagedServer(pages map[string]string) *fakeServer {
	return &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		if m.Kind() != frame.Request {
			return nil, nil
		}
		page, ok := pages[m.Get("params.cursor").String()]
		if !ok {
			return []frame.Message{frame.ErrorResponse(m.ID(), frame.CodeInvalidParams, "bad cursor")}, nil
		}
		if strings.HasPrefix(page, `{"jsonrpc"`) {
			r, err := frame.MustParse(page).WithID(m.ID())
			return []frame.Message{r}, err
		}
		return []frame.Message{answerWith(m, page)}, nil
	}}
}

func TestPaginationMergesAllLists(t *testing.T) {
	for _, tt := range []struct{ method, key string }{
		{"tools/list", "tools"},
		{"resources/list", "resources"},
		{"resources/templates/list", "resourceTemplates"},
		{"prompts/list", "prompts"},
	} {
		t.Run(tt.method, func(t *testing.T) {
			is := is.New(t)
			srv := pagedServer(map[string]string{
				"":   `{"` + tt.key + `":[{"name":"a"},{"name":"b"}],"nextCursor":"c2"}`,
				"c2": `{"` + tt.key + `":[{"name":"c"}],"nextCursor":"c3"}`,
				"c3": `{"` + tt.key + `":[ {"name":"d"} , {"name":"e"} ]}`,
			})
			toServer, client := pipeline(srv, PaginationMerge(PaginationOptions{}))
			req := `{"jsonrpc":"2.0","id":7,"method":"` + tt.method + `","params":{"_meta":{"progressToken":"p"}}}`
			is.NoErr(toServer.Handle(t.Context(), frame.MustParse(req)))

			is.Equal(client.lines(), []string{
				`{"jsonrpc":"2.0","id":7,"result":{"` + tt.key + `":[{"name":"a"},{"name":"b"},{"name":"c"},{"name":"d"} , {"name":"e"}]}}`,
			})
			sent := srv.sent.all()
			is.Equal(len(sent), 3) // three page requests
			for i, m := range sent {
				is.True(IsMinted(m.ID()))                                    // page requests go out under minted ids
				is.Equal(m.Method(), tt.method)                              // same method
				is.Equal(m.Get("params._meta").Raw, `{"progressToken":"p"}`) // the client's params are kept
				if i == 0 {
					is.True(!m.Get("params.cursor").Exists()) // page 1 has no cursor
					want := strings.Replace(req, `"id":7`, `"id":`+string(m.ID()), 1)
					is.Equal(m.String(), want) // page 1 is the client's bytes under another id
				}
			}
			is.Equal(sent[1].Get("params.cursor").Raw, `"c2"`)
			is.Equal(sent[2].Get("params.cursor").Raw, `"c3"`)
			is.True(sent[0].ID() != sent[1].ID() && sent[1].ID() != sent[2].ID()) // fresh id per page
		})
	}
}

func TestPaginationKeepsPageOneBytes(t *testing.T) {
	is := is.New(t)
	srv := pagedServer(map[string]string{
		"":  `{"_meta":{"io.example/x":1.50},"tools":[{"name":"a","n":1.50}],"nextCursor":"b","z":"\u00e9"}`,
		"b": `{"_meta":{"other":true},"tools":[{"name":"b"}],"nextCursor":""}`,
	})
	toServer, client := pipeline(srv, PaginationMerge(PaginationOptions{}))
	is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":"s","method":"tools/list","params":{}}`)))
	is.Equal(client.lines(), []string{
		`{"jsonrpc":"2.0","id":"s","result":{"_meta":{"io.example/x":1.50},"tools":[{"name":"a","n":1.50},{"name":"b"}],"z":"\u00e9"}}`,
	})
}

func TestPaginationSinglePage(t *testing.T) {
	is := is.New(t)
	srv := pagedServer(map[string]string{"": `{"tools":[{"name":"a"}], "extra": 1.0}`})
	toServer, client := pipeline(srv, PaginationMerge(PaginationOptions{}))
	is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)))
	is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}], "extra": 1.0}}`})
	is.Equal(len(srv.sent.all()), 1)
}

func TestPaginationEmptyPages(t *testing.T) {
	is := is.New(t)
	srv := pagedServer(map[string]string{
		"":  `{"prompts":[],"nextCursor":"b"}`,
		"b": `{"prompts":[{"name":"x"}],"nextCursor":"c"}`,
		"c": `{"prompts":[ ]}`,
	})
	toServer, client := pipeline(srv, PaginationMerge(PaginationOptions{}))
	is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"prompts/list"}`)))
	is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":{"prompts":[{"name":"x"}]}}`})
}

func TestPaginationPassesThrough(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"abc"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":null}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","method":"tools/list"}`,
	} {
		t.Run(line, func(t *testing.T) {
			is := is.New(t)
			srv := &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
				if m.Kind() != frame.Request {
					return nil, nil
				}
				return []frame.Message{answerWith(m, `{"tools":[],"nextCursor":"more"}`)}, nil
			}}
			toServer, client := pipeline(srv, PaginationMerge(PaginationOptions{}))
			is.NoErr(toServer.Handle(t.Context(), frame.MustParse(line)))
			is.Equal(srv.sent.lines(), []string{line}) // sent untouched
			for _, m := range client.all() {
				is.Equal(m.ID(), frame.ID("1")) // answered under the client's id
				is.Equal(m.Get("result.nextCursor").Str, "more")
			}
		})
	}
}

func TestPaginationPageCap(t *testing.T) {
	is := is.New(t)
	log, logs := testLogger()
	var n int
	srv := &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		n++
		return []frame.Message{answerWith(m, `{"tools":[`+decimal(n)+`],"nextCursor":"c`+decimal(n)+`"}`)}, nil
	}}
	toServer, client := pipeline(srv, PaginationMerge(PaginationOptions{MaxPages: 3, Logger: log}))
	is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)))
	is.Equal(n, 3) // stopped at the cap
	is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":{"tools":[1,2,3]}}`})
	is.True(strings.Contains(logs.String(), "level=WARN msg=\"list truncated at the page cap\""))
}

func TestPaginationDefaultPageCap(t *testing.T) {
	is := is.New(t)
	var n int
	srv := &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		n++
		return []frame.Message{answerWith(m, `{"tools":[0],"nextCursor":"c`+decimal(n)+`"}`)}, nil
	}}
	toServer, client := pipeline(srv, PaginationMerge(PaginationOptions{}))
	is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)))
	is.Equal(n, DefaultMaxPages)
	is.Equal(len(client.all()[0].Get("result.tools").Array()), DefaultMaxPages)
}

func TestPaginationRepeatedCursor(t *testing.T) {
	is := is.New(t)
	log, logs := testLogger()
	srv := pagedServer(map[string]string{
		"":  `{"tools":[1],"nextCursor":"a"}`,
		"a": `{"tools":[2],"nextCursor":"b"}`,
		"b": `{"tools":[3],"nextCursor":"a"}`,
	})
	toServer, client := pipeline(srv, PaginationMerge(PaginationOptions{Logger: log}))
	is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)))
	is.Equal(len(srv.sent.all()), 3) // the loop was noticed
	is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":{"tools":[1,2,3]}}`})
	is.True(strings.Contains(logs.String(), "repeated a list cursor"))
}

func TestPaginationPartialOnLaterFailure(t *testing.T) {
	t.Run("JSON-RPC error on page 2", func(t *testing.T) {
		is := is.New(t)
		log, logs := testLogger()
		srv := pagedServer(map[string]string{
			"":  `{"tools":[1],"nextCursor":"a"}`,
			"a": `{"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"db down"}}`,
		})
		toServer, client := pipeline(srv, PaginationMerge(PaginationOptions{Logger: log}))
		is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)))
		is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":{"tools":[1]}}`})
		is.True(strings.Contains(logs.String(), "level=WARN"))
	})
	t.Run("delivery failure on page 3", func(t *testing.T) {
		is := is.New(t)
		var n int
		srv := &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
			n++
			if n == 3 {
				return nil, &frame.StatusError{Code: 502}
			}
			return []frame.Message{answerWith(m, `{"tools":[`+decimal(n)+`],"nextCursor":"c`+decimal(n)+`"}`)}, nil
		}}
		toServer, client := pipeline(srv, PaginationMerge(PaginationOptions{}))
		is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)))
		is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":{"tools":[1,2]}}`})
	})
	t.Run("page 2 without the list", func(t *testing.T) {
		is := is.New(t)
		srv := pagedServer(map[string]string{
			"":  `{"tools":[1],"nextCursor":"a"}`,
			"a": `{"prompts":[2]}`,
		})
		toServer, client := pipeline(srv, PaginationMerge(PaginationOptions{}))
		is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)))
		is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":{"tools":[1]}}`})
	})
	t.Run("no answer on page 2", func(t *testing.T) {
		is := is.New(t)
		var n int
		srv := &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
			n++
			if n == 2 {
				return nil, nil
			}
			return []frame.Message{answerWith(m, `{"tools":[1],"nextCursor":"a"}`)}, nil
		}}
		toServer, client := pipeline(srv, PaginationMerge(PaginationOptions{}))
		is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)))
		is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","id":1,"result":{"tools":[1]}}`})
	})
}

func TestPaginationPageOneError(t *testing.T) {
	t.Run("JSON-RPC error goes to the client under its id", func(t *testing.T) {
		is := is.New(t)
		srv := pagedServer(map[string]string{
			"": `{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"no tools","data":{"v":1.50}}}`,
		})
		toServer, client := pipeline(srv, PaginationMerge(PaginationOptions{}))
		is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":"x","method":"tools/list"}`)))
		is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"no tools","data":{"v":1.50}}}`})
	})
	t.Run("a result without the list goes to the client as is", func(t *testing.T) {
		is := is.New(t)
		srv := pagedServer(map[string]string{"": `{"weird":true,"nextCursor":"a"}`})
		toServer, client := pipeline(srv, PaginationMerge(PaginationOptions{}))
		is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)))
		is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","id":2,"result":{"weird":true,"nextCursor":"a"}}`})
	})
	t.Run("Go error is returned", func(t *testing.T) {
		is := is.New(t)
		srv := &fakeServer{answer: func(context.Context, frame.Message) ([]frame.Message, error) {
			return nil, &frame.StatusError{Code: 404}
		}}
		toServer, client := pipeline(srv, PaginationMerge(PaginationOptions{}))
		err := toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
		var st *frame.StatusError
		is.True(errors.As(err, &st))
		is.Equal(st.Code, 404)
		is.Equal(len(client.all()), 0)
	})
	t.Run("no answer is an error", func(t *testing.T) {
		is := is.New(t)
		srv := &fakeServer{}
		toServer, _ := pipeline(srv, PaginationMerge(PaginationOptions{}))
		err := toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
		is.True(errors.Is(err, frame.ErrStreamEnded))
	})
}

func TestPaginationProgressPassesDuringMerge(t *testing.T) {
	is := is.New(t)
	var n int
	srv := &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		n++
		progress := frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":` + decimal(n) + `}}`)
		next := `,"nextCursor":"c` + decimal(n) + `"`
		if n == 2 {
			next = ""
		}
		return []frame.Message{progress, answerWith(m, `{"tools":[`+decimal(n)+`]`+next+`}`)}, nil
	}}
	toServer, client := pipeline(srv, PaginationMerge(PaginationOptions{}))
	is.NoErr(toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":"p"}}}`)))
	is.Equal(client.lines(), []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":2}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[1,2]}}`,
	})
}

func TestPaginationRetargetsCancel(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	page2 := make(chan frame.ID, 1)
	release := make(chan struct{})
	var cancels recorder
	var n int
	srv := &fakeServer{answer: func(ctx context.Context, m frame.Message) ([]frame.Message, error) {
		if m.Kind() == frame.Notification {
			cancels.Handle(ctx, m)
			return nil, nil
		}
		n++
		if n == 2 {
			page2 <- m.ID()
			<-release
			return []frame.Message{answerWith(m, `{"tools":[2]}`)}, nil
		}
		return []frame.Message{answerWith(m, `{"tools":[1],"nextCursor":"a"}`)}, nil
	}}
	toServer, client := pipeline(srv, PaginationMerge(PaginationOptions{}))
	done := make(chan error, 1)
	go func() {
		done <- toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`))
	}()
	id := <-page2

	is.NoErr(toServer.Handle(ctx, cancelFor("5")))
	is.NoErr(toServer.Handle(ctx, cancelFor("6"))) // not being merged: untouched
	close(release)
	is.NoErr(<-done)

	is.Equal(cancels.lines(), []string{
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + string(id) + `,"reason":"user"}}`,
		cancelFor("6").String(),
	})
	is.Equal(len(client.all()), 1)
}

func TestPaginationConcurrentMerges(t *testing.T) {
	is := is.New(t)
	srv := pagedServer(map[string]string{
		"":  `{"tools":[1],"nextCursor":"a"}`,
		"a": `{"tools":[2]}`,
	})
	toServer, client := pipeline(srv, PaginationMerge(PaginationOptions{}))
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			_ = toServer.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":`+decimal(i)+`,"method":"tools/list"}`))
		})
	}
	wg.Wait()
	got := client.all()
	is.Equal(len(got), 20)
	for _, m := range got {
		is.Equal(m.Get("result.tools").Raw, `[1,2]`)
		is.True(!IsMinted(m.ID()))
	}
}

func decimal(n int) string { return frame.IntID(int64(n)).String() }

func FuzzPaginationMerge(f *testing.F) {
	f.Add(`{"tools":[1,2],"nextCursor":"a"}`, `{"tools":[3]}`)
	f.Add(`{"tools":[],"nextCursor":"a"}`, `{"tools":[ ]}`)
	f.Add(`{"tools":[{"a":"]"}],"nextCursor":"a","x":1.50}`, `{"tools":[{"b":"["}],"nextCursor":""}`)
	f.Add(`{"tools":{"no":"array"},"nextCursor":"a"}`, `null`)
	f.Add(`[1]`, `"s"`)
	f.Add(`{"tools":[1],"nextCursor":7}`, `{"tools":[2],"nextCursor":"a"}`)
	f.Add(`{"tools":[1],"tools":[9],"nextCursor":"a","nextCursor":"b"}`, `{"tools":[2]}`)
	f.Add(`{"tools":[`+strings.Repeat("[", 600)+strings.Repeat("]", 600)+`],"nextCursor":"a"}`, `{"tools":[2]}`)
	f.Fuzz(func(t *testing.T, page1, page2 string) {
		if !gjson.Valid(page1) || !gjson.Valid(page2) {
			return
		}
		pages := []string{page1, page2}
		var n int
		srv := &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
			if n >= len(pages) {
				return nil, errors.New("no more pages")
			}
			p := pages[n]
			n++
			a := answerWith(m, p)
			if a.Kind() == frame.Invalid {
				// A transport never delivers an invalid answer: it stands
				// in for one with an error.
				a = frame.ErrorResponse(m.ID(), frame.CodeInternalError, "invalid response")
			}
			return []frame.Message{a}, nil
		}}
		toServer, client := pipeline(srv, PaginationMerge(PaginationOptions{MaxPages: 3}))
		err := toServer.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		got := client.all()
		if err != nil {
			if len(got) != 0 {
				t.Fatalf("error %v and an answer", err)
			}
			return
		}
		if len(got) != 1 {
			t.Fatalf("%d answers", len(got))
		}
		if got[0].ID() != "1" || !gjson.Valid(got[0].String()) {
			t.Fatalf("bad answer %s", got[0])
		}
	})
}
