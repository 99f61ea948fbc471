package exampleserver

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// FuzzServe feeds arbitrary stdin to the server. Whatever arrives, Serve
// must not panic, must return nil at the end of the input, and every byte
// it writes must belong to a valid one-line JSON-RPC message.
func FuzzServe(f *testing.F) {
	stateless := func(id, method, params string) string { return statelessRequest(id, method, params, elicitCaps) }
	for _, session := range [][]string{
		{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"dG9vbHMvbGlzdEAy"}}`,
			callTool("3", "echo", `{"text":"hi"}`),
			callTool("4", "add", `{"a":1,"b":2}`),
			`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{"seconds":0,"steps":3},"_meta":{"progressToken":"p"}}}`,
			callTool("6", "bytes", `{"n":100}`),
			callTool(`"a"`, "ask", `{"question":"?"}`),
			`{"jsonrpc":"2.0","id":"srv-1","result":{"action":"accept","content":{"answer":"x"}}}`,
			callTool("7", "toggle", `{}`),
			callTool("8", "bonus", `{}`),
			`{"jsonrpc":"2.0","id":9,"method":"resources/subscribe","params":{"uri":"example://counter"}}`,
			`{"jsonrpc":"2.0","id":10,"method":"resources/read","params":{"uri":"example://echo/a%20b"}}`,
			`{"jsonrpc":"2.0","id":11,"method":"prompts/get","params":{"name":"greet","arguments":{"name":"Ada"}}}`,
			`{"jsonrpc":"2.0","id":12,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"a"}}}`,
			`{"jsonrpc":"2.0","id":13,"method":"logging/setLevel","params":{"level":"debug"}}`,
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`,
			`{"jsonrpc":"2.0","id":14,"method":"ping"}`,
		},
		{
			stateless("1", "server/discover", ""),
			stateless(`"L"`, "subscriptions/listen", `"notifications":{"toolsListChanged":true,"resourceSubscriptions":["example://counter"]}`),
			stateless("2", "tools/call", `"name":"ask","arguments":{"question":"q"}`),
			stateless("3", "tools/call", `"name":"ask","arguments":{"question":"q"},"inputResponses":{"ask":{"action":"decline"}},"requestState":"AAAA"`),
			stateless("4", "tools/call", `"name":"toggle","arguments":{}`),
			stateless("5", "resources/read", `"uri":"example://counter"`),
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L"}}`,
			`{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`,
			`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`,
		},
		{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{}}}`,
			`[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"ping"},` + callTool("3", "echo", `{"text":"b"}`) + `]`,
			`[{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"slow","arguments":{"seconds":1,"steps":1}}},{"jsonrpc":"2.0","id":"s","method":"ping"},7,[]]`,
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s"}}`,
			`[]`,
		},
		{`not json`, `[1,2]`, `{"id":null,"method":"x"}`, `{"jsonrpc":"2.0","id":{},"method":"ping"}`, "\xff\xfe", `{"id":1,"method":"tools/call","params":[]}`},
		{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}}}`,
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","name":"slow","arguments":{"text":"a"}},"id":4}`,
			`{"jsonrpc":"2.0","id":5,"method":"ping","method":"tools/list"}`,
		},
	} {
		f.Add([]byte(strings.Join(session, "\n") + "\n"))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		o := Options{PageSize: 2, MaxMessageSize: 1 << 16, grace: -1, maxBytes: 1 << 12}
		if err := Serve(context.Background(), bytes.NewReader(in), &out, o); err != nil {
			t.Fatalf("Serve: %v", err)
		}
		if err := checkStdout(out.Bytes()); err != nil {
			t.Fatal(err)
		}
	})
}
