package mw

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Unit tests of the stages of the relay's chain for a 2026-07-28 server:
// LocalAnswers, InjectMeta, RoutingHeaders, CleanResults, CloseOnCancel,
// Retry's Reissue, and the era probe's verdicts. The golden transcripts
// (golden/testdata/relay/era_*.txtar) pin them together.

const hostInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{},"tasks":{"list":{}}},"clientInfo":{"name":"host","version":"1"}}}`

// modernConn returns a Conn of a 2026-07-28 server, the host's initialize
// recorded, and a context carrying it.
func modernConn(t *testing.T) (*Conn, context.Context) {
	c := NewConn(EraStateless)
	c.Discovered(frame.MustParse(`{"jsonrpc":"2.0","id":"x","result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"instructions":"hi","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"2"}}}}`), ModernVersion)
	return c, WithConn(t.Context(), c)
}

func TestInjectMeta(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		level          string
		noInit         bool
		modernHost     string // a 2026-07-28 host's request seen before (no initialize then)
		version        string // MetaOptions.ClientVersion
	}{
		{
			name: "no params",
			in:   `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
			want: `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{},"extensions":{"io.modelcontextprotocol/tasks":{"list":{}}}},"io.modelcontextprotocol/clientInfo":{"name":"host","version":"1"}}}}`,
		},
		{
			name:  "log level, params without _meta",
			in:    `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{"n":1.50}}}`,
			level: "debug",
			want:  `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{"n":1.50},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{},"extensions":{"io.modelcontextprotocol/tasks":{"list":{}}}},"io.modelcontextprotocol/clientInfo":{"name":"host","version":"1"},"io.modelcontextprotocol/logLevel":"debug"}}}`,
		},
		{
			name:   "keys kept byte for byte, no initialize seen",
			in:     `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"progressToken":7, "traceparent":"t","x.y/z":[1.0],"io.modelcontextprotocol/clientCapabilities":{"own":1}}}}`,
			noInit: true,
			want:   `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"progressToken":7, "traceparent":"t","x.y/z":[1.0],"io.modelcontextprotocol/clientCapabilities":{"own":1},"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"mcp-stdio","version":"unknown"}}}}`,
		},
		{
			name:    "the gateway's own clientInfo when the host said nothing of itself",
			in:      `{"jsonrpc":"2.0","id":"mcp-stdio/page/1","method":"tools/list"}`,
			noInit:  true,
			version: "1.2.3",
			want:    `{"jsonrpc":"2.0","id":"mcp-stdio/page/1","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcp-stdio","version":"1.2.3"}}}}`,
		},
		{
			name:       "a 2026-07-28 host's clientInfo and capabilities on the gateway's own requests",
			in:         `{"jsonrpc":"2.0","id":"mcp-stdio/page/1","method":"tools/list"}`,
			noInit:     true,
			modernHost: `{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"modern-host","version":"3"}}}}`,
			want:       `{"jsonrpc":"2.0","id":"mcp-stdio/page/1","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"modern-host","version":"3"}}}}`,
		},
		{
			name: "a modern host's line passes",
			in:   `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
			want: `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		},
		{
			name: "params an array passes",
			in:   `{"jsonrpc":"2.0","id":2,"method":"x","params":[1]}`,
			want: `{"jsonrpc":"2.0","id":2,"method":"x","params":[1]}`,
		},
		{
			name: "notifications pass",
			in:   `{"jsonrpc":"2.0","method":"notifications/x"}`,
			want: `{"jsonrpc":"2.0","method":"notifications/x"}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			c, ctx := modernConn(t)
			if !tc.noInit {
				c.Initialized(frame.MustParse(hostInit), frame.MustParse(`{"jsonrpc":"2.0","id":1,"result":{}}`))
			}
			if tc.modernHost != "" {
				c.NoteClientMeta(frame.MustParse(tc.modernHost))
			}
			c.SetLogLevel(tc.level)
			s := &fakeServer{}
			in, _ := pipeline(s, InjectMeta(MetaOptions{ClientVersion: tc.version}))
			is.NoErr(in.Handle(ctx, frame.MustParse(tc.in)))
			is.Equal(s.sent.lines(), []string{tc.want})
		})
	}
	t.Run("session era passes", func(t *testing.T) {
		is := is.New(t)
		s := &fakeServer{}
		in, _ := pipeline(s, InjectMeta(MetaOptions{}))
		line := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
		is.NoErr(in.Handle(WithConn(t.Context(), NewConn(EraSession)), frame.MustParse(line)))
		is.Equal(s.sent.lines(), []string{line})
	})
}

func TestRoutingHeaders(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     http.Header
	}{
		{"tools/call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`,
			http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"echo"}}},
		{"non-ASCII name", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"Hello, 世界"}}`,
			http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"prompts/get"}, "Mcp-Name": {"=?base64?SGVsbG8sIOS4lueVjA==?="}}},
		{"resources/read uri", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a b "}}`,
			http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"resources/read"}, "Mcp-Name": {"=?base64?ZmlsZTovLy9hIGIg?="}}},
		{"version from the body", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01"}}}`,
			http.Header{"Mcp-Protocol-Version": {"2027-01-01"}, "Mcp-Method": {"tools/list"}}},
		{"name not a string", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}`,
			http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}}},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/x"}`,
			http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"notifications/x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			_, ctx := modernConn(t)
			s := &fakeServer{}
			in, _ := pipeline(s, RoutingHeaders())
			m := frame.MustParse(tc.in).WithHeader("X-Kept", "1")
			is.NoErr(in.Handle(ctx, m))
			got := s.sent.all()[0]
			is.Equal(got.String(), tc.in) // the body is untouched
			tc.want.Set("X-Kept", "1")
			is.Equal(got.Header(), tc.want)
		})
	}
	t.Run("session era passes", func(t *testing.T) {
		is := is.New(t)
		s := &fakeServer{}
		in, _ := pipeline(s, RoutingHeaders())
		is.NoErr(in.Handle(WithConn(t.Context(), NewConn(EraSession)), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)))
		is.Equal(len(s.sent.all()[0].Header()), 0)
	})
}

