package exampleserver

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"
)

// callTool is a tools/call line.
func callTool(id, name, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`
}

func TestToolsList(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	c.initialize("2025-11-25", `{}`)
	res := c.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`).Get("result")
	var names []string
	for _, tool := range res.Get("tools").Array() {
		names = append(names, tool.Get("name").String())
		is.Equal(tool.Get("inputSchema.type").String(), "object") // every input schema is an object schema
		is.True(tool.Get("description").String() != "")
	}
	is.Equal(names, []string{"echo", "add", "slow", "bytes", "ask", "toggle"})
	is.True(!res.Get("nextCursor").Exists())
}

// With ParamHeader the echo tool's text argument carries x-mcp-header
// "Text"; without, no tool has an annotation.
func TestToolsListParamHeader(t *testing.T) {
	is := is.New(t)
	for _, on := range []bool{false, true} {
		c := start(t, Options{ParamHeader: on})
		c.initialize("2025-11-25", `{}`)
		tools := c.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`).Get("result.tools")
		is.Equal(strings.Contains(tools.Raw, "x-mcp-header"), on) // only with the option
		if on {
			is.Equal(tools.Get(`0.inputSchema.properties.text.x-mcp-header`).String(), "Text")
		}
	}
}

func TestTools(t *testing.T) {
	for _, tc := range []struct {
		name, call string
		want       string // the result, or the error code
	}{
		{"echo", callTool("1", "echo", `{"text":"héllo <b>"}`),
			`{"content":[{"text":"héllo <b>","type":"text"}]}`},
		{"add", callTool("1", "add", `{"a":2,"b":0.5}`),
			`{"content":[{"text":"2.5","type":"text"}],"structuredContent":{"sum":2.5}}`},
		{"add overflow", callTool("1", "add", `{"a":1e308,"b":1e308}`),
			`{"content":[{"text":"the sum of 1e+308 and 1e+308 overflows","type":"text"}],"isError":true}`},
		{"bytes", callTool("1", "bytes", `{"n":5}`),
			`{"content":[{"text":"xxxxx","type":"text"}]}`},
		{"bytes zero", callTool("1", "bytes", `{"n":0}`),
			`{"content":[{"text":"","type":"text"}]}`},
		{"slow instant", callTool("1", "slow", `{"seconds":0,"steps":2}`),
			`{"content":[{"text":"slow: finished 2 steps in 0 seconds","type":"text"}]}`},
		{"ask without elicitation", callTool("1", "ask", `{"question":"?"}`),
			`{"content":[{"text":"ask needs a client that supports form elicitation, and this client did not declare the elicitation capability","type":"text"}],"isError":true}`},
		{"echo missing text", callTool("1", "echo", `{}`), "-32602"},
		{"echo wrong type", callTool("1", "echo", `{"text":1}`), "-32602"},
		{"add missing b", callTool("1", "add", `{"a":1}`), "-32602"},
		{"add string", callTool("1", "add", `{"a":"1","b":2}`), "-32602"},
		{"bytes too many", callTool("1", "bytes", `{"n":67108865}`), "-32602"},
		{"bytes negative", callTool("1", "bytes", `{"n":-1}`), "-32602"},
		{"bytes fraction", callTool("1", "bytes", `{"n":1.5}`), "-32602"},
		{"slow zero steps", callTool("1", "slow", `{"steps":0}`), "-32602"},
		{"slow too long", callTool("1", "slow", `{"seconds":3601}`), "-32602"},
		{"arguments not an object", callTool("1", "echo", `"x"`), "-32602"},
		{"unknown tool", callTool("1", "nope", `{}`), "-32602"},
		{"bonus while off", callTool("1", "bonus", `{}`), "-32602"},
		{"no name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`, "-32602"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			c := start(t, Options{})
			c.initialize("2025-11-25", `{}`)
			m := c.roundTrip(tc.call)
			if strings.HasPrefix(tc.want, "-") {
				is.Equal(m.Get("error.code").Raw, tc.want)
				return
			}
			is.Equal(m.Get("result").Raw, tc.want)
		})
	}
}

func TestBytesExactSize(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	const n = 3<<20 + 7
	m := c.roundTrip(callTool("1", "bytes", `{"n":3145735}`))
	is.Equal(len(m.Get("result.content.0.text").String()), n)
}

func TestBytesCapIsConfigurable(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{maxBytes: 10})
	is.Equal(c.roundTrip(callTool("1", "bytes", `{"n":11}`)).Get("error.code").Int(), int64(-32602))
}

func TestProgressThenResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		c := start(t, Options{})
		c.initialize("2025-11-25", `{}`)
		c.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow","arguments":{"seconds":3,"steps":3},"_meta":{"progressToken":"tok-1.50"}}}`)
		for i := 1; i <= 3; i++ {
			m := c.recv()
			is.Equal(m.Get("method").String(), "notifications/progress")
			is.Equal(m.Get("params.progressToken").Raw, `"tok-1.50"`)
			is.Equal(m.Get("params.progress").Int(), int64(i))
			is.Equal(m.Get("params.total").Int(), int64(3))
		}
		m := c.recv()
		is.Equal(m.Get("id").Raw, "9")
		is.Equal(m.Get("result.content.0.text").String(), "slow: finished 3 steps in 3 seconds")
	})
}

