package main_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/cmd/internal/procfs"
	"github.com/mcp-stdio/mcp-stdio/frame"
)

// bigEventServer is a Streamable HTTP server whose tool "big" answers
// with an event of size bytes that never ends (until release is closed)
// and whose other tools answer at once.
func bigEventServer(t *testing.T, size int, release <-chan struct{}) *httptest.Server {
	chunk := strings.Repeat("x", 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		m, err := frame.Parse(body)
		if err != nil || m.Kind() != frame.Request {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		id := string(m.ID())
		if m.Method() == "initialize" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"big","version":"1"}}}`)
			return
		}
		if m.Get("params.name").String() != "big" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":"small"}]}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if _, err := io.WriteString(w, `data: {"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":"`); err != nil {
			return
		}
		for n := 0; n < size; n += len(chunk) {
			if _, err := io.WriteString(w, chunk[:min(len(chunk), size-n)]); err != nil {
				return // the relay gave up the stream
			}
		}
		w.(http.Flusher).Flush()
		select { // the event never ends
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The attack of issue 22 on the built relay: ten calls at once, each
// answered with a 60 MiB event that never ends. Under --max-buffered
// 128MiB (an event counts 64 MiB: two fit), at least eight are answered
// with the over-budget error naming the flag while a small call beside
// them is answered as usual, the streams' end answers the rest, and the
// relay's peak resident set stays near its soft memory limit (twice the
// budget and 64 MiB), far below the 600 MiB the events add up to (862 MiB
// before the budget).
func TestRelayMemoryBudgetAcrossCalls(t *testing.T) {
	relayBinary(t)
	if raceDetector {
		t.Skip("a race build's memory says nothing of the relay's")
	}
	is := is.New(t)
	release := make(chan struct{})
	srv := bigEventServer(t, 60<<20, release)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	relay, stdin, stdout, stderr := startRelayProcess(t, ctx, "--era", "session", "--transport", "streamable-http", "--max-buffered", "128MiB", srv.URL+"/mcp")
	out := bufio.NewReader(stdout)
	answers := map[string]string{}
	next := func() (id, line string) {
		t.Helper()
		line, err := out.ReadString('\n')
		is.NoErr(err)
		id = gjson.Get(line, "id").Raw
		_, dup := answers[id]
		is.True(!dup) // one answer per request
		answers[id] = line
		return id, line
	}
	send := func(line string) {
		_, err := io.WriteString(stdin, line+"\n")
		is.NoErr(err)
	}

	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	_, line := next()
	is.True(gjson.Get(line, "result.serverInfo").Exists())
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	baseline, err := procfs.StatusKB(relay.Process.Pid, "VmHWM")
	is.NoErr(err)

	const calls = 10
	for i := 1; i <= calls; i++ {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"big","arguments":{}}}`, i))
	}
	for range calls - 2 {
		_, line := next()
		msg := gjson.Get(line, "error.message").String()
		is.True(strings.Contains(msg, "memory budget"))
		is.True(strings.Contains(msg, "--max-buffered (now 128MiB)"))
	}
	send(`{"jsonrpc":"2.0","id":"small","method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	id, line := next()
	is.Equal(id, `"small"`)
	is.Equal(gjson.Get(line, "result.content.0.text").String(), "small")
	close(release)
	for range 2 {
		_, line := next()
		is.True(gjson.Get(line, "error").Exists())
	}
	hwm, err := procfs.StatusKB(relay.Process.Pid, "VmHWM")
	is.NoErr(err)
	t.Logf("relay VmHWM: %d MiB at start, %d MiB after 10 × 60 MiB events", baseline>>10, hwm>>10)
	// KiB. The soft memory limit is 2 × 128 + 64 = 320 MiB; the events
	// add up to 600 MiB.
	is.True(hwm < 400<<10)
	is.NoErr(stdin.Close())
	is.NoErr(relay.Wait())
	is.True(strings.Count(stderr.String(), "--max-buffered") >= calls-2) // a line per refused call
}
