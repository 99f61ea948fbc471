package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// The fault server is a Streamable HTTP server (session era) whose tools
// each misbehave in one way. TestRelayFaults drives the relay binary
// against it with concurrent calls of every tool, some cancelled, and holds
// the relay to its promises: exactly one answer per call not cancelled,
// none for a cancelled one, no answer to an id never sent, every stdout
// line one valid JSON object, and no tools/call ever reaching the server
// twice.

// faultTools are the fault server's tools, one fault each; the comment says
// what the relay must make of it.
var faultTools = []string{
	"json",          // a JSON answer: passed on
	"sse",           // an event stream with a notification, then the answer: both passed on
	"twice",         // the answer twice on one stream, then one to an id never sent: the first only
	"wrong-id",      // a JSON body answering another id: an error
	"accepted",      // 202, the answer later on the GET stream: passed on
	"accepted-lost", // 202 and no answer ever: an error after --timeout-read
	"bare-503",      // 503 without Retry-After, after the tool ran: an error, never sent again
	"reset",         // the connection cut before the response headers: an error, never sent again
	"cut",           // an event stream cut mid-way, with no event id: an error
	"resume",        // an event stream closed after a priming event: resumed by GET, answered there
	"html",          // a 200 HTML page: an error
	"bad-json",      // a 200 application/json body that is not JSON: an error
	"huge",          // an answer over --max-message-size: an error
	"batch",         // the answer inside a one-element batch: passed on as one object
	"batch-two",     // a batch of the answer and another message: an error
	"bad-utf8",      // an answer with bytes that are not UTF-8: passed on, each such byte U+FFFD
	"bad-envelope",  // an answer whose result is not an object: an error
	"deep",          // a JSON answer nested 600 levels: an error
	"deep-sse",      // an event stream with a notification and an answer each nested 600 levels: an error, the notification dropped
	"dup-id",        // an answer with a second "id" member naming an id never sent: an error, nothing for the other id
	"hang",          // never answers: cancelled by the client, so no answer at all
}

// faultServer counts the tools/call POSTs of each raw id and answers each
// tool with its fault.
type faultServer struct {
	srv *httptest.Server

	mu       sync.Mutex
	arrivals map[string]int    // raw id → tools/call POSTs
	resumes  map[string]string // priming event id → raw id of the call it belongs to
	// pushed carries the messages for the standalone GET stream.
	pushed chan string
	// hung receives the raw id of each "hang" call that has arrived.
	hung chan string
}

const faultSession = "fault-session"

func startFaultServer(t *testing.T) *faultServer {
	fs := &faultServer{arrivals: map[string]int{}, resumes: map[string]string{}, pushed: make(chan string, 256), hung: make(chan string, 256)}
	fs.srv = httptest.NewServer(http.HandlerFunc(fs.serveHTTP))
	t.Cleanup(fs.srv.Close)
	return fs
}

func (fs *faultServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		fs.serveGET(w, r)
		return
	case http.MethodDelete:
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	msg := gjson.ParseBytes(body)
	id := msg.Get("id").Raw
	switch method := msg.Get("method").String(); {
	case method == "initialize":
		w.Header().Set("Mcp-Session-Id", faultSession)
		writeJSON(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"faults","version":"1"}}}`)
	case method == "tools/call":
		fs.mu.Lock()
		fs.arrivals[id]++
		fs.mu.Unlock()
		fs.callTool(w, r, id, msg.Get("params.name").String())
	default: // notifications and the client's answers
		w.WriteHeader(http.StatusAccepted)
	}
}

// answer is the result of call id.
func answer(id, text string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"` + text + `"}]}}`
}

func writeJSON(w http.ResponseWriter, s string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, s)
}

func startEvents(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
}

func event(w http.ResponseWriter, s string) {
	_, _ = io.WriteString(w, s)
	_ = http.NewResponseController(w).Flush()
}

// cutConnection drops the connection under w at once.
func cutConnection(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		_ = conn.Close()
	}
}

