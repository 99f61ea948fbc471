package golden

import (
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"
)

// Tests of the harness itself: the script language and the fake server's
// bookkeeping, so that a transcript failing means the relay changed.

func TestParseScript(t *testing.T) {
	is := is.New(t)
	src := `# a comment
POST tools/call id="a"
200 text/event-stream
Mcp-Session-Id: s1
x-extra: one:two
| event: message
| data: {"jsonrpc":"2.0"}
|
delay 1500ms
eol crlf
| data: x
|
break

GET
200 text/event-stream
hold
push {"jsonrpc":"2.0","id":1,"result":{}}
end-stream
push id="mcp-stdio/listen/2" {"jsonrpc":"2.0","method":"x"}
end-stream id=7

POST *
refused

DELETE
reset
`
	entries, err := parseScript([]byte(src))
	is.NoErr(err)
	is.Equal(len(entries), 4)

	e := entries[0]
	is.Equal(e.method, "POST")
	is.Equal(e.shape, "tools/call")
	is.Equal(e.id, `"a"`)
	is.Equal(e.status, 200)
	is.Equal(e.header.Get("Content-Type"), "text/event-stream")
	is.Equal(e.header.Get("Mcp-Session-Id"), "s1")
	is.Equal(e.header.Get("X-Extra"), "one:two") // the value keeps its colons
	is.Equal(len(e.body), 4)                     // data, delay, data, break
	is.Equal(string(e.body[0].data), "event: message\ndata: {\"jsonrpc\":\"2.0\"}\n\n")
	is.Equal(e.body[1].kind, itemDelay)
	is.Equal(e.body[1].d, 1500*time.Millisecond)
	is.Equal(string(e.body[2].data), "data: x\r\n\r\n") // eol crlf
	is.Equal(e.body[3].kind, itemBreak)

	g := entries[1]
	is.Equal(g.method, "GET")
	is.Equal(g.shape, "")
	is.Equal(len(g.body), 5)
	is.Equal(g.body[0].kind, itemHold)
	is.Equal(g.body[1].kind, itemPush)
	is.Equal(g.body[1].target, "") // the latest held stream
	is.Equal(g.body[2].kind, itemEndStream)
	is.Equal(g.body[3].kind, itemPush)
	is.Equal(g.body[3].target, `"mcp-stdio/listen/2"`)
	is.Equal(string(g.body[3].data), `{"jsonrpc":"2.0","method":"x"}`)
	is.Equal(g.body[4].kind, itemEndStream)
	is.Equal(g.body[4].target, "7")

	is.Equal(entries[2].shape, "*")
	is.Equal(entries[2].fail, "refused")
	is.Equal(entries[3].fail, "reset")
}

func TestParseScriptErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"no match line", "200 application/json\n", "want a match line"},
		{"no shape", "POST\n200\n", "POST needs a shape"},
		{"bad qualifier", "POST ping name=x\n200\n", "unknown match qualifier"},
		{"no status", "POST ping\nGET\n200\n", "has no status line"},
		{"no status at end", "POST ping\n", "has no status line"},
		{"bad status", "POST ping\nOK\n", "want a status line"},
		{"body before status", "POST ping\n| {}\n", "body line before a status line"},
		{"refused with body", "POST ping\nrefused\n| x\n", "has no body"},
		{"refused with header", "POST ping\nrefused\nX-A: b\n", "has no headers or body"},
		{"bad header", "POST ping\n200\nnot a header\n", "want a header line"},
		{"header after body", "POST ping\n200\n| x\nX-A: b\n", "unknown body directive"},
		{"bad delay", "POST ping\n200\ndelay soon\n", "delay wants a positive duration"},
		{"bad push", "POST ping\n200\npush {nope\n", "push wants one line of valid JSON"},
		{"bad push target", "POST ping\n200\npush id=nope {}\n", "id= wants a raw JSON id"},
		{"push target without JSON", "POST ping\n200\npush id=1\n", "push wants one line of valid JSON"},
		{"argument to end-stream", "POST ping\n200\nend-stream now\n", "end-stream takes only id="},
		{"bad eol", "POST ping\n200\neol cr\n", "eol wants crlf or lf"},
		{"argument to hold", "GET\n200\nhold now\n", "hold takes no argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			_, err := parseScript([]byte(tc.src))
			is.True(err != nil) // the script is invalid
			is.True(strings.Contains(err.Error(), tc.want))
		})
	}
}