func TestLocalAnswers(t *testing.T) {
	is := is.New(t)
	c, ctx := modernConn(t)
	s := &fakeServer{}
	in, client := pipeline(s, LocalAnswers(LocalAnswersOptions{}))
	for _, line := range []string{
		hostInit,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"warning"}}`,
		`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`,
		`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":6,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	} {
		is.NoErr(in.Handle(ctx, frame.MustParse(line)))
	}
	is.Equal(client.lines(), []string{
		`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"2"},"instructions":"hi"}}`,
		`{"jsonrpc":"2.0","id":2,"result":{}}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
		`{"jsonrpc":"2.0","id":4,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"2"},"instructions":"hi"}}`,
	})
	is.Equal(s.sent.lines(), []string{ // what a 2026-07-28 server takes
		`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":6,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	})
	is.Equal(c.LogLevel(), "warning")
	init, ok := c.ClientInitialize()
	is.True(ok)
	is.Equal(init.ID(), frame.ID("4")) // the last handshake
}

// TestLocalAnswersWithoutDiscoverResult: with nothing the server said to
// answer initialize from, the host is told so; nothing is made up.
func TestLocalAnswersWithoutDiscoverResult(t *testing.T) {
	is := is.New(t)
	c := NewConn(EraStateless)
	c.SetEraBy(EraStateless, "--era modern")
	c.Discovered(frame.Message{}, ModernVersion)
	s := &fakeServer{}
	in, client := pipeline(s, LocalAnswers(LocalAnswersOptions{}))
	is.NoErr(in.Handle(WithConn(t.Context(), c), frame.MustParse(hostInit)))
	is.Equal(client.lines(), []string{
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"the server gave no server/discover result to answer initialize from (speaking 2026-07-28: --era modern)"}}`,
	})
	_, ok := c.ClientInitialize()
	is.True(!ok) // no handshake recorded
	is.Equal(len(s.sent.all()), 0)
}

// TestLocalAnswersAbsentStaysAbsent: a DiscoverResult without _meta
// serverInfo or instructions gives an initialize result without them.
func TestLocalAnswersAbsentStaysAbsent(t *testing.T) {
	is := is.New(t)
	c := NewConn(EraStateless)
	c.Discovered(frame.MustParse(`{"jsonrpc":"2.0","id":"x","result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"ttlMs":0,"cacheScope":"private"}}`), ModernVersion)
	s := &fakeServer{}
	in, client := pipeline(s, LocalAnswers(LocalAnswersOptions{}))
	is.NoErr(in.Handle(WithConn(t.Context(), c), frame.MustParse(hostInit)))
	is.Equal(client.lines(), []string{
		`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}}}}`,
	})
}

func TestCleanResults(t *testing.T) {
	is := is.New(t)
	_, ctx := modernConn(t)
	s := &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		switch m.ID() {
		case "1", "3":
			return []frame.Message{answerWith(m, `{"resultType":"complete","tools":[],"ttlMs":10,"cacheScope":"public","_meta":{"k":1}}`)}, nil
		case "2":
			return []frame.Message{answerWith(m, `{"resultType":"input_required","inputRequests":{}}`)}, nil
		}
		return []frame.Message{frame.ErrorResponse(m.ID(), -1, "x")}, nil
	}}
	in, client := pipeline(s, CleanResults())
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"x"}`,
	} {
		is.NoErr(in.Handle(ctx, frame.MustParse(line)))
	}
	is.Equal(client.lines(), []string{
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[],"_meta":{"k":1}}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"resultType":"input_required","inputRequests":{}}}`,                                    // not the cleanup's
		`{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","tools":[],"ttlMs":10,"cacheScope":"public","_meta":{"k":1}}}`, // a modern host's
		`{"jsonrpc":"2.0","id":4,"error":{"code":-1,"message":"x"}}`,
	})
}

