package frame_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestParseKinds(t *testing.T) {
	tests := []struct {
		in     string
		kind   frame.Kind
		id     frame.ID
		method string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, frame.Request, "1", "tools/list"},
		{`{"jsonrpc":"2.0","id":"1","method":"x/custom"}`, frame.Request, `"1"`, "x/custom"},
		{`{"jsonrpc":"2.0","id":1.0,"method":"ping"}`, frame.Request, "1.0", "ping"},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, frame.Notification, "", "notifications/initialized"},
		{`{"jsonrpc":"2.0","id":7,"result":{}}`, frame.Result, "7", ""},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, frame.Error, "null", ""},
		{`{"result":{},"id":0,"jsonrpc":"2.0"}`, frame.Result, "0", ""},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, frame.Batch, "", ""},
		{`{"jsonrpc":"2.0"}`, frame.Invalid, "", ""},
		{`{"id":{"a":1},"result":{}}`, frame.Invalid, "", ""},
		{`{"method":5,"id":1}`, frame.Invalid, "", ""},
		{`42`, frame.Invalid, "", ""},
		{`"str"`, frame.Invalid, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			is := is.New(t)
			m, err := frame.Parse([]byte(tt.in))
			is.NoErr(err)
			is.Equal(m.Kind(), tt.kind)
			is.Equal(m.ID(), tt.id)
			is.Equal(m.Method(), tt.method)
			is.Equal(string(m.Bytes()), tt.in) // bytes kept exactly
		})
	}
}

func TestParseErrors(t *testing.T) {
	is := is.New(t)
	_, err := frame.Parse([]byte("   \t "))
	is.Equal(err, frame.ErrEmpty)
	_, err = frame.Parse([]byte(`{"jsonrpc":"2.0",`))
	is.Equal(err, frame.ErrSyntax)
	_, err = frame.Parse([]byte(`<html>`))
	is.Equal(err, frame.ErrSyntax)
}

func TestParseKeepsBytes(t *testing.T) {
	is := is.New(t)
	in := ` {"b":1.50, "a" : [1,2] ,"id":1,"method":"m","params":{"x":"\u00e9"}}` + "\r"
	m, err := frame.Parse([]byte(in))
	is.NoErr(err)
	is.Equal(string(m.Bytes()), `{"b":1.50, "a" : [1,2] ,"id":1,"method":"m","params":{"x":"\u00e9"}}`)
}

func TestParseCompactsMultiLine(t *testing.T) {
	is := is.New(t)
	in := "{\n  \"jsonrpc\": \"2.0\",\r\n  \"id\": 1,\n  \"result\": {\"text\": \"a\\nb\", \"n\": 1.50}\n}"
	m, err := frame.Parse([]byte(in))
	is.NoErr(err)
	is.Equal(string(m.Bytes()), `{"jsonrpc":"2.0","id":1,"result":{"text":"a\nb","n":1.50}}`)
	is.Equal(m.Kind(), frame.Result)
}

func TestParseCopiesInput(t *testing.T) {
	is := is.New(t)
	buf := []byte(`{"id":1,"method":"ping"}`)
	m, err := frame.Parse(buf)
	is.NoErr(err)
	copy(buf, `{"id":2`)
	is.Equal(m.String(), `{"id":1,"method":"ping"}`)
}

