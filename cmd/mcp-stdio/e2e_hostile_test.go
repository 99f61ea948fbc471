package main_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/cmd/internal/procfs"
	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// Hostile bytes, end to end: the attacks that once crashed the gateway or
// let one client reach another's answer, sent to the built binary while a
// victim's call is in flight. Each test asserts that the process lives on,
// that the victim's call is answered with its own result, and that every
// request got exactly one answer.

// modernMeta is the _meta a 2026-07-28 request carries.
const modernMeta = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`

// modernToolCall returns the body of a 2026-07-28 tools/call; extraMeta
// and tail are spliced into its _meta and after its last member.
func modernToolCall(id, tool, args, extraMeta, tail string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":` + confJSONString(tool) +
		`,"arguments":` + args + `,"_meta":{` + modernMeta + extraMeta + `}}` + tail + `}`
}

// postModern POSTs a 2026-07-28 request body with the routing headers of
// method and name.
func postModern(t *testing.T, ctx context.Context, url, method, name string, body io.Reader) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := hostileClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", method, err)
	}
	return resp
}

var hostileClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// responses reads the JSON-RPC messages of an answer (a JSON body or an
// event stream), sending each on out, and closes out at its end.
func responses(resp *http.Response, out chan<- []byte) {
	defer close(out)
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		out <- b
		return
	}
	rd := frame.NewSSEReader(resp.Body, 0)
	for {
		ev, err := rd.Next()
		if err != nil {
			return
		}
		out <- ev.Data
	}
}

// slowVictim starts a 2026-07-28 call of the example server's slow tool on
// serve at url, waits until its first progress notification shows it is
// running in the child, and returns a function that waits for its answer
// and checks that it is the victim's own: exactly one response, under the
// victim's id, with the slow tool's result.
func slowVictim(t *testing.T, ctx context.Context, url string) (finish func()) {
	t.Helper()
	body := modernToolCall(`"victim-1"`, "slow", `{"seconds":2,"steps":4}`, `,"progressToken":"victim-progress"`, "")
	resp := postModern(t, ctx, url, "tools/call", "slow", strings.NewReader(body))
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("victim's call: HTTP %d: %s", resp.StatusCode, b)
	}
	msgs := make(chan []byte, 16)
	go responses(resp, msgs)
	for m := range msgs {
		if gjson.GetBytes(m, "method").Str == "notifications/progress" {
			if tok := gjson.GetBytes(m, "params.progressToken").Str; tok != "victim-progress" {
				t.Errorf("the victim saw progress for %q", tok)
			}
			break
		}
		t.Fatalf("the victim's stream began with %s", m)
	}
	return func() {
		t.Helper()
		var answers []string
		for m := range msgs {
			if gjson.GetBytes(m, "id").Exists() {
				answers = append(answers, string(m))
			}
		}
		if len(answers) != 1 {
			t.Fatalf("the victim got %d answers: %q", len(answers), answers)
		}
		a := answers[0]
		if gjson.Get(a, "id").Raw != `"victim-1"` || !strings.HasPrefix(gjson.Get(a, "result.content.0.text").Str, "slow: finished 4 steps") {
			t.Fatalf("the victim's answer is not its own: %s", a)
		}
	}
}

// refused reads an answer that must be HTTP 400 with one JSON-RPC error
// -32600 whose message has want, under id.
func refused(t *testing.T, resp *http.Response, id, want string) {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("HTTP %d, want 400: %.300s", resp.StatusCode, b)
	}
	if gjson.GetBytes(b, "error.code").Int() != frame.CodeInvalidRequest || gjson.GetBytes(b, "id").Raw != id ||
		!strings.Contains(gjson.GetBytes(b, "error.message").Str, want) {
		t.Fatalf("answer %.300s, want -32600 under %s saying %q", b, id, want)
	}
}

// alive checks that the gateway process still runs and answers a call.
func alive(t *testing.T, ctx context.Context, g *gatewayProc) {
	t.Helper()
	select {
	case <-g.exited:
		t.Fatalf("serve exited: %v\n%s", g.cmd.ProcessState, g.log.tail(30))
	default:
	}
	resp := postModern(t, ctx, g.url, "tools/call", "echo", strings.NewReader(modernToolCall("2", "echo", `{"text":"still here"}`, "", "")))
	msgs := make(chan []byte, 4)
	go responses(resp, msgs)
	var got []string
	for m := range msgs {
		got = append(got, string(m))
	}
	if resp.StatusCode != http.StatusOK || len(got) != 1 || gjson.Get(got[0], "result.content.0.text").Str != "still here" {
		t.Fatalf("serve no longer answers: HTTP %d %q", resp.StatusCode, got)
	}
}