// TestCleanResultsModernMeta: no _meta key of 2026-07-28 reaches a
// session-era host — results, errors, notifications — while other keys
// stay, byte for byte.
func TestCleanResultsModernMeta(t *testing.T) {
	is := is.New(t)
	c, ctx := modernConn(t)
	c.Initialized(frame.MustParse(hostInit), frame.MustParse(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	s := &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		switch m.ID() {
		case "1", "3":
			return []frame.Message{
				frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"}}}}`),
				frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"_meta":{"a":1, "io.modelcontextprotocol/subscriptionId":7,"io.modelcontextprotocol/related-task":{"taskId":"t"}}}}`),
				answerWith(m, `{"resultType":"complete","tools":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"2"},"k":1.50}}`),
			}, nil
		}
		return []frame.Message{frame.MustParse(`{"jsonrpc":"2.0","id":` + string(m.ID()) + `,"error":{"code":-32602,"message":"x","data":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"}},"why":1}}}`)}, nil
	}}
	in, client := pipeline(s, CleanResults())
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call"}`,
	} {
		is.NoErr(in.Handle(ctx, frame.MustParse(line)))
	}
	is.Equal(client.lines(), []string{
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"_meta":{"a":1,"io.modelcontextprotocol/related-task":{"taskId":"t"}}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[],"_meta":{"k":1.50}}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"x","data":{"why":1}}}`,
	})

	t.Run("a 2026-07-28 host gets them", func(t *testing.T) {
		is := is.New(t)
		_, ctx := modernConn(t) // no initialize: a 2026-07-28 host
		in, client := pipeline(s, CleanResults())
		is.NoErr(in.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)))
		is.Equal(client.lines(), []string{
			`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"}}}}`,
			`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"_meta":{"a":1, "io.modelcontextprotocol/subscriptionId":7,"io.modelcontextprotocol/related-task":{"taskId":"t"}}}}`,
			`{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","tools":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"2"},"k":1.50}}}`,
		})
	})
}

func TestCloseOnCancel(t *testing.T) {
	is := is.New(t)
	_, ctx := modernConn(t)
	running := make(chan struct{})
	s := &fakeServer{answer: func(ctx context.Context, m frame.Message) ([]frame.Message, error) {
		close(running)
		<-ctx.Done() // the transport's POST, aborted
		return nil, ctx.Err()
	}}
	in, _ := pipeline(s, CloseOnCancel(nil))
	done := make(chan error, 1)
	go func() { done <- in.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":"a","method":"tools/call"}`)) }()
	<-running
	is.NoErr(in.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`))) // no such request
	is.NoErr(in.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}`)))
	is.True(errors.Is(<-done, frame.ErrCancelled)) // no answer is due
	is.Equal(len(s.sent.all()), 1)                 // only the call went out: no cancel POST
}

