package frame_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// FuzzReader feeds arbitrary stdin bytes to the NDJSON reader. Whatever
// arrives, every message it yields must be one line of valid JSON that
// parses back to itself, and every failure must be a LineError or the end.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
		"{\"id\":1,\"result\":{}}\r\n\n\n{\"method\":\"x\"}",
		"not json\n[1,2]\n\"s\"\n",
		"{\n\"id\":1}\n",
		"{\"id\":\"big\",\"params\":\"" + string(bytes.Repeat([]byte("a"), 300)) + "\"}\n",
		"\xff\xfe{}\n\x00\n",
		"{\"a\":\"\\u2028\"}\r\r\n",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"\xff\xe2\x82\"}}\n",
	} {
		f.Add([]byte(s), 128)
	}
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 16 || max > 1<<20 {
			max = 1 << 20
		}
		r := frame.NewReader(bytes.NewReader(in), max)
		for range len(in) + 2 {
			m, err := r.Read()
			if err != nil {
				var le *frame.LineError
				if errors.As(err, &le) {
					if le.Code() != frame.CodeParseError && le.Code() != frame.CodeInvalidRequest {
						t.Fatalf("bad code %d", le.Code())
					}
					if le.ID != "" && !gjson.Valid(string(le.ID)) {
						t.Fatalf("recovered id %q is not a JSON token", le.ID)
					}
					checkOneLine(t, frame.ErrorResponse(le.ID, le.Code(), "bad line").Bytes()) // the answer to the line
					if len(le.Head) > frame.LineHeadSize || le.Size < int64(len(le.Head)) {
						t.Fatalf("head of %d bytes for a line of %d", len(le.Head), le.Size)
					}
					if x := le.Excerpt(); !utf8.ValidString(x) || strings.IndexFunc(x, unicode.IsControl) >= 0 {
						t.Fatalf("excerpt %q is not fit for a log line", x)
					}
					continue
				}
				return
			}
			b := m.Bytes()
			if len(b) > 3*max || !gjson.ValidBytes(b) { // an invalid byte grows to three
				t.Fatalf("bad message %q", b)
			}
			checkOneLine(t, b)
			again, err := frame.Parse(b)
			if err != nil || !bytes.Equal(again.Bytes(), b) || again.Kind() != m.Kind() || again.ID() != m.ID() {
				t.Fatalf("not stable: %q", b)
			}
		}
		t.Fatal("reader did not terminate")
	})
}

// FuzzSSEReader feeds arbitrary bytes to the SSE reader: it must terminate,
// never panic, and never return more data than the cap.
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"event: endpoint\ndata: /m?x=1\n\n",
		"data: a\r\ndata: b\r\n\r\n",
		"\xEF\xBB\xBFdata:x\r\r",
		": ping\n\nid: 1\nretry: 10\ndata\n\n",
		"data: " + string(bytes.Repeat([]byte("z"), 200)) + "\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 100
		r := frame.NewSSEReader(bytes.NewReader(in), max)
		for range len(in) + 2 {
			ev, err := r.Next()
			if err != nil {
				return
			}
			if len(ev.Data) > max || len(ev.Data) == 0 || ev.Type == "" {
				t.Fatalf("bad event %+v", ev)
			}
		}
		t.Fatal("reader did not terminate")
	})
}

// FuzzParse checks that Parse and Set keep their promises on any input:
// every message is one line of JSON that encoding/json accepts, in valid
// UTF-8, and replacing invalid UTF-8 changes nothing but the invalid bytes.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`), []byte(`"c"`))
	f.Add([]byte("{\n\"id\":\"x\",\"result\":[1.50]}"), []byte(`{"a":[1]}`))
	f.Add([]byte(`[{"id":1}]`), []byte(`1`))
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"a\xffb\xed\xa0\x80\"}}"), []byte("\"\xc0\xaf\""))
	f.Add([]byte("{\"k\xfe\":\"\\ud800\xf4\x90\x80\x80\"}"), []byte("{\"\xe2\x82\":1}"))
	f.Fuzz(func(t *testing.T, in, val []byte) {
		m, err := frame.Parse(in)
		if err != nil {
			return
		}
		checkAccepted(t, in, m.Bytes())
		owned, err := frame.ParseOwned(bytes.Clone(in))
		if err != nil || !bytes.Equal(owned.Bytes(), m.Bytes()) {
			t.Fatalf("ParseOwned(%q) = %q, %v; Parse gave %q", in, owned.Bytes(), err, m.Bytes())
		}
		n, err := m.Set("params.cursor", val)
		if err != nil {
			return
		}
		if !gjson.ValidBytes(n.Bytes()) {
			t.Fatalf("Set produced %q", n.Bytes())
		}
		checkOneLine(t, n.Bytes())
	})
}