// deepMeta is n nested arrays under _meta's key "deep": 2n bytes.
func deepMeta(n int) string {
	return `,"deep":` + strings.Repeat("[", n) + strings.Repeat("]", n)
}

// TestServeRefusesDeeplyNestedRequests is the attack that killed serve: a
// POST of about 12 MB holding 6,000,000 nested arrays in _meta, on the
// Streamable HTTP endpoint and on HTTP+SSE's /message, with another
// client's call in flight on the shared 2026-07-28 child.
func TestServeRefusesDeeplyNestedRequests(t *testing.T) {
	bin := relayBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	g := startServeOf(t, bin, bin, "example-server")
	finish := slowVictim(t, ctx, g.url)

	attack := modernToolCall(`"attacker"`, "echo", `{"text":"x"}`, deepMeta(6_000_000), "")
	refused(t, postModern(t, ctx, g.url, "tools/call", "echo", strings.NewReader(attack)), `"attacker"`, "JSON nested deeper than 512 levels")

	// HTTP+SSE: the same body on a session's /message.
	stream, endpoint := openSSESession(t, ctx, strings.TrimSuffix(g.url, "/mcp")+"/sse")
	defer stream.Close()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(
		`{"jsonrpc":"2.0","id":9,"method":"ping","params":{"_meta":{"k":`+strings.Repeat("[", 6_000_000)+strings.Repeat("]", 6_000_000)+`}}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hostileClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	refused(t, resp, "9", "JSON nested deeper than 512 levels")

	finish()
	alive(t, ctx, g)
	if hwm, err := procfs.StatusKB(g.pid(), "VmHWM"); err == nil {
		t.Logf("serve's peak resident memory: %d kB", hwm)
		if hwm > 160<<10 {
			t.Errorf("serve peaked at %d kB for a 12 MB body", hwm)
		}
	}
}

// openSSESession opens an HTTP+SSE stream at url and returns it with the
// endpoint its first event names.
func openSSESession(t *testing.T, ctx context.Context, url string) (io.Closer, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hostileClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := frame.NewSSEReader(resp.Body, 0).Next()
	if err != nil || ev.Type != "endpoint" {
		resp.Body.Close()
		t.Fatalf("no endpoint event: %+v %v", ev, err)
	}
	endpoint := string(ev.Data)
	if strings.HasPrefix(endpoint, "/") {
		endpoint = "http://" + req.URL.Host + endpoint
	}
	return resp.Body, endpoint
}

// TestServeRefusesADuplicatedIDOnASharedChild is the attack that handed a
// victim's answer to another client: every client without OAuth shares
// one 2026-07-28 child, and a body ending in a second "id" member, naming
// an id serve minted for the victim's call, once reached the child, whose
// parser kept the last id. Serve now refuses it before any stage reads it
// (and the ids it mints are no longer a counter to guess: see
// TestServeMintedIDsAreNotGuessable); the attack names ids of the old form.
func TestServeRefusesADuplicatedIDOnASharedChild(t *testing.T) {
	bin := relayBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	g := startServeOf(t, bin, bin, "example-server")
	finish := slowVictim(t, ctx, g.url)
	for n := range 4 {
		tail := fmt.Sprintf(`,"id":"mcp-stdio/serve/%d"`, n)
		attack := modernToolCall(`"attacker-`+fmt.Sprint(n)+`"`, "echo", `{"text":"mine"}`, "", tail)
		refused(t, postModern(t, ctx, g.url, "tools/call", "echo", strings.NewReader(attack)), `"attacker-`+fmt.Sprint(n)+`"`, `duplicate member "id"`)
	}
	finish()
	alive(t, ctx, g)
}

// TestServeRefusesADuplicatedMethod: a body whose second "method" member
// differs from its first (and from Mcp-Method) once passed the header
// check on the first and ran the second in the child.
func TestServeRefusesADuplicatedMethod(t *testing.T) {
	bin := relayBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	g := startServeOf(t, bin, bin, "example-server")
	attack := `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"name":"slow","arguments":{"seconds":30},"_meta":{` + modernMeta + `}},"method":"tools/call"}`
	refused(t, postModern(t, ctx, g.url, "tools/list", "", strings.NewReader(attack)), "3", `duplicate member "method"`)
	// The same inside params, where the name of the tool is read.
	attack = modernToolCall("4", "echo", `{"text":"a"}`, "", "")
	attack = strings.Replace(attack, `"name":"echo"`, `"name":"echo","name":"slow"`, 1)
	refused(t, postModern(t, ctx, g.url, "tools/call", "echo", strings.NewReader(attack)), "4", `duplicate member "params.name"`)
	alive(t, ctx, g)
	if strings.Contains(g.log.tail(400), "slow:") {
		t.Errorf("the child ran the slow tool:\n%s", g.log.tail(40))
	}
}

// The deep child is a session-era stdio server that answers the tool
// "deep" with a result nested 6,000,000 levels (and sends a notification
// as deep first), the tool "dup" with an answer whose second "id" member
// names another request (and a notification whose "method" is given
// twice first), and any other call normally: the attacks of a hostile
// server behind serve.
const deepChild = "deep-child"

func init() {
	transporttest.RunProgram(map[string]func([]string) int{deepChild: runDeepChild})
}

func runDeepChild([]string) int {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	deep := strings.Repeat("[", 6_000_000) + strings.Repeat("]", 6_000_000)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return 0
		}
		id := gjson.GetBytes(line, "id").Raw
		switch gjson.GetBytes(line, "method").Str {
		case "initialize":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%s,"capabilities":{"tools":{}},"serverInfo":{"name":"deep-child","version":"1"}}}`+"\n",
				id, gjson.GetBytes(line, "params.protocolVersion").Raw)
		case "tools/call":
			switch gjson.GetBytes(line, "params.name").Str {
			case "deep":
				fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":%s}}`+"\n", deep)
				fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[],"x":%s}}`+"\n", id, deep)
			case "dup":
				fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"},"method":"notifications/tools/list_changed"}`+"\n")
				fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"whose?"}]},"id":1}`+"\n", id)
			default:
				fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"fine"}]}}`+"\n", id)
			}
		case "tools/list":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"deep","inputSchema":{"type":"object"}},{"name":"fine","inputSchema":{"type":"object"}}]}}`+"\n", id)
		case "ping":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", id)
		default:
			if id != "" {
				fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`+"\n", id)
			}
		}
		if err := out.Flush(); err != nil {
			return 0
		}
	}
}