func TestSetKeepsOtherBytes(t *testing.T) {
	is := is.New(t)
	m := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","n":1.50}}`)
	n, err := m.Set("params._meta."+gjson.Escape("io.modelcontextprotocol/protocolVersion"), []byte(`"2026-07-28"`))
	is.NoErr(err)
	is.Equal(n.String(), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","n":1.50,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	is.Equal(m.String(), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","n":1.50}}`) // original untouched

	r, err := m.WithID(`"mcp-stdio/x/1"`)
	is.NoErr(err)
	is.Equal(r.ID(), frame.ID(`"mcp-stdio/x/1"`))
	is.Equal(r.Kind(), frame.Request)

	_, err = m.Set("params.x", []byte(`{bad`))
	is.True(err != nil)
}

func TestSetCompactsValue(t *testing.T) {
	is := is.New(t)
	m := frame.MustParse(`{"id":1,"result":{}}`)
	n, err := m.Set("result.list", []byte("[\n 1,\n 2\n]"))
	is.NoErr(err)
	is.Equal(n.String(), `{"id":1,"result":{"list":[1,2]}}`)
}

func TestDelete(t *testing.T) {
	is := is.New(t)
	m := frame.MustParse(`{"id":1,"result":{"tools":[],"nextCursor":"c"}}`)
	n, err := m.Delete("result.nextCursor")
	is.NoErr(err)
	is.Equal(n.String(), `{"id":1,"result":{"tools":[]}}`)
	same, err := n.Delete("result.nextCursor")
	is.NoErr(err)
	is.Equal(same.String(), n.String())
}

func TestHeaderSideChannel(t *testing.T) {
	is := is.New(t)
	m := frame.MustParse(`{"id":1,"method":"ping"}`)
	a := m.WithHeader("Mcp-Session-Id", "s1")
	b := a.WithHeader("MCP-Protocol-Version", "2025-11-25")
	is.Equal(m.Header().Get("Mcp-Session-Id"), "")
	is.Equal(a.Header().Get("MCP-Protocol-Version"), "") // copy on write
	is.Equal(b.Header().Get("Mcp-Session-Id"), "s1")
	is.Equal(b.Header().Get("Mcp-Protocol-Version"), "2025-11-25")
	n, err := b.Set("params", []byte(`{}`))
	is.NoErr(err)
	is.Equal(n.Header().Get("Mcp-Session-Id"), "s1") // edits keep the side channel
}

func TestErrorResponse(t *testing.T) {
	is := is.New(t)
	m := frame.ErrorResponse(`"a"`, frame.CodeGateway, `HTTP 404 "x" <y>`)
	is.Equal(m.String(), `{"jsonrpc":"2.0","id":"a","error":{"code":-32000,"message":"HTTP 404 \"x\" \u003cy\u003e"}}`)
	is.Equal(m.Kind(), frame.Error)
	code, ok := m.ErrorCode()
	is.True(ok)
	is.Equal(code, -32000)

	n := frame.ErrorResponse("", frame.CodeParseError, "parse error")
	is.Equal(n.String(), `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`)

	d := frame.ErrorResponseData("3", frame.CodeUnsupportedVersion, "unsupported", []byte(`{"supported":["2026-07-28"]}`))
	is.Equal(d.Get("error.data.supported.0").String(), "2026-07-28")

	r := frame.ResultResponse("3", []byte(`{"ok":true}`))
	is.Equal(r.String(), `{"jsonrpc":"2.0","id":3,"result":{"ok":true}}`)
}

func TestIDs(t *testing.T) {
	is := is.New(t)
	is.Equal(frame.StringID(`a"b`), frame.ID(`"a\"b"`))
	is.Equal(frame.IntID(-4), frame.ID("-4"))
	is.True(frame.ID("").IsZero())
	is.True(frame.ID("null").IsNull())
	is.Equal(string(frame.ID("").Raw()), "null")
}

func TestStatusErrorResponse(t *testing.T) {
	is := is.New(t)
	e := &frame.StatusError{Code: 400, Body: []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"bad"}}`)}
	m, ok := e.Response("5")
	is.True(ok)
	is.Equal(m.ID(), frame.ID("5"))
	is.Equal(m.Get("error.code").Int(), int64(-32602))
	m, ok = (&frame.StatusError{Code: 400, Body: []byte(`{"jsonrpc":"2.0","error":{"code":-32600,"message":"no session"}}`)}).Response("5")
	is.True(ok) // no id at all (MCP 2025-11-25) is taken as answering it too
	is.Equal(m.String(), `{"jsonrpc":"2.0","error":{"code":-32600,"message":"no session"},"id":5}`)
	_, ok = (&frame.StatusError{Code: 400, Body: []byte(`{"id":5,"error":{"code":-32600,"message":"x"}}`)}).Response("5")
	is.True(!ok) // not a valid JSON-RPC error: no jsonrpc
	_, ok = (&frame.StatusError{Code: 500, Body: []byte("<html>")}).Response("5")
	is.True(!ok)
	_, ok = (&frame.StatusError{Code: 400, Body: []byte(`{"jsonrpc":"2.0","id":9,"error":{"code":1,"message":""}}`)}).Response("5")
	is.True(!ok) // someone else's answer
}

func TestElements(t *testing.T) {
	is := is.New(t)
	var got []string
	for el := range frame.MustParse(`[{"jsonrpc":"2.0","id":1,"method":"a"}, 7 ,{"jsonrpc":"2.0","method":"n"}]`).Elements() {
		got = append(got, el.Kind().String()+" "+el.String())
	}
	is.Equal(got, []string{`request {"jsonrpc":"2.0","id":1,"method":"a"}`, "invalid 7", `notification {"jsonrpc":"2.0","method":"n"}`})

	got = nil
	single := frame.MustParse(`{"jsonrpc":"2.0","id":2,"result":{}}`)
	for el := range single.Elements() {
		got = append(got, el.String())
	}
	is.Equal(got, []string{single.String()}) // a single message is its own element

	n := 0
	for range frame.MustParse(`[1,2,3]`).Elements() {
		n++
		break
	}
	is.Equal(n, 1) // stopping early is fine
}

