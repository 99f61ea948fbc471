package pipeline_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/matryer/is"
	"go.uber.org/goleak"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/pipeline"
)

// The relay's listen bridge runs over the real Streamable HTTP client,
// behind the era probe that finds a server of 2026-07-28 only (it
// refuses the host's initialize): the
// listen's notifications reach stdout while its POST is open, and the
// listen is closed when the relay ends.
func TestRelayListenBridge(t *testing.T) {
	is := is.New(t)
	listens := make(chan string, 4)
	closed := make(chan struct{}, 4)
	const caps = `{"tools":{"listChanged":true}}`
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
		switch m.Method() {
		case "initialize": // a server of 2026-07-28 only
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write(frame.ErrorResponseData(m.ID(), frame.CodeUnsupportedVersion, "Unsupported protocol version", []byte(`{"supported":["2026-07-28"]}`)).Bytes())
			return
		case "server/discover": // the era probe: a 2026-07-28 server
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(frame.ResultResponse(m.ID(), []byte(`{"supportedVersions":["2026-07-28"],"capabilities":`+caps+`,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern","version":"1"}}}`)).Bytes())
			return
		case "subscriptions/listen":
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(frame.ResultResponse(m.ID(), []byte(`{}`)).Bytes())
			return
		}
		listens <- m.String()
		tag := `"_meta":{"io.modelcontextprotocol/subscriptionId":` + string(m.ID()) + `}`
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{`+tag+`,"notifications":{"toolsListChanged":true}}}`)
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{`+tag+`}}`)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		closed <- struct{}{}
	}))
	defer srv.Close()
	ignore := goleak.IgnoreCurrent()

	stdinR, stdin := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Relay(context.Background(), pipeline.RelayConfig{
			URL:       srv.URL,
			Transport: pipeline.TransportStreamable,
		}, stdinR, outW)
		outW.Close()
	}()
	out := bufio.NewScanner(outR)

	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	is.True(out.Scan())
	is.Equal(out.Text(), `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"modern","version":"1"}}}`)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	is.Equal(<-listens, `{"jsonrpc":"2.0","id":"mcp-stdio/listen/1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"host","version":"1"}}}}`)
	is.True(out.Scan())
	is.Equal(out.Text(), `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`) // the ack swallowed, the id stripped

	stdin.Close()
	select {
	case <-closed: // the relay's end closed the listen
	case <-time.After(10 * time.Second):
		t.Fatal("the listen was not closed when the relay ended")
	}
	is.NoErr(<-done)
	is.True(!out.Scan()) // nothing else on stdout
	goleak.VerifyNone(t, ignore)
}