// FuzzEnvelope checks frame's judgement of a message against a model of the
// rules EnvelopeError lists, built on encoding/json and math/big instead of
// gjson: every valid message has the kind, id and method the model gives,
// and every invalid one is invalid for the model too.
func FuzzEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}`,
		`{"jsonrpc":"2.0","id":1.50e1,"result":{}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`,
		`{"jsonrpc":"2.0","error":{"code":1e2,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
		`{"jsonrpc":"2\u002e0","i\u0064":"a","method":"x"}`,
		`{"id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`,
		`{"jsonrpc":"2.0","method":"n","params":[],"method":1}`,
		`[{"jsonrpc":"2.0","method":"n"}]`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{},"id":"mcp-stdio/serve/1"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{},"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"name":"a","n\u0061me":"b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"progressToken":1,"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":5,"result":{},"id":6}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"},"error":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":{"b":{"c":1,"c":1}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}}`,
		`{"jsonrpc":"2.0","id":9,"result":` + strings.Repeat(`{"a":`, 520) + `1` + strings.Repeat("}", 520) + `}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := frame.Parse(in)
		if errors.Is(err, frame.ErrTooDeep) {
			var env *frame.EnvelopeError
			if !errors.As(err, &env) || !errors.Is(err, frame.ErrNotJSONRPC) || env.Reason == "" {
				t.Fatalf("%q: too deep, but %v", in, err)
			}
			return
		}
		if err != nil {
			return
		}
		if (m.Kind() == frame.Invalid) != (m.Err() != nil) {
			t.Fatalf("%q: kind %v but Err %v", m.Bytes(), m.Kind(), m.Err())
		}
		want, ok := modelEnvelope(m.Bytes())
		if !ok {
			return // beyond what the model can judge
		}
		if m.Kind() != want.kind || m.ID() != want.id || m.Method() != want.method {
			t.Fatalf("%q: got %v id %q method %q, the model says %v id %q method %q",
				m.Bytes(), m.Kind(), m.ID(), m.Method(), want.kind, want.id, want.method)
		}
		var env *frame.EnvelopeError
		if errors.As(m.Err(), &env) {
			if env.Reason == "" || (env.ID != "" && env.ID != want.answerID) {
				t.Fatalf("%q: %+v, the model's id %q", m.Bytes(), env, want.answerID)
			}
		}
	})
}

// modelDuplicate reports whether an object among the first three levels
// of b, valid JSON, gives a member name twice, as encoding/json decodes
// names. ok is false when encoding/json cannot tell.
func modelDuplicate(b []byte) (dup, ok bool) {
	type open struct {
		object bool
		names  map[string]bool
		key    bool // an object's next token is a name
	}
	var stack []*open
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return dup, true
		}
		if err != nil {
			return false, false
		}
		var top *open
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if top != nil && top.object {
					top.key = true // the value is read: a name comes next
				}
				stack = append(stack, &open{object: v == '{', names: map[string]bool{}, key: true})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if top != nil && top.object && top.key {
				if len(stack) <= 3 && top.names[v] {
					dup = true
				}
				top.names[v] = true
				top.key = false
				continue
			}
		}
		if top != nil && top.object {
			top.key = true
		}
	}
}

type modelled struct {
	kind     frame.Kind
	id       frame.ID
	method   string
	answerID frame.ID // the id of an invalid message, when a request may have it
}