func TestFirstRequestID(t *testing.T) {
	is := is.New(t)
	for _, tt := range []struct {
		body string
		id   frame.ID
		ok   bool
	}{
		{`{"jsonrpc":"2.0","id":"a","method":"x"}`, `"a"`, true},
		{`{"jsonrpc":"2.0","method":"x"}`, "", false},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, "", false},
		{`[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":2,"method":"x"},{"jsonrpc":"2.0","id":3,"method":"y"}]`, "2", true},
		{`[]`, "", false},
	} {
		id, ok := frame.MustParse(tt.body).FirstRequestID()
		is.Equal(id, tt.id)
		is.Equal(ok, tt.ok)
	}
}

func TestSent(t *testing.T) {
	is := is.New(t)
	retryAfter := http.Header{"Retry-After": {"1"}}
	is.True(!frame.Sent(&frame.StatusError{Code: 429}))                     // not processed
	is.True(!frame.Sent(&frame.StatusError{Code: 503, Header: retryAfter})) // the server says: not processed
	is.True(frame.Sent(&frame.StatusError{Code: 503}))                      // a proxy may say it after the server ran it
	is.True(frame.Sent(&frame.StatusError{Code: 500}))
	is.True(!frame.Sent(&frame.SendError{Sent: false, Err: frame.ErrStreamEnded}))
	is.True(frame.Sent(frame.ErrStreamEnded))
}

