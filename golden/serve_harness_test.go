//go:build unix

package golden

import (
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Tests of the serve harness itself: the requests language and the run's
// own checks, so that a serve transcript failing means serve changed.

func TestParseRequests(t *testing.T) {
	is := is.New(t)
	src := "# a comment\r\n" +
		"POST /mcp?x=1\n" +
		"content-type: application/json\n" +
		"# a comment among the headers\n" +
		"Accept: application/json, text/event-stream\n" +
		"Host: evil.example\n" +
		"X-Two: a:b\n" +
		"X-Two: c\n" +
		"\n" +
		"{\"jsonrpc\":\"2.0\",\n" +
		"\"id\":1,\"method\":\"ping\"}\n" +
		"\n" +
		"# await-log ^started$\n" +
		"GET /mcp events=2 ready=1\n" +
		"Mcp-Session-Id: $SESSION\n" +
		"\n" +
		"# no body: a comment after the blank line\n" +
		"DELETE /mcp\n" +
		"PUT /mcp\n" +
		"\n" +
		"not json\n"
	reqs, err := parseRequests([]byte(src))
	is.NoErr(err)
	is.Equal(len(reqs), 4)

	p := reqs[0]
	is.Equal(p.line, 2)
	is.Equal(p.method, "POST")
	is.Equal(p.target, "/mcp?x=1")
	is.Equal(p.header.Get("Content-Type"), "application/json")
	is.Equal(p.header.Get("Accept"), "application/json, text/event-stream")
	is.Equal(p.header.Values("X-Two"), []string{"a:b", "c"}) // values keep their colons
	is.Equal(p.header.Get("Host"), "")                       // Host is the request's, not a header
	is.Equal(p.host, "evil.example")
	is.True(p.hasBody)
	is.Equal(string(p.body), "{\"jsonrpc\":\"2.0\",\n\"id\":1,\"method\":\"ping\"}")

	g := reqs[1]
	is.Equal(g.method, "GET")
	is.Equal(g.events, 2)
	is.Equal(g.ready, 1)
	is.Equal(len(g.awaitLog), 1)
	is.Equal(g.awaitLog[0].String(), "^started$")
	is.Equal(len(p.awaitLog), 0)
	is.Equal(g.header.Get("Mcp-Session-Id"), "$SESSION")
	is.True(!g.hasBody)

	d := reqs[2]
	is.Equal(d.method, "DELETE")
	is.True(!d.hasBody) // the next request line follows at once
	is.Equal(len(d.header), 0)

	u := reqs[3]
	is.Equal(u.method, "PUT")
	is.Equal(string(u.body), "not json")
}

func TestParseRequestsErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"not a request line", "hello\n", "want a request line"},
		{"relative target", "GET mcp\n", "want a request line"},
		{"bad header", "POST /mcp\nno colon here\n", "want a header line"},
		{"bad header name", "POST /mcp\nBad Name: x\n", "want a header line"},
		{"unknown option", "GET /mcp stream=1\n", "unknown request option"},
		{"bad count", "GET /mcp events=-1\n", "events wants a count"},
		{"events on DELETE", "DELETE /mcp events=1\n", "events=N is for GET and POST streams"},
		{"ready on PUT", "PUT /message?session=$SESSION ready=1\n", "ready=N is for GET and POST streams"},
		{"bad await-log", "# await-log (\nGET /mcp\n", "await-log"},
		{"await-log last", "GET /mcp\n# await-log x\n", "must come before a request"},
		{"drain last", "GET /mcp\n# drain\n", "a drain line must come before a request"},
		{"bad ready", "GET /sse ready=x\n", "ready wants a count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			_, err := parseRequests([]byte(tc.src))
			is.True(err != nil) // the requests are invalid
			is.True(strings.Contains(err.Error(), tc.want))
		})
	}
}

func TestRequestLabel(t *testing.T) {
	for _, tc := range []struct {
		method, body, want string
	}{
		{"POST", `{"jsonrpc":"2.0","id":"a","method":"tools/call"}`, `POST /mcp tools/call id="a"`},
		{"POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, `POST /mcp notifications/initialized`},
		{"POST", `{"jsonrpc":"2.0","id":"srv-1","result":{}}`, `POST /mcp response id="srv-1"`},
		{"POST", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `POST /mcp batch`},
		{"POST", `{"id":1,`, `POST /mcp invalid`},
		{"GET", ``, `GET /mcp`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			is := is.New(t)
			req := &serveRequest{method: tc.method, target: "/mcp", body: []byte(tc.body), hasBody: tc.body != ""}
			is.Equal(requestLabel(req), tc.want)
		})
	}
}