func (fs *faultServer) callTool(w http.ResponseWriter, r *http.Request, id, tool string) {
	switch tool {
	case "json":
		writeJSON(w, answer(id, "json"))
	case "sse":
		startEvents(w)
		event(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"working\"}}\n\n")
		event(w, "data: "+answer(id, "sse")+"\n\n")
	case "twice":
		startEvents(w)
		event(w, "data: "+answer(id, "first")+"\n\n")
		event(w, "data: "+answer(id, "second")+"\n\n")
		event(w, "data: "+answer(`"never-sent"`, "stray")+"\n\n")
	case "wrong-id":
		writeJSON(w, answer(`"not-`+strings.Trim(id, `"`)+`"`, "wrong"))
	case "accepted":
		w.WriteHeader(http.StatusAccepted)
		fs.pushed <- answer(id, "accepted")
	case "accepted-lost":
		w.WriteHeader(http.StatusAccepted)
	case "bare-503":
		w.WriteHeader(http.StatusServiceUnavailable)
	case "reset":
		cutConnection(w)
	case "cut":
		startEvents(w)
		event(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"cut\"}}\n\n")
		cutConnection(w)
	case "resume":
		prime := "prime-" + strings.Trim(id, `"`)
		fs.mu.Lock()
		fs.resumes[prime] = id
		fs.mu.Unlock()
		startEvents(w)
		event(w, "id: "+prime+"\nretry: 50\ndata:\n\n")
	case "html":
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html><body>Bad Gateway</body></html>")
	case "bad-json":
		writeJSON(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{`)
	case "huge":
		writeJSON(w, answer(id, strings.Repeat("x", 100_000)))
	case "batch":
		writeJSON(w, "["+answer(id, "batch")+"]")
	case "batch-two":
		writeJSON(w, "["+answer(id, "one")+`,{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"two"}}]`)
	case "bad-utf8":
		writeJSON(w, answer(id, "caf\xe9 \xff"))
	case "bad-envelope":
		writeJSON(w, `{"jsonrpc":"2.0","id":`+id+`,"result":["not","an","object"]}`)
	case "deep":
		writeJSON(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[],"x":`+strings.Repeat("[", 600)+strings.Repeat("]", 600)+`}}`)
	case "deep-sse":
		startEvents(w)
		event(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":"+strings.Repeat("[", 600)+strings.Repeat("]", 600)+"}}\n\n")
		event(w, "data: {\"jsonrpc\":\"2.0\",\"id\":"+id+",\"result\":{\"x\":"+strings.Repeat("{\"a\":", 600)+"1"+strings.Repeat("}", 600)+"}}\n\n")
	case "dup-id":
		writeJSON(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":"dup"}]},"id":"never-sent"}`)
	case "hang":
		startEvents(w)
		event(w, ": the call runs\n\n")
		fs.hung <- id
		<-r.Context().Done() // until the client cancels
	default:
		writeJSON(w, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32602,"message":"unknown tool"}}`)
	}
}

// serveGET serves the standalone stream, or resumes a "resume" call's
// stream after its priming event.
func (fs *faultServer) serveGET(w http.ResponseWriter, r *http.Request) {
	if last := r.Header.Get("Last-Event-Id"); last != "" {
		fs.mu.Lock()
		id, ok := fs.resumes[last]
		delete(fs.resumes, last)
		fs.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		startEvents(w)
		event(w, "id: done-"+last+"\ndata: "+answer(id, "resumed")+"\n\n")
		return
	}
	startEvents(w)
	event(w, ": standalone stream\n\n")
	for {
		select {
		case m := <-fs.pushed:
			event(w, "data: "+m+"\n\n")
		case <-r.Context().Done():
			return
		}
	}
}

// startRelayProcess starts the relay binary with args, bound to ctx, and
// returns it with its stdin, its stdout and what it writes on stderr,
// which the test's log shows if the test fails.
func startRelayProcess(t *testing.T, ctx context.Context, args ...string) (*exec.Cmd, io.WriteCloser, io.Reader, *transporttest.SyncBuffer) {
	t.Helper()
	relay := exec.CommandContext(ctx, relayBinary(t), args...)
	stderr := &transporttest.SyncBuffer{}
	relay.Stderr = stderr
	stdin, err := relay.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := relay.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := relay.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("relay stderr:\n%s", stderr)
		}
	})
	return relay, stdin, stdout, stderr
}

func TestRelayFaults(t *testing.T) {
	is := is.New(t)
	fs := startFaultServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	relay, stdin, stdout, _ := startRelayProcess(t, ctx, "--log-level", "debug", "--timeout-read", "2", "--max-message-size", "65536", fs.srv.URL+"/mcp")
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		rd := bufio.NewReader(stdout)
		for {
			line, err := rd.ReadString('\n')
			if line != "" {
				lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	var outMu sync.Mutex
	send := func(line string) {
		outMu.Lock()
		defer outMu.Unlock()
		_, err := io.WriteString(stdin, line+"\n")
		is.NoErr(err)
	}
	var got []string // every stdout line
	next := func() string {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("stdout ended; lines so far:\n%s", strings.Join(got, ""))
			}
			got = append(got, line)
			return line
		case <-ctx.Done():
			t.Fatalf("no line from the relay in time; lines so far:\n%s", strings.Join(got, ""))
			return ""
		}
	}

	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"faults","version":"1"}}}`)
	is.Equal(gjson.Get(next(), "id").Raw, "0")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	// Three calls of every tool, all in flight together, with numbers and
	// strings for ids.
	const callsPerTool = 3
	tool := map[string]string{} // raw id → tool
	var hangIDs []string
	var wg sync.WaitGroup
	n := 0
	for _, name := range faultTools {
		for range callsPerTool {
			n++
			id := fmt.Sprint(n)
			if n%2 == 0 {
				id = `"call-` + id + `"`
			}
			tool[id] = name
			if name == "hang" {
				hangIDs = append(hangIDs, id)
			}
			wg.Go(func() {
				send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":{}}}`)
			})
		}
	}
	wg.Wait()
	// Cancel the hanging calls once the server has them.
	for range hangIDs {
		id := <-fs.hung
		send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"no longer needed"}}`)
	}

	// Read until every call not cancelled is answered.
	answers := map[string][]string{} // raw id → its answers
	want := len(tool) - len(hangIDs)
	for answered := 0; answered < want; {
		line := next()
		id := gjson.Get(line, "id")
		if !id.Exists() || gjson.Get(line, "method").Exists() {
			continue // a notification, passed on
		}
		if len(answers[id.Raw]) == 0 {
			answered++
		}
		answers[id.Raw] = append(answers[id.Raw], line)
	}
	// Then stdin ends; whatever the relay writes before it exits counts too.
	is.NoErr(stdin.Close())
	for line := range lines {
		got = append(got, line)
		if id := gjson.Get(line, "id"); id.Exists() && !gjson.Get(line, "method").Exists() {
			answers[id.Raw] = append(answers[id.Raw], line)
		}
	}
	is.NoErr(relay.Wait())

	for _, line := range got {
		var v map[string]any
		if !strings.HasSuffix(line, "\n") || strings.Count(line, "\n") != 1 || !utf8.ValidString(line) || json.Unmarshal([]byte(line), &v) != nil {
			t.Errorf("stdout line is not one JSON object: %q", line)
		}
	}
	delete(answers, "0")
	for id, name := range tool {
		as := answers[id]
		delete(answers, id)
		if name == "hang" {
			if len(as) != 0 {
				t.Errorf("%s (cancelled %s) was answered: %q", name, id, as)
			}
			continue
		}
		if len(as) != 1 {
			t.Errorf("%s (id %s) got %d answers, want 1: %q", name, id, len(as), as)
			continue
		}
		isError := gjson.Get(as[0], "error").Exists()
		wantError := !slices.Contains([]string{"json", "sse", "twice", "accepted", "resume", "batch", "bad-utf8"}, name)
		if isError != wantError {
			t.Errorf("%s (id %s): answer %s, want an error: %v", name, id, as[0], wantError)
		}
		if text := gjson.Get(as[0], "result.content.0.text").String(); name == "bad-utf8" && text != "caf\uFFFD \uFFFD" {
			t.Errorf("bad-utf8 (id %s): text %q, want each invalid byte replaced by U+FFFD", id, text)
		}
	}
	for id, as := range answers {
		t.Errorf("answer to an id never sent (%s): %q", id, as)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for id, name := range tool {
		if c := fs.arrivals[id]; c != 1 {
			t.Errorf("%s (id %s) reached the server %d times, want 1", name, id, c)
		}
	}
}

// Every failed request is one warning on stderr, saying what its answer
// says, and a request the client cancelled is no warning at all: it is
// logged at debug (issue 10).
func TestRelayLogsOneWarningPerFailedRequest(t *testing.T) {
	is := is.New(t)
	fs := startFaultServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	relay, stdin, stdout, stderr := startRelayProcess(t, ctx, "--log-level", "debug", fs.srv.URL+"/mcp")
	out := bufio.NewScanner(stdout)
	send := func(line string) {
		_, err := io.WriteString(stdin, line+"\n")
		is.NoErr(err)
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"logs","version":"1"}}}`)
	is.True(out.Scan())
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	failing := []string{"bare-503", "reset", "html", "bad-json", "cut"}
	for i, name := range failing {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, i+1, name))
		for out.Scan() && gjson.Get(out.Text(), "id").Raw != fmt.Sprint(i+1) { // past notifications
		}
		is.True(gjson.Get(out.Text(), "error").Exists())
	}
	send(`{"jsonrpc":"2.0","id":"h","method":"tools/call","params":{"name":"hang","arguments":{}}}`)
	<-fs.hung
	cancelled := stderr.Watch(regexp.MustCompile(`level=DEBUG msg="request cancelled by the client" .*id=.*h`))
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"h"}}`)
	cancelled.Next(t, testTimeout)
	stdin.Close()
	is.NoErr(relay.Wait())

	var warnings []string
	for line := range strings.Lines(stderr.String()) {
		if strings.Contains(line, "level=WARN") {
			warnings = append(warnings, line)
		}
	}
	if len(warnings) != len(failing) {
		t.Fatalf("%d warnings for %d failed requests:\n%s", len(warnings), len(failing), strings.Join(warnings, ""))
	}
	for i, w := range warnings {
		is.True(strings.Contains(w, `msg="request failed" app=mcp-stdio method=tools/call id=`+fmt.Sprint(i+1)+" "))
	}
}