func TestEnvelopeRules(t *testing.T) {
	const (
		version   = `jsonrpc must be "2.0"`
		method    = "method must be a string"
		reqID     = "the id of a request must be a string or an integer"
		params    = "params must be an object"
		both      = "a response has a result or an error, not both"
		resultID  = "a result needs an id that is a string or an integer"
		result    = "result must be an object"
		errorID   = "the id of an error must be a string, an integer or null"
		errorObj  = "error must be an object with an integer code and a string message"
		notJSONRP = "not a JSON-RPC message"
	)
	tests := []struct {
		in     string
		kind   frame.Kind // of a valid message
		id     frame.ID   // ID() of a valid one, EnvelopeError.ID of an invalid one
		reason string     // "" for a valid message
		shape  frame.Kind // EnvelopeError.Shape
	}{
		// Valid: what both JSON-RPC 2.0 and MCP's schema accept.
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, frame.Request, "1", "", 0},
		{`{"jsonrpc":"2.0","id":"a","method":"ping","params":{}}`, frame.Request, `"a"`, "", 0},
		{`{"jsonrpc":"2.0","id":-0,"method":"ping"}`, frame.Request, "-0", "", 0},
		{`{"jsonrpc":"2.0","id":1.0,"method":"ping"}`, frame.Request, "1.0", "", 0},       // JSON Schema's integer
		{`{"jsonrpc":"2.0","id":1.50e2,"method":"ping"}`, frame.Request, "1.50e2", "", 0}, // 150
		{`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, frame.Request, "1e400", "", 0},
		{`{"jsonrpc":"2.0","id":100E-2,"method":"ping"}`, frame.Request, "100E-2", "", 0}, // 1
		{`{"jsonrpc":"2.0","id":0.000e-9,"method":"ping"}`, frame.Request, "0.000e-9", "", 0},
		{`{"jsonrpc":"2.0","id":-12.3400e2,"method":"ping"}`, frame.Request, "-12.3400e2", "", 0},
		{`{"jsonrpc":"2\u002e0","id":1,"method":"ping"}`, frame.Request, "1", "", 0},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, frame.Notification, "", "", 0},
		{`{"jsonrpc":"2.0","method":"n","params":{"a":1},"extra":[true]}`, frame.Notification, "", "", 0},
		{`{"jsonrpc":"2.0","id":1,"method":"x","result":5}`, frame.Request, "1", "", 0}, // other members are free
		{`{"jsonrpc":"2.0","id":7,"result":{}}`, frame.Result, "7", "", 0},
		{`{"jsonrpc":"2.0","id":7,"result":{},"method":null}`, frame.Result, "7", "", 0},
		{`{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"no"}}`, frame.Error, `"x"`, "", 0},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error","data":[1]}}`, frame.Error, "null", "", 0},
		{`{"jsonrpc":"2.0","error":{"code":-32700,"message":""}}`, frame.Error, "", "", 0}, // MCP 2025-11-25: id optional
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-3.2e4,"message":"m"}}`, frame.Error, "1", "", 0},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":{"b":{"c":1,"c":2}}}}`, frame.Request, "1", "", 0}, // a name repeated past level 3 passes
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":[{"c":1,"c":2}]}}`, frame.Request, "1", "", 0},
		{`[{"jsonrpc":"2.0","id":1,"method":"a","id":2}]`, frame.Batch, "", "", 0}, // its elements are judged one by one
		// a member name given twice in the first three levels
		{`{"jsonrpc":"2.0","id":1,"method":"a","id":true,"jsonrpc":"1.0"}`, 0, "1", `duplicate member "id"`, frame.Request},
		{`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{},"id":"mcp-stdio/serve/7"}`, 0, `"a"`, `duplicate member "id"`, frame.Request},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call"}`, 0, "1", `duplicate member "method"`, frame.Request},
		{`{"jsonrpc":"2.0","id":1,"method":"m","\u006dethod":"n"}`, 0, "1", `duplicate member "method"`, frame.Request},
		{`{"jsonrpc":"2.0","method":"n","params":{},"params":{}}`, 0, "", `duplicate member "params"`, frame.Notification},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}`, 0, "1", `duplicate member "params.name"`, frame.Request},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"progressToken":1,"progressToken":2}}}`, 0, "1", `duplicate member "params._meta.progressToken"`, frame.Request},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":{"arguments":{"k":1,"k\u0000":2,"k":3}}}`, 0, "1", `duplicate member "params.arguments.k"`, frame.Request},
		{`{"jsonrpc":"2.0","id":5,"result":{},"id":6}`, 0, "5", `duplicate member "id"`, frame.Result},
		{`{"jsonrpc":"2.0","id":5,"result":{"nextCursor":"a","nextCursor":"b"}}`, 0, "5", `duplicate member "result.nextCursor"`, frame.Result},
		{`{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"m","code":2}}`, 0, "5", `duplicate member "error.code"`, frame.Error},
		{`{"jsonrpc":"2.0","id":5,"result":{"x":[{"a":1,"a":2}]}}`, frame.Result, "5", "", 0}, // level 4
		{`{"a":[{"x":1,"x":2}]}`, 0, "", `duplicate member "a[].x"`, frame.Invalid},

		// jsonrpc
		{`{"id":1,"method":"ping"}`, 0, "1", version, frame.Request},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, 0, "1", version, frame.Request},
		{`{"jsonrpc":2.0,"id":1,"method":"ping"}`, 0, "1", version, frame.Request},
		{`{"jsonrpc":"2.0 ","method":"n"}`, 0, "", version, frame.Notification},
		{`{"id":1,"result":{}}`, 0, "1", version, frame.Result},
		{`{"id":1,"error":{"code":1,"message":""}}`, 0, "1", version, frame.Error},
		// ids
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, 0, "", reqID, frame.Request},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, 0, "", reqID, frame.Request},
		{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`, 0, "", reqID, frame.Request},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, 0, "", reqID, frame.Request}, // MCP: not null
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, 0, "", reqID, frame.Request},  // MCP: an integer
		{`{"jsonrpc":"2.0","id":1e-1,"method":"ping"}`, 0, "", reqID, frame.Request},
		{`{"jsonrpc":"2.0","id":150e-2,"method":"ping"}`, 0, "", reqID, frame.Request},
		{`{"jsonrpc":"2.0","id":-12.345e2,"method":"ping"}`, 0, "", reqID, frame.Request},
		{`{"jsonrpc":"2.0","id":null,"result":{}}`, 0, "", resultID, frame.Result},
		{`{"jsonrpc":"2.0","result":{}}`, 0, "", resultID, frame.Result},
		{`{"jsonrpc":"2.0","id":false,"error":{"code":1,"message":""}}`, 0, "", errorID, frame.Error},
		{`{"jsonrpc":"2.0","id":0.5,"error":{"code":1,"message":""}}`, 0, "", errorID, frame.Error},
		// method and params
		{`{"jsonrpc":"2.0","id":1,"method":5}`, 0, "1", method, frame.Request},
		{`{"jsonrpc":"2.0","method":null}`, 0, "", method, frame.Notification},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}`, 0, "1", params, frame.Request}, // JSON-RPC allows it, MCP does not
		{`{"jsonrpc":"2.0","method":"m","params":null}`, 0, "", params, frame.Notification},
		// responses
		{`{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":""}}`, 0, "1", both, frame.Error},
		{`{"jsonrpc":"2.0","id":1,"result":null}`, 0, "1", result, frame.Result},
		{`{"jsonrpc":"2.0","id":1,"result":[]}`, 0, "1", result, frame.Result},
		{`{"jsonrpc":"2.0","id":1,"error":"boom"}`, 0, "1", errorObj, frame.Error},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":""}}`, 0, "1", errorObj, frame.Error},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":""}}`, 0, "1", errorObj, frame.Error},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1}}`, 0, "1", errorObj, frame.Error},
		{`{"jsonrpc":"2.0","id":1,"error":{"message":"m"}}`, 0, "1", errorObj, frame.Error},
		// not JSON-RPC at all
		{`{"hello":"world"}`, 0, "", notJSONRP, frame.Invalid},
		{`{"jsonrpc":"2.0","id":1}`, 0, "1", notJSONRP, frame.Invalid},
		{`{}`, 0, "", notJSONRP, frame.Invalid},
		{`"ping"`, 0, "", notJSONRP, frame.Invalid},
		{`null`, 0, "", notJSONRP, frame.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			is := is.New(t)
			m, err := frame.Parse([]byte(tt.in))
			is.NoErr(err)
			is.Equal(m.String(), tt.in) // bytes kept, valid or not
			if tt.reason == "" {
				is.NoErr(m.Err())
				is.Equal(m.Kind(), tt.kind)
				is.Equal(m.ID(), tt.id)
				return
			}
			is.Equal(m.Kind(), frame.Invalid)
			is.Equal(m.ID(), frame.ID("")) // an invalid message has no id to correlate on
			is.Equal(m.Method(), "")
			var env *frame.EnvelopeError
			is.True(errors.As(m.Err(), &env))
			is.True(errors.Is(m.Err(), frame.ErrNotJSONRPC))
			is.Equal(env.Reason, tt.reason)
			is.Equal(env.Shape, tt.shape)
			is.Equal(env.ID, tt.id)
		})
	}
}