// TestServeSurvivesHostileChildLines: a child that writes lines of
// 6,000,000 nested arrays, and lines that repeat "id" or "method". The
// call each claims to answer gets an error, the notifications are dropped
// with a warning, and the session goes on.
func TestServeSurvivesHostileChildLines(t *testing.T) {
	bin := relayBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	g := startServeOf(t, bin, transporttest.ArgCommand(deepChild).Args...)
	c := &sessionClient{url: g.url}
	_, sid := c.post(t, ctx, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	c.sid = sid
	c.post(t, ctx, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	answer, _ := c.post(t, ctx, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"deep","arguments":{}}}`)
	if gjson.Get(answer, "id").Raw != "2" || gjson.Get(answer, "error.code").Int() != frame.CodeInternalError ||
		!strings.Contains(gjson.Get(answer, "error.message").Str, "JSON nested deeper than 512 levels") {
		t.Fatalf("the deep answer became %s", answer)
	}
	answer, _ = c.post(t, ctx, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"dup","arguments":{}}}`)
	if gjson.Get(answer, "id").Raw != "3" || gjson.Get(answer, "error.code").Int() != frame.CodeInternalError ||
		!strings.Contains(gjson.Get(answer, "error.message").Str, `duplicate member "id"`) {
		t.Fatalf("the answer with two ids became %s", answer)
	}
	answer, _ = c.post(t, ctx, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fine","arguments":{}}}`)
	is.New(t).Equal(gjson.Get(answer, "result.content.0.text").Str, "fine")
	log := g.log.tail(400)
	for _, want := range []string{"JSON nested deeper than 512 levels", `duplicate member \"method\"`} {
		if !strings.Contains(log, want) {
			t.Errorf("serve's log does not say %s:\n%s", want, log)
		}
	}
	select {
	case <-g.exited:
		t.Fatalf("serve exited: %v", g.cmd.ProcessState)
	default:
	}
	is.New(t).NoErr(g.cmd.Process.Signal(syscall.Signal(0)))
}

// hostileServer is a session-era Streamable HTTP server that answers the
// relay's calls as an attacker would: the tool "deep" with a JSON body of
// 6,000,000 nested arrays (12 MB, under the size cap), "deep-sse" with an
// event as deep, "five" (once "six" is in flight) with an answer carrying
// a second "id" member that names "six"'s id, and "six" normally once
// "five" has been answered.
type hostileServer struct {
	srv      *httptest.Server
	sixCame  chan struct{}
	sixGo    chan struct{}
	deepBody string
}

func startHostileServer(t *testing.T) *hostileServer {
	hs := &hostileServer{sixCame: make(chan struct{}), sixGo: make(chan struct{}),
		deepBody: strings.Repeat("[", 6_000_000) + strings.Repeat("]", 6_000_000)}
	hs.srv = httptest.NewServer(http.HandlerFunc(hs.serveHTTP))
	t.Cleanup(hs.srv.Close)
	return hs
}

func (hs *hostileServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	id := gjson.GetBytes(body, "id").Raw
	switch gjson.GetBytes(body, "method").Str {
	case "initialize":
		w.Header().Set("Mcp-Session-Id", "hostile")
		writeJSON(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}}`)
	case "tools/call":
		switch gjson.GetBytes(body, "params.name").Str {
		case "deep":
			writeJSON(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[],"x":`+hs.deepBody+`}}`)
		case "deep-sse":
			startEvents(w)
			event(w, `data: {"jsonrpc":"2.0","id":`+id+`,"result":{"x":`+hs.deepBody+"}}\n\n")
		case "six":
			close(hs.sixCame)
			<-hs.sixGo
			writeJSON(w, answer(id, "six's own"))
		case "five":
			<-hs.sixCame
			writeJSON(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":"for five or six?"}]},"id":6}`)
		default:
			writeJSON(w, answer(id, "fine"))
		}
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

// TestRelayRefusesHostileResponses: a server's answers that nest 6,000,000
// levels deep, and one whose second "id" member names another call in
// flight. Each call gets exactly one answer, its own; the relay lives on.
func TestRelayRefusesHostileResponses(t *testing.T) {
	is := is.New(t)
	hs := startHostileServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	relay, stdin, stdout, stderr := startRelayProcess(t, ctx, "--log-level", "debug", hs.srv.URL+"/mcp")
	lines := bufio.NewReader(stdout)
	next := func() string {
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("stdout: %v\n%s", err, stderr)
		}
		return line
	}
	send := func(line string) {
		_, err := io.WriteString(stdin, line+"\n")
		is.NoErr(err)
	}
	call := func(id, tool string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	is.Equal(gjson.Get(next(), "id").Raw, "0")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	for _, tool := range []string{"deep", "deep-sse"} {
		send(call("1", tool))
		a := next()
		if gjson.Get(a, "id").Raw != "1" || !strings.Contains(gjson.Get(a, "error.message").Str, "JSON nested deeper than 512 levels") {
			t.Fatalf("%s: the answer is %.300s", tool, a)
		}
	}

	send(call("6", "six"))
	send(call("5", "five"))
	a := next()
	if gjson.Get(a, "id").Raw != "5" || !strings.Contains(gjson.Get(a, "error.message").Str, `duplicate member "id"`) {
		t.Fatalf("five's answer is %s", a)
	}
	close(hs.sixGo)
	a = next()
	is.Equal(gjson.Get(a, "id").Raw, "6")
	is.Equal(gjson.Get(a, "result.content.0.text").Str, "six's own")

	send(call("7", "fine"))
	is.Equal(gjson.Get(next(), "result.content.0.text").Str, "fine") // alive
	is.NoErr(stdin.Close())
	rest, _ := io.ReadAll(lines)
	is.Equal(string(rest), "") // nothing more: one answer each
	is.NoErr(relay.Wait())
}
