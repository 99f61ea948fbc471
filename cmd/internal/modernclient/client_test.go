package modernclient

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A call is a 2026-07-28 POST with the routing headers; its outcome is
// told apart from the answer: one response (JSON or SSE), two, none, an
// error, a 503 with its Retry-After, a connection closed under it; a
// connection the answer closes is opened again for the next call.
func TestCallOutcomes(t *testing.T) {
	is := is.New(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("MCP-Protocol-Version") != Version || r.Header.Get("Mcp-Method") != "tools/call" ||
			r.Header.Get("Mcp-Name") != gjson.GetBytes(body, "params.name").Str ||
			gjson.GetBytes(body, `params._meta.io\.modelcontextprotocol/protocolVersion`).Str != Version {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		id := gjson.GetBytes(body, "id").Raw
		resp := `{"jsonrpc":"2.0","id":` + id + `,"result":{}}`
		switch gjson.GetBytes(body, "params.arguments.answer").Str {
		case "json":
		case "close":
			w.Header().Set("Connection", "close")
		case "sse":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\nevent: message\ndata: "+resp+"\n\n")
			return
		case "twice":
			resp += resp
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: "+`{"jsonrpc":"2.0","id":`+id+`,"result":{}}`+"\n\ndata: "+`{"jsonrpc":"2.0","id":`+id+`,"result":{}}`+"\n\n")
			return
		case "other":
			resp = `{"jsonrpc":"2.0","id":0,"result":{}}`
		case "error":
			resp = `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32602,"message":"no"}}`
		case "busy":
			w.Header().Set("Retry-After", "3")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		case "cut":
			c, _, _ := http.NewResponseController(w).Hijack()
			c.Close()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, resp)
	}))
	defer srv.Close()
	c, err := New(srv.URL + "/mcp")
	is.NoErr(err)
	defer c.Close()
	ctx := context.Background()
	call := func(id int64, answer string) Result {
		return c.Call(ctx, id, "echo", `{"answer":"`+answer+`"}`, 10*time.Second)
	}
	is.Equal(call(1, "json").Kind, OK)
	is.Equal(call(2, "sse").Kind, OK)
	is.Equal(c.Conns, 1) // one keep-alive connection
	is.Equal(call(3, "close").Kind, OK)
	is.Equal(call(4, "json").Kind, OK)
	is.Equal(c.Conns, 2) // told to close: another
	is.Equal(call(5, "twice").Kind, Duplicate)
	is.Equal(call(6, "other").Kind, Unanswered)
	is.Equal(call(7, "error").Kind, RPCError)
	r := call(8, "busy")
	is.Equal(r.Kind, Refused)
	is.Equal(r.RetryAfter, 3*time.Second)
	is.Equal(call(9, "cut").Kind, EOF)
	is.Equal(call(10, "json").Kind, OK) // on a new connection
	is.True(strings.Contains(call(1<<40, "other").Err.Error(), "no response to id 1099511627776"))
}

func TestNewRefusesOtherSchemes(t *testing.T) {
	is := is.New(t)
	_, err := New("https://example.com/mcp")
	is.True(err != nil)
	_, err = New("http://127.0.0.1:1")
	is.NoErr(err)
}