func TestRetryReissue(t *testing.T) {
	is := is.New(t)
	attempts := 0
	s := &fakeServer{answer: func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		attempts++
		if attempts == 1 {
			return nil, &frame.SendError{Sent: true, Err: frame.ErrStreamEnded}
		}
		return []frame.Message{answerWith(m, `{"tools":[]}`)}, nil
	}}
	in, client := pipeline(s, Retry(RetryOptions{Reissue: true, Sleep: func(context.Context, time.Duration) error { return nil }}))
	is.NoErr(in.Handle(t.Context(), frame.MustParse(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`)))
	is.Equal(s.sent.lines(), []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"mcp-stdio/retry/1","method":"tools/list"}`,
	})
	is.Equal(client.lines(), []string{`{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}`})
}

func TestJudgeDiscover(t *testing.T) {
	status := func(code int, body string) error { return &frame.StatusError{Code: code, Body: []byte(body)} }
	msg := func(s string) frame.Message { return frame.MustParse(s) }
	const undecided = EraUnknown
	for _, tc := range []struct {
		name    string
		resp    frame.Message
		err     error
		era     Era // EraUnknown: the answer decides nothing
		retryAt string
		result  bool
	}{
		{"DiscoverResult lists ours", msg(`{"jsonrpc":"2.0","id":"p","result":{"supportedVersions":["2025-11-25","2026-07-28"]}}`), nil, EraStateless, "", true},
		{"DiscoverResult lists none of ours", msg(`{"jsonrpc":"2.0","id":"p","result":{"supportedVersions":["2025-11-25"]}}`), nil, EraSession, "", false},
		{"DiscoverResult without versions", msg(`{"jsonrpc":"2.0","id":"p","result":{}}`), nil, EraSession, "", false},
		{"200 with -32601", msg(`{"jsonrpc":"2.0","id":"p","error":{"code":-32601,"message":"no"}}`), nil, EraSession, "", false},
		{"200 with -32602", msg(`{"jsonrpc":"2.0","id":"p","error":{"code":-32602,"message":"no"}}`), nil, EraSession, "", false},
		// -32601 means the server does not know server/discover, whatever
		// the status (supergateway 4.0.0 answers 404 so).
		{"404 with -32601", frame.Message{}, status(404, `{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"no"}}`), EraSession, "", false},
		{"400 with -32601", frame.Message{}, status(400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"no"}}`), EraSession, "", false},
		{"plain 404", frame.Message{}, status(404, `404 page not found`), EraSession, "", false},
		{"405", frame.Message{}, status(405, ``), EraSession, "", false},
		{"500", frame.Message{}, status(500, `oops`), EraSession, "", false},
		{"400 -32020", frame.Message{}, status(400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32020,"message":"h"}}`), EraStateless, "", false},
		{"400 -32021", frame.Message{}, status(400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32021,"message":"c"}}`), EraStateless, "", false},
		{"-32022 naming ours", frame.Message{}, status(400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32022,"message":"v","data":{"supported":["2026-07-28"]}}}`), EraStateless, "2026-07-28", false},
		{"-32022 naming session-era versions only", frame.Message{}, status(400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32022,"message":"v","data":{"supported":["2025-11-25"]}}}`), EraSession, "", false},
		{"400 session-era error", frame.Message{}, status(400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"no session"}}`), EraSession, "", false},
		{"timeout", frame.Message{}, context.DeadlineExceeded, EraSession, "", false},
		// What says nothing of the era decides nothing.
		{"network", frame.Message{}, &frame.SendError{Err: errors.New("refused")}, undecided, "", false},
		{"401", frame.Message{}, status(401, `{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"no"}}`), undecided, "", false},
		{"403", frame.Message{}, status(403, ``), undecided, "", false},
		{"429", frame.Message{}, status(429, ``), undecided, "", false},
		{"503", frame.Message{}, status(503, ``), undecided, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			v := judgeDiscover(tc.resp, tc.err, time.Second)
			if tc.era == undecided {
				is.True(v.undecided)
				is.True(v.err != nil)
			} else {
				is.True(!v.undecided)
				is.Equal(v.era, tc.era)
			}
			is.Equal(v.retryAt, tc.retryAt)
			is.Equal(v.result.Len() > 0, tc.result)
			is.True(v.reason != "") // a verdict says why
		})
	}
}