func TestErrOfOtherMessages(t *testing.T) {
	is := is.New(t)
	is.Equal(frame.Message{}.Err(), frame.ErrEmpty)
	is.NoErr(frame.MustParse(`[{"id":true}]`).Err()) // a batch's elements are judged one by one
	for el := range frame.MustParse(`[{"jsonrpc":"2.0","id":true,"method":"x"},{"jsonrpc":"2.0","method":"n"}]`).Elements() {
		if el.Method() == "n" {
			is.NoErr(el.Err())
		} else {
			is.True(errors.Is(el.Err(), frame.ErrNotJSONRPC))
		}
	}
}

func TestEditsAreJudgedAgain(t *testing.T) {
	is := is.New(t)
	m := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"x"}`)
	bad, err := m.Set("params", []byte(`[1]`))
	is.NoErr(err)
	is.Equal(bad.Kind(), frame.Invalid)
	good, err := bad.Delete("params")
	is.NoErr(err)
	is.Equal(good.Kind(), frame.Request)
	r, err := frame.MustParse(`{"jsonrpc":"2.0","id":"a","result":{}}`).WithID("null")
	is.NoErr(err)
	is.Equal(r.Kind(), frame.Invalid) // a result needs a real id
	e := frame.ErrorResponse("", frame.CodeInvalidRequest, "x")
	is.Equal(e.Kind(), frame.Error) // the gateway's own answers are valid
	is.Equal(e.ID(), frame.ID("null"))
}

// WithID writes the same bytes, id and kind as Set("id", …) does, whether
// it splices the id in or falls back to Set.
func TestWithIDMatchesSet(t *testing.T) {
	msgs := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","method":"x","id":"a\"b","params":{}}`,
		`{"id":7,"jsonrpc":"2.0","result":{"id":3}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/x"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"x"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"x"}]`,
	}
	ids := []frame.ID{`"mcp-stdio/serve/abc/1"`, `42`, `-3`, `1e3`, `1.5`, `null`, `"é"`, `{"a":1}`, `true`, `"a"  `}
	for _, raw := range msgs {
		m := frame.MustParse(raw)
		for _, id := range ids {
			got, gerr := m.WithID(id)
			want, werr := m.Set("id", id.Raw())
			if (gerr == nil) != (werr == nil) {
				t.Fatalf("%s with id %s: error %v, Set's %v", raw, id, gerr, werr)
			}
			if gerr != nil {
				continue
			}
			if string(got.Bytes()) != string(want.Bytes()) || got.ID() != want.ID() || got.Kind() != want.Kind() || got.Method() != want.Method() {
				t.Errorf("%s with id %s: %s (%q, %v), Set gives %s (%q, %v)", raw, id, got.Bytes(), got.ID(), got.Kind(), want.Bytes(), want.ID(), want.Kind())
			}
		}
	}
}
