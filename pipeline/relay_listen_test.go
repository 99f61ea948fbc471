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
	"github.com/mcp-stdio/mcp-stdio/mw"
	"github.com/mcp-stdio/mcp-stdio/pipeline"
)

// eraStandIn does what the relay's era stages do for a session-era host
// once a 2026-07-28 server was found: it answers the host's initialize
// itself and records the handshake on the connection.
func eraStandIn(caps string) mw.Middleware {
	return func(next mw.Duplex) mw.Duplex {
		return mw.Duplex{
			ToServer: mw.HandlerFunc(func(ctx context.Context, m frame.Message) error {
				if m.Method() != "initialize" {
					return next.ToServer.Handle(ctx, m)
				}
				conn := mw.ConnOf(ctx)
				conn.SetEra(mw.EraStateless)
				result := frame.ResultResponse(m.ID(), []byte(`{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"serverInfo":{"name":"modern","version":"1"}}`))
				conn.Initialized(m, result)
				return next.ToClient.Handle(ctx, result)
			}),
			ToClient: next.ToClient,
		}
	}
}

// The relay's listen bridge runs over the real Streamable HTTP client: the
// listen's notifications reach stdout while its POST is open, and the
// listen is closed when the relay ends.
func TestRelayListenBridge(t *testing.T) {
	is := is.New(t)
	listens := make(chan string, 4)
	closed := make(chan struct{}, 4)
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
		if m.Method() != "subscriptions/listen" {
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

	const caps = `{"tools":{"listChanged":true}}`
	stdinR, stdin := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Relay(context.Background(), pipeline.RelayConfig{
			URL:         srv.URL,
			Transport:   pipeline.TransportStreamable,
			Middlewares: []mw.Middleware{eraStandIn(caps)},
		}, stdinR, outW)
		outW.Close()
	}()
	out := bufio.NewScanner(outR)

	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	is.True(out.Scan())
	is.Equal(out.Text(), `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"modern","version":"1"}}}`)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	is.Equal(<-listens, `{"jsonrpc":"2.0","id":"mcp-stdio/listen/1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`)
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