func TestProgressTokenEchoedRaw(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"seconds":0,"steps":1},"_meta":{"progressToken":1.50}}}`)
	is.Equal(c.recv().Get("params.progressToken").Raw, `1.50`)
	is.Equal(c.recv().Get("id").Raw, `1`)
}

func TestSlowLogsAtTheLevelSet(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{Name: "ex"})
	c.initialize("2025-11-25", `{}`)
	is.Equal(c.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"bogus"}}`).Get("error.code").Int(), int64(-32602))
	is.Equal(c.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`).Get("result").Raw, `{}`)
	c.send(callTool("3", "slow", `{"seconds":0,"steps":1}`))
	m := c.recv()
	is.Equal(m.Raw, `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"slow: step 1 of 1","level":"info","logger":"ex"}}`)
	is.Equal(c.recv().Get("id").Raw, "3")
	c.roundTrip(`{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"error"}}`)
	is.Equal(c.roundTrip(callTool("5", "slow", `{"seconds":0,"steps":1}`)).Get("id").Raw, "5") // no log this time
}

func TestAskSessionEraRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name, version, answer, want string
		withMode                    bool
	}{
		{"accept", "2025-11-25", `{"result":{"action":"accept","content":{"answer":"blue"}}}`, "The user answered: blue", true},
		{"decline", "2025-06-18", `{"result":{"action":"decline"}}`, "The user declined to answer.", false},
		{"cancel", "2025-11-25", `{"result":{"action":"cancel"}}`, "The user dismissed the question.", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			c := start(t, Options{})
			c.initialize(tc.version, `{"elicitation":{}}`)
			c.send(callTool(`"q"`, "ask", `{"question":"Favourite colour?"}`))
			req := c.recv() // the server asks the client
			is.Equal(req.Get("method").String(), "elicitation/create")
			is.Equal(req.Get("params.message").String(), "Favourite colour?")
			is.Equal(req.Get("params.requestedSchema.properties.answer.type").String(), "string")
			is.Equal(req.Get("params.mode").Exists(), tc.withMode)
			is.True(req.Get("id").Exists())
			// The client answers under the server's id.
			c.send(`{"jsonrpc":"2.0","id":` + req.Get("id").Raw + `,` + tc.answer[1:])
			m := c.recv()
			is.Equal(m.Get("id").Raw, `"q"`)
			is.Equal(m.Get("result.content.0.text").String(), tc.want)
			is.True(!m.Get("result.isError").Exists())
		})
	}
}

func TestAskSessionEraClientError(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	c.initialize("2025-11-25", `{"elicitation":{"form":{}}}`)
	c.send(callTool("1", "ask", `{"question":"?"}`))
	req := c.recv()
	c.send(`{"jsonrpc":"2.0","id":` + req.Get("id").Raw + `,"error":{"code":-1,"message":"no UI"}}`)
	m := c.recv()
	is.Equal(m.Get("result.isError").Bool(), true)
	is.Equal(m.Get("result.content.0.text").String(), "the client could not ask the question: no UI")
}

func TestAskURLOnlyClient(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	c.initialize("2025-11-25", `{"elicitation":{"url":{}}}`)
	is.Equal(c.roundTrip(callTool("1", "ask", `{"question":"?"}`)).Get("result.isError").Bool(), true)
}

func TestAskCancelledWhileWaiting(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	c.initialize("2025-11-25", `{"elicitation":{}}`)
	c.send(callTool("7", "ask", `{"question":"?"}`))
	req := c.recv()
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)
	// The server withdraws its own request.
	m := c.recv()
	is.Equal(m.Get("method").String(), "notifications/cancelled")
	is.Equal(m.Get("params.requestId").Raw, req.Get("id").Raw)
	// A late answer is ignored, and the cancelled call gets no response.
	c.send(`{"jsonrpc":"2.0","id":` + req.Get("id").Raw + `,"result":{"action":"decline"}}`)
	err, rest := c.finish()
	is.NoErr(err)
	is.Equal(len(rest), 0)
}

func TestAskPendingWhenStdinCloses(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	c.initialize("2025-11-25", `{"elicitation":{}}`)
	c.send(callTool("7", "ask", `{"question":"?"}`))
	c.recv()
	err, rest := c.finish()
	is.NoErr(err)
	is.Equal(len(rest), 1)
	is.Equal(gjson.Get(rest[0], "result.isError").Bool(), true)
}

func TestManyAsksDoNotBlockTheReader(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	c.initialize("2025-11-25", `{"elicitation":{}}`)
	// More asks than handler slots: each gives its slot back while it
	// waits, so the reader keeps reading and the answers get through.
	const n = maxHandlers + 8
	for i := range n {
		c.sendf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"ask","arguments":{"question":"q"}}}`, i)
	}
	asks := 0
	results := 0
	for results < n {
		m := c.recv()
		switch {
		case m.Get("method").String() == "elicitation/create":
			asks++
			c.send(`{"jsonrpc":"2.0","id":` + m.Get("id").Raw + `,"result":{"action":"decline"}}`)
		case m.Get("result").Exists():
			results++
		}
	}
	// Asks beyond maxParked fail fast as tool errors instead of waiting.
	is.True(asks >= maxParked)
}

func TestToggle(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	c.initialize("2025-11-25", `{}`)
	c.send(callTool("1", "toggle", `{}`))
	m := c.recv()
	is.Equal(m.Raw, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`) // the change is announced first
	m = c.recv()
	is.Equal(m.Get("result.content.0.text").String(), "The bonus tool is now available.")
	tools := c.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`).Get("result.tools.#.name").Raw
	is.Equal(tools, `["echo","add","slow","bytes","ask","toggle","bonus"]`)
	is.Equal(c.roundTrip(callTool("3", "bonus", `{}`)).Get("result.content.0.text").String(), "You found the bonus tool.")
	c.send(callTool("4", "toggle", `{}`))
	is.Equal(c.recv().Get("method").String(), "notifications/tools/list_changed")
	is.Equal(c.recv().Get("result.content.0.text").String(), "The bonus tool was removed.")
	tools = c.roundTrip(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`).Get("result.tools.#.name").Raw
	is.Equal(tools, `["echo","add","slow","bytes","ask","toggle"]`)
}