func TestShapeOf(t *testing.T) {
	for body, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`:       "tools/call",
		`{"jsonrpc":"2.0","method":"notifications/cancelled"}`: "notifications/cancelled",
		`{"jsonrpc":"2.0","id":1,"result":{}}`:                 "response",
		`{"jsonrpc":"2.0","id":1,"error":{"code":1}}`:          "response",
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`:           "batch",
		`{"jsonrpc":"2.0"}`:                                    "invalid",
		`not json`:                                             "invalid",
		`"a string"`:                                           "invalid",
	} {
		t.Run(want, func(t *testing.T) {
			is := is.New(t)
			is.Equal(shapeOf([]byte(body)), want) // shape of body
		})
	}
}

func TestSplitWords(t *testing.T) {
	is := is.New(t)
	got, err := splitWords(`-H 'X-A: b c' --x="q \"r\"" plain\ word  http://h/p`)
	is.NoErr(err)
	is.Equal(got, []string{"-H", "X-A: b c", `--x=q "r"`, "plain word", "http://h/p"})
	_, err = splitWords(`-H 'open`)
	is.True(err != nil) // unterminated quote
}

// TestFakeServerReportsProblems checks that a request no entry matches is
// answered 500 and reported, and that an entry no request took is
// reported: a script that no longer fits what the relay does must fail.
func TestFakeServerReportsProblems(t *testing.T) {
	is := is.New(t)
	script, err := parseScript([]byte("POST tools/call\n200 application/json\n| {}\n"))
	is.NoErr(err)
	c := relayCase{
		args:   []string{"--transport", "streamable-http", "http://remote.test/mcp"},
		stdin:  []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		script: script,
		target: "http://remote.test/mcp",
	}
	var got outcome
	synctest.Test(t, func(t *testing.T) { got = runRelay(t, c) })
	is.Equal(len(got.problems), 2)
	is.True(strings.Contains(got.problems[0], "request 1 matches no script entry"))
	is.True(strings.Contains(got.problems[1], "POST tools/call (server line 1) was never used"))
	is.Equal(string(got.stdout), `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"HTTP 500"}}`+"\n")
	is.Equal(got.exit, 0)
}

// TestGateOrdersConcurrentRequests checks the determinism rule: requests
// pending together are admitted in key order, whatever order they arrived
// in.
func TestGateOrdersConcurrentRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		script, err := parseScript([]byte("POST *\n202\n\nPOST *\n202\n\nPOST *\n202\n"))
		is.NoErr(err)
		fake := newFakeServer(t, script, "http://remote.test/mcp")
		client := &http.Client{Transport: fake}
		for _, body := range []string{`{"id":3}`, `{"id":1}`, `{"id":2}`} {
			go func() {
				resp, err := client.Post("http://remote.test/mcp", "application/json", strings.NewReader(body))
				if err == nil {
					resp.Body.Close()
				}
			}()
		}
		fake.settle(nil)
		rec := string(fake.transcript())
		i1, i2, i3 := strings.Index(rec, `{"id":1}`), strings.Index(rec, `{"id":2}`), strings.Index(rec, `{"id":3}`)
		is.True(i1 >= 0 && i1 < i2 && i2 < i3) // admitted in key order
		is.Equal(len(fake.unused()), 0)
	})
}

// FuzzParseScript checks that no script text crashes the parser, and that
// what it accepts is well formed.
func FuzzParseScript(f *testing.F) {
	f.Add("POST tools/call\n200 application/json\nMcp-Session-Id: s\n| {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
	f.Add("GET\n200 text/event-stream\n| event: endpoint\n| data: /m?s=1\n|\nhold\n")
	f.Add("POST ping id=1\nrefused\n\nPOST ping\nreset\n")
	f.Add("POST *\n202\npush {}\nend-stream\ndelay 1s\nbreak\neol crlf\n|\n")
	f.Add("# comment\n\nDELETE\n204\n")
	f.Fuzz(func(t *testing.T, src string) {
		entries, err := parseScript([]byte(src))
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.method == "" || (e.status == 0 && e.fail == "") {
				t.Fatalf("accepted an entry without a method or an answer: %+v", e)
			}
			if e.fail != "" && (len(e.body) > 0 || len(e.header) > 0) {
				t.Fatalf("a %s entry has a response: %+v", e.fail, e)
			}
		}
	})
}
