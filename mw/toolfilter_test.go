package mw

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestToolGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		glob, name string
		want       bool
	}{
		{"echo", "echo", true},
		{"echo", "Echo", false},
		{"echo", "echo2", false},
		{"*", "", true},
		{"*", "anything/at.all", true},
		{"delete_*", "delete_file", true},
		{"delete_*", "undelete_file", false},
		{"*_file", "delete_file", true},
		{"*file*", "a_file_b", true},
		{"git?ub", "github", true},
		{"git?ub", "gitub", false},
		{"?", "é", true}, // one character, two bytes
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{"**", "x", true},
		{"github/*", "github/create_issue", true},
	} {
		if got := ToolGlobMatch(tc.glob, tc.name); got != tc.want {
			t.Errorf("ToolGlobMatch(%q, %q) = %v, want %v", tc.glob, tc.name, got, tc.want)
		}
	}
}

func TestToolFilterWhy(t *testing.T) {
	is := is.New(t)
	f := NewToolFilter([]string{"read_*", "list_*"}, []string{"read_secret*"})
	is.Equal(f.Why("read_file"), "")
	is.Equal(f.Why("list_dir"), "")
	is.Equal(f.Why("write_file"), "no --allow-tool glob names it")
	is.Equal(f.Why("read_secrets"), `--deny-tool "read_secret*" filters it out`) // deny wins
	is.Equal(NewToolFilter(nil, []string{"x"}).Why("y"), "")                      // no allow: all but the denied
}

const filterList = `{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}},` +
	`{"name":"delete_all","inputSchema":{"type":"object"}}, {"name":"add","inputSchema":{}},{"inputSchema":{}}],"nextCursor":"c2"}}`

// A filtered tool is absent from tools/list (every page: each answer is
// filtered), its call is refused here and never reaches the server, and
// everything else passes byte for byte.
func TestFilterTools(t *testing.T) {
	is := is.New(t)
	s := &fakeServer{}
	s.answer = func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		switch m.Method() {
		case "tools/list":
			return []frame.Message{frame.MustParse(strings.Replace(filterList, `"id":7`, `"id":`+string(m.ID()), 1))}, nil
		case "tools/call":
			return []frame.Message{answerWith(m, `{"content":[]}`)}, nil
		}
		return nil, nil
	}
	toServer, client := pipeline(s, FilterTools(ToolFilterOptions{Deny: []string{"delete_*"}}))
	ctx := context.Background()

	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`)))
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"p2","method":"tools/list","params":{"cursor":"c2"}}`)))
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"delete_all","arguments":{}}}`)))
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)))
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)))

	want := `{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"add","inputSchema":{}}],"nextCursor":"c2"}}`
	got := client.lines()
	is.Equal(len(got), 4)
	is.Equal(got[0], want)
	is.Equal(got[1], strings.Replace(want, `"id":7`, `"id":"p2"`, 1)) // the next page too
	is.Equal(got[2], `{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"tool \"delete_all\" is not available: --deny-tool \"delete_*\" filters it out"}}`)
	is.Equal(got[3], `{"jsonrpc":"2.0","id":9,"result":{"content":[]}}`)
	for _, m := range s.sent.all() {
		is.True(!strings.Contains(m.String(), "delete_all")) // never forwarded
	}
	is.Equal(len(s.sent.all()), 4) // two lists, one call, the notification

	// An answer to anything but a remembered tools/list passes as it is,
	// even one that looks like a list.
	is.NoErr(client.Handle(ctx, frame.MustParse(filterList)))
}

// A list with nothing filtered is the server's message itself.
func TestFilterToolsLeavesAnUnfilteredListAlone(t *testing.T) {
	is := is.New(t)
	f := NewToolFilter(nil, []string{"nothing*"})
	in := frame.MustParse(`{"jsonrpc":"2.0","id":1,"result":{"tools":[ {"name":"a"} ,{"name":"b"}]}}`)
	is.Equal(f.filterList(in).String(), in.String())
	all := NewToolFilter(nil, []string{"*"})
	is.Equal(all.filterList(in).String(), `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`)
}

// Whatever a server's tools/list holds, the filtered answer is valid JSON
// of the same id, and no filtered tool remains in its result.tools.
func FuzzFilterToolsList(f *testing.F) {
	for _, s := range []string{
		filterList,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":{"name":"delete_x"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[1,"x",null,{"name":5},{"name":"delete_\u0078"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","name":"delete_b"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[[[[[[{"name":"delete_a"}]]]]]]}}`,
	} {
		f.Add(s)
	}
	filter := NewToolFilter(nil, []string{"delete_*"})
	f.Fuzz(func(t *testing.T, s string) {
		m, err := frame.Parse([]byte(s))
		if err != nil || m.Kind() != frame.Result {
			return
		}
		out := filter.filterList(m)
		if !json.Valid(out.Bytes()) {
			t.Fatalf("invalid JSON out of %q: %q", s, out.Bytes())
		}
		if out.ID() != m.ID() {
			t.Fatalf("id %s became %s", m.ID(), out.ID())
		}
		if !m.Get("result.tools").IsArray() {
			return
		}
		for _, tool := range out.Get("result.tools").Array() {
			if filter.Why(tool.Get("name").String()) != "" && tool.Get("name").Exists() {
				t.Fatalf("filtered tool %s left in %q", tool.Get("name").Raw, out.Bytes())
			}
		}
	})
}
