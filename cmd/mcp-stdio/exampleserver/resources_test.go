package exampleserver

import (
	"testing"

	"github.com/matryer/is"
)

func TestResources(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	c.initialize("2025-11-25", `{}`)
	res := c.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"resources/list"}`).Get("result")
	is.Equal(res.Get("resources.#.uri").Raw, `["example://counter","example://readme"]`)
	res = c.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"resources/templates/list"}`).Get("result")
	is.Equal(res.Get("resourceTemplates.#.uriTemplate").Raw, `["example://echo/{text}"]`)

	read := func(uri string) string {
		return c.roundTrip(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"` + uri + `"}}`).Get("result.contents.0.text").String()
	}
	is.Equal(read("example://counter"), "0")
	c.roundTrip(callTool("4", "echo", `{"text":"a"}`))
	c.roundTrip(callTool("5", "echo", `{}`)) // a failed call still counts
	is.Equal(read("example://counter"), "2")
	is.Equal(read("example://echo/hello%20world"), "hello world")
	is.True(read("example://readme") != "")

	m := c.roundTrip(`{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"example://nope"}}`)
	is.Equal(m.Get("error.code").Int(), int64(-32002)) // the session era's "resource not found"
	m = c.roundTrip(`{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"example://echo/%zz"}}`)
	is.Equal(m.Get("error.code").Int(), int64(-32602))
	m = c.roundTrip(`{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{}}`)
	is.Equal(m.Get("error.code").Int(), int64(-32602))
}

func TestSubscribe(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	c.initialize("2025-11-25", `{}`)
	is.Equal(c.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"example://counter"}}`).Get("result").Raw, `{}`)
	c.send(callTool("2", "echo", `{"text":"x"}`))
	m := c.recv()
	is.Equal(m.Raw, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"example://counter"}}`)
	is.Equal(c.recv().Get("id").Raw, "2")

	is.Equal(c.roundTrip(`{"jsonrpc":"2.0","id":3,"method":"resources/unsubscribe","params":{"uri":"example://counter"}}`).Get("result").Raw, `{}`)
	is.Equal(c.roundTrip(callTool("4", "echo", `{"text":"x"}`)).Get("id").Raw, "4") // no update any more

	m = c.roundTrip(`{"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{"uri":"example://nope"}}`)
	is.Equal(m.Get("error.code").Int(), int64(-32002))
}

func TestPrompts(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	c.initialize("2025-11-25", `{}`)
	res := c.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"prompts/list"}`).Get("result")
	is.Equal(res.Get("prompts.0.name").String(), "greet")
	is.Equal(res.Get("prompts.0.arguments.0.required").Bool(), true)

	res = c.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"greet","arguments":{"name":"Ada"}}}`).Get("result")
	is.Equal(res.Get("messages.0.role").String(), "user")
	is.Equal(res.Get("messages.0.content.text").String(), "Please greet Ada warmly, in one sentence.")

	for _, params := range []string{
		`{"name":"greet"}`,
		`{"name":"greet","arguments":{"name":""}}`,
		`{"name":"other","arguments":{"name":"x"}}`,
	} {
		m := c.roundTrip(`{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":` + params + `}`)
		is.Equal(m.Get("error.code").Int(), int64(-32602))
	}
}

func TestCompletion(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	complete := func(ref, arg string) string {
		m := c.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":` + ref + `,"argument":` + arg + `}}`)
		if m.Get("error").Exists() {
			return m.Get("error.code").Raw
		}
		return m.Get("result.completion").Raw
	}
	greet := `{"type":"ref/prompt","name":"greet"}`
	is.Equal(complete(greet, `{"name":"name","value":"a"}`), `{"hasMore":false,"total":2,"values":["Ada","Alan"]}`)
	is.Equal(complete(greet, `{"name":"name","value":"zz"}`), `{"hasMore":false,"total":0,"values":[]}`)
	is.Equal(complete(`{"type":"ref/resource","uri":"example://echo/{text}"}`, `{"name":"text","value":""}`), `{"hasMore":false,"total":0,"values":[]}`)
	is.Equal(complete(greet, `{"name":"other","value":""}`), "-32602")
	is.Equal(complete(`{"type":"ref/prompt","name":"nope"}`, `{"name":"name","value":""}`), "-32602")
	is.Equal(complete(greet, `{"name":"name"}`), "-32602")
}

func TestPagination(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		name := "session era"
		if stateless {
			name = "2026-07-28"
		}
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			c := start(t, Options{PageSize: 4})
			list := func(cursor string) (names, next string, code int64) {
				params := ""
				if cursor != "" {
					params = `"cursor":` + cursor
				}
				line := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + params + `}}`
				if stateless {
					line = statelessRequest("1", "tools/list", params, `{}`)
				}
				m := c.roundTrip(line)
				return m.Get("result.tools.#.name").Raw, m.Get("result.nextCursor").Raw, m.Get("error.code").Int()
			}
			names, next, _ := list("")
			is.Equal(names, `["echo","add","slow","bytes"]`)
			is.True(next != "")
			names, last, _ := list(next)
			is.Equal(names, `["ask","toggle"]`)
			is.Equal(last, "") // the last page has no cursor
			for _, bad := range []string{`"nope"`, `42`, `"dG9vbHMvbGlzdEAtMQ"` /* tools/list@-1 */, `"cHJvbXB0cy9saXN0QDE"` /* prompts/list@1 */} {
				_, _, code := list(bad)
				is.Equal(code, int64(-32602))
			}
			// A page size bigger than a list: one page.
			m := c.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"prompts/list"}`)
			if stateless {
				m = c.roundTrip(statelessRequest("2", "prompts/list", "", `{}`))
			}
			is.Equal(m.Get("result.prompts.#").Int(), int64(1))
			is.True(!m.Get("result.nextCursor").Exists())
		})
	}
}

func TestPaginationSurvivesToggle(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{PageSize: 6})
	c.send(callTool("1", "toggle", `{}`))
	c.recv()
	c.recv()
	m := c.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	next := m.Get("result.nextCursor").Raw
	c.send(callTool("3", "toggle", `{}`)) // bonus goes away between the pages
	c.recv()
	c.recv()
	m = c.roundTrip(`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":` + next + `}}`)
	is.Equal(m.Get("result.tools").Raw, `[]`)
}