// modelEnvelope judges b, valid JSON, by the rules of EnvelopeError. ok is
// false when the model cannot tell (nesting or exponents encoding/json or
// math/big would choke on).
func modelEnvelope(b []byte) (modelled, bool) {
	switch b[0] {
	case '[':
		return modelled{kind: frame.Batch}, true
	case '{':
	default:
		return modelled{kind: frame.Invalid}, true
	}
	dup, ok := modelDuplicate(b)
	if !ok {
		return modelled{}, false
	}
	members := map[string]json.RawMessage{}
	d := json.NewDecoder(bytes.NewReader(b))
	if _, err := d.Token(); err != nil {
		return modelled{}, false
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return modelled{}, false
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return modelled{}, false
		}
		if _, dup := members[k.(string)]; !dup {
			members[k.(string)] = v // the first of a name counts
		}
	}
	kindOf := func(name string) byte { // 0 when absent
		if v, ok := members[name]; ok {
			return v[0]
		}
		return 0
	}
	isInt := func(raw json.RawMessage) (is, ok bool) {
		if c := raw[0]; c != '-' && (c < '0' || c > '9') {
			return false, true
		}
		if i := bytes.IndexAny(raw, "eE"); i >= 0 && len(raw)-i > 6 {
			return false, false // an exponent too big for math/big to bother
		}
		r, good := new(big.Rat).SetString(string(raw))
		if !good {
			return false, false
		}
		return r.IsInt(), true
	}
	var version string
	_ = json.Unmarshal(members["jsonrpc"], &version)
	_, hasID := members["id"]
	idInt, ok := false, true
	if hasID {
		if idInt, ok = isInt(members["id"]); !ok {
			return modelled{}, false
		}
	}
	idOK := kindOf("id") == '"' || idInt
	var out modelled
	if idOK {
		out.answerID = frame.ID(members["id"])
	}
	var method string
	methodIsString := json.Unmarshal(members["method"], &method) == nil && kindOf("method") == '"'
	_, hasResult := members["result"]
	_, hasError := members["error"]
	valid := false
	switch {
	case methodIsString:
		valid = version == "2.0" && (!hasID || idOK) && (kindOf("params") == 0 || kindOf("params") == '{')
		out.kind, out.method = frame.Notification, method
		if hasID {
			out.kind = frame.Request
		}
	case hasResult && hasError:
	case hasResult:
		valid = version == "2.0" && idOK && kindOf("result") == '{'
		out.kind = frame.Result
	case hasError:
		var e map[string]json.RawMessage
		code, msg := false, false
		if kindOf("error") == '{' && json.Unmarshal(members["error"], &e) == nil {
			// encoding/json keeps the last of a repeated name; the rules
			// say the first. Leave such errors to the unit tests.
			if bytes.Count(members["error"], []byte(`"code"`)) > 1 || bytes.Count(members["error"], []byte(`"message"`)) > 1 {
				return modelled{}, false
			}
			if c, present := e["code"]; present {
				if code, ok = isInt(c); !ok {
					return modelled{}, false
				}
			}
			msg = len(e["message"]) > 0 && e["message"][0] == '"'
		}
		valid = version == "2.0" && (!hasID || idOK || kindOf("id") == 'n') && code && msg
		out.kind = frame.Error
	}
	if !valid || dup {
		return modelled{kind: frame.Invalid, answerID: out.answerID}, true
	}
	if hasID {
		out.id = frame.ID(members["id"])
	}
	out.answerID = ""
	return out, true
}

