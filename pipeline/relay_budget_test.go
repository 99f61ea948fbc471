package pipeline_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"
	"go.uber.org/goleak"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/pipeline"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// budgetRemedy names the flag for the budget, as the command line does.
func budgetRemedy(err error) string {
	if errors.Is(err, frame.ErrOverBudget) {
		return "raise --max-buffered"
	}
	return ""
}

// The relay's budget holds across the calls in flight: ten calls, each
// answered with an event of 300 KiB that never ends, under a budget of
// 1 MiB (an event that size counts 512 KiB): at least eight are answered
// at once with the over-budget error naming the flag, one line each on
// stderr, while a call with a small answer is answered as usual; the
// streams' end answers the others; no goroutine is left.
func TestRelayBudgetAcrossConcurrentCalls(t *testing.T) {
	is := is.New(t)
	release := make(chan struct{})
	big := strings.Repeat("x", 300<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m, err := frame.Parse(body)
		if err != nil || m.Kind() != frame.Request {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if m.Get("params.name").String() != "big" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(frame.ResultResponse(m.ID(), []byte(`{"small":true}`)).Bytes())
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"jsonrpc":"2.0","id":`+string(m.ID())+`,"result":{"text":"`+big)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	ignore := goleak.IgnoreCurrent()

	logs := &transporttest.SyncBuffer{}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Relay(context.Background(), pipeline.RelayConfig{
			URL:         srv.URL,
			Transport:   pipeline.TransportStreamable,
			Era:         "session",
			MaxBuffered: 1 << 20,
			Remedy:      budgetRemedy,
			Logger:      slog.New(slog.NewTextHandler(logs, nil)),
		}, inR, outW)
		_ = outW.Close()
	}()
	out := bufio.NewScanner(outR)
	const calls = 10
	for i := range calls {
		fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"big"}}`+"\n", i)
	}
	answered := map[string]string{}
	answer := func() (id, line string) {
		is.True(out.Scan())
		line = out.Text()
		id = gjson.Get(line, "id").Raw
		_, dup := answered[id]
		is.True(!dup) // one answer per request
		answered[id] = line
		return id, line
	}
	for range calls - 2 {
		_, line := answer()
		msg := gjson.Get(line, "error.message").String()
		is.True(strings.Contains(msg, "memory budget"))
		is.True(strings.Contains(msg, "1 MiB"))
		is.True(strings.Contains(msg, "raise --max-buffered"))
	}
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":"small","method":"tools/call","params":{"name":"small"}}`)
	_, line := answer()
	is.Equal(line, `{"jsonrpc":"2.0","id":"small","result":{"small":true}}`)
	close(release)
	for range 2 {
		_, line := answer()
		is.True(gjson.Get(line, "error").Exists())
	}
	is.NoErr(inW.Close())
	is.True(!out.Scan())
	is.NoErr(<-done)
	is.True(strings.Count(logs.String(), "raise --max-buffered") >= calls-2) // a line per refused call
	srv.CloseClientConnections()
	goleak.VerifyNone(t, ignore)
}