func TestRequestAndResponseIDs(t *testing.T) {
	is := is.New(t)
	batch := []byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},` +
		`{"jsonrpc":"2.0","id":"1","method":"ping"},{"jsonrpc":"2.0","id":"srv-1","result":{}},7]`)
	is.Equal(requestIDs(batch), []frame.ID{"1", `"1"`}) // raw ids: 1 and "1" differ
	is.Equal(responseIDs(batch), []frame.ID{`"srv-1"`})
	is.Equal(len(requestIDs([]byte("not json"))), 0)
}

// TestServeHarnessReportsProblems checks that the run notices what would
// make a transcript meaningless: a placeholder that names no session, and
// requests a serve that refused to start never received.
func TestServeHarnessReportsProblems(t *testing.T) {
	t.Run("unknown placeholder", func(t *testing.T) {
		is := is.New(t)
		reqs, err := parseRequests([]byte("DELETE /mcp\nMcp-Session-Id: $SESSION2\n"))
		is.NoErr(err)
		got := runServe(serveCase{requests: reqs})
		is.Equal(len(got.problems), 1)
		is.True(strings.Contains(got.problems[0], "$SESSION2 names no session yet"))
		is.True(strings.Contains(string(got.responses), "< 404 Not Found")) // sent as written
		is.Equal(got.exit, 0)
	})
	t.Run("serve did not start", func(t *testing.T) {
		is := is.New(t)
		reqs, err := parseRequests([]byte("DELETE /mcp\n"))
		is.NoErr(err)
		got := runServe(serveCase{args: []string{"--max-sessions", "0"}, requests: reqs})
		is.Equal(len(got.problems), 1)
		is.True(strings.Contains(got.problems[0], "before listening"))
		is.Equal(got.exit, 2)
		is.True(strings.Contains(got.stderr, "--max-sessions must be positive"))
	})
}

func TestIsEventStream(t *testing.T) {
	is := is.New(t)
	is.True(isEventStream("text/event-stream"))
	is.True(isEventStream("Text/Event-Stream; charset=utf-8"))
	is.True(!isEventStream("application/json"))
	is.True(!isEventStream(""))
}

// FuzzParseRequests checks that no requests text crashes the parser, and
// that what it accepts is well formed.
func FuzzParseRequests(f *testing.F) {
	f.Add("POST /mcp\nContent-Type: application/json\n\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
	f.Add("GET /mcp events=1\nAccept: text/event-stream\nMcp-Session-Id: $SESSION\n\nDELETE /mcp\n")
	f.Add("# comment\r\nPUT /x?y=1\r\nHost: a\r\n\r\nbody\r\nmore\r\n\r\n")
	f.Add("POST /mcp\n\n# not a body\nGET /mcp\n")
	f.Fuzz(func(t *testing.T, src string) {
		reqs, err := parseRequests([]byte(src))
		if err != nil {
			return
		}
		for _, r := range reqs {
			if !isHTTPMethod(r.method) || !strings.HasPrefix(r.target, "/") || r.line < 1 {
				t.Fatalf("accepted a malformed request: %+v", r)
			}
			if (r.events != 0 || r.ready != 0) && r.method != http.MethodGet && r.method != http.MethodPost {
				t.Fatalf("accepted events=N or ready=N on %s", r.method)
			}
			if r.hasBody && (len(r.body) == 0 || r.body[0] == '#') {
				t.Fatalf("accepted a body that is empty or a comment: %q", r.body)
			}
		}
	})
}

// TestStatePlaceholders checks the requestState placeholders: each new
// state in a result gets the next one, request bodies get the states back,
// $STATE~ is a tampered state, and a placeholder with no state is a
// problem.
func TestStatePlaceholders(t *testing.T) {
	is := is.New(t)
	r := &serveRun{states: map[string]string{}, byState: map[string]string{}}
	first := frame.MustParse(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"AAAAxyz"}}`)
	r.noteState(first)
	r.noteState(first) // seen: keeps its placeholder
	r.noteState(frame.MustParse(`{"jsonrpc":"2.0","id":2,"result":{"requestState":"QQQQ"}}`))
	r.noteState(frame.MustParse(`{"jsonrpc":"2.0","method":"n","params":{"requestState":"ZZZZ"}}`)) // not a result
	is.Equal(r.states, map[string]string{"AAAAxyz": "$STATE", "QQQQ": "$STATE2"})

	got := r.expandStates(&serveRequest{line: 3}, []byte(`{"a":"$STATE","b":"$STATE2","c":"$STATE~","d":"$STATE3"}`))
	is.Equal(string(got), `{"a":"AAAAxyz","b":"QQQQ","c":"AAABxyz","d":"$STATE3"}`)
	is.Equal(len(r.problems), 1) // $STATE3 names no state yet
	is.True(strings.Contains(r.problems[0], "requests line 3: $STATE3 names no requestState yet"))
}