// FuzzParamsPath checks the shortcut Message.Get takes under params: for
// any message and any path, m.Get("params."+path) and m.Params() read what
// gjson reads from the whole message, value, type and index, also after
// the id is replaced (a minted id longer or shorter than the client's),
// and that replacing the id writes what Set writes.
func FuzzParamsPath(f *testing.F) {
	for _, s := range []struct{ msg, path string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, `_meta.io\.modelcontextprotocol/protocolVersion`},
		{`{"params":{"a":[1,{"b":2}]},"jsonrpc":"2.0","id":"x","method":"m"}`, `a.1.b`},
		{`{"jsonrpc":"2.0","method":"m","params":{"a":1},"params":{"a":2}}`, `a`},
		{`{"jsonrpc":"2.0","id":7,"method":"m","params":[1,2]}`, `0`},
		{`{"jsonrpc":"2.0","id":7,"method":"m","params":{"a.b":{"c":true}}}`, `a\.b.c`},
		{`{"jsonrpc":"2.0","id":7,"method":"m","params":{"a":{"b":1}}}`, `a.#`},
		{"{\n\"jsonrpc\":\"2.0\",\"id\":7,\n\"method\":\"m\",\"params\":{\"a\":\"\xff\"}}", `a`},
		{`{"jsonrpc":"2.0","id":7,"method":"m","params":{"":{"":1}}}`, `.`},
		{`{"jsonrpc":"2.0","id":7,"method":"m","params":{"_meta":{"a":1},"x":2}}`, `_meta`},
		{`{"jsonrpc":"2.0","id":7,"method":"m","params":{"_meta":{"a":{"b":[1]}}}}`, `_meta.a.b.0`},
		{`{"jsonrpc":"2.0","id":7,"method":"m","params":{"_meta":{},"_meta":{"a":1}}}`, `_meta.a`},
		{`{"jsonrpc":"2.0","id":7,"method":"m","params":{"_meta":{"a":1}},"params":{"_meta":{"a":2}}}`, `_meta.a`},
		{`{"jsonrpc":"2.0","id":7,"method":"m","params":{"_m\u0065ta":{"a":1}}}`, `_meta.a`},
		{`{"jsonrpc":"2.0","id":7,"method":"m","params":{"_meta":[{"a":1}]}}`, `_meta.0.a`},
		{`{"jsonrpc":"2.0","id":7,"method":"m","params":{"x":{"_meta":{"a":1}},"_meta":"s"}}`, `_meta`},
		{`{"jsonrpc":"2.0","id":7,"method":"m","params":{"_meta":{"tr\u0061ce":{"a":1}}}}`, `_meta.trace.a`},
		{`{"jsonrpc":"2.0","id":7,"method":"m","params":{"_meta":{"a.b":1,"c":"a\"b"}}}`, `_meta.a\.b`},
	} {
		f.Add([]byte(s.msg), s.path, "\"mcp-stdio-router-123\"")
	}
	f.Fuzz(func(t *testing.T, in []byte, path, newID string) {
		m, err := frame.Parse(in)
		if err != nil {
			return
		}
		check := func(m frame.Message, what string) {
			t.Helper()
			whole := gjson.GetBytes(m.Bytes(), "params."+path)
			got := m.Get("params." + path)
			if got.Raw != whole.Raw || got.Type != whole.Type || got.Str != whole.Str || got.Index != whole.Index {
				t.Fatalf("%s: Get(params.%s) of %s = %+v, gjson reads %+v", what, path, m.Bytes(), got, whole)
			}
			whole = gjson.GetBytes(m.Bytes(), "params")
			got = m.Params()
			if got.Raw != whole.Raw || got.Type != whole.Type || got.Index != whole.Index {
				t.Fatalf("%s: Params() of %s = %+v, gjson reads %+v", what, m.Bytes(), got, whole)
			}
		}
		check(m, "parsed")
		if n, err := m.WithID(frame.ID(newID)); err == nil {
			check(n, "with id "+newID)
			if set, err := m.Set("id", []byte(newID)); err == nil && !bytes.Equal(n.Bytes(), set.Bytes()) {
				t.Fatalf("WithID(%s) of %s wrote %s, Set writes %s", newID, m.Bytes(), n.Bytes(), set.Bytes())
			}
			if n.ID() != "" && n.ID() != frame.ID(gjson.GetBytes(n.Bytes(), "id").Raw) {
				t.Fatalf("WithID(%s) of %s: ID() %s, the bytes hold %s", newID, m.Bytes(), n.ID(), gjson.GetBytes(n.Bytes(), "id").Raw)
			}
			if again, err := n.WithID(frame.ID(`"again"`)); err == nil {
				check(again, "with a second id")
			}
		}
		if n, err := m.Set("extra", []byte(`{"x":1}`)); err == nil {
			check(n, "set")
		}
	})
}
