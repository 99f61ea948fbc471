package pipeline_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/pipeline"
)

// A host's _meta.traceparent and tracestate reach a loopback server as
// the traceparent and tracestate headers of the POST carrying the
// request, its body as the host wrote it; an invalid one is not sent.
func TestRelaySendsTheHostsTraceContextAsHeaders(t *testing.T) {
	is := is.New(t)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	var (
		mu   sync.Mutex
		seen [][2]string // each tools/list's traceparent and tracestate (its id is the pagination's)
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m, err := frame.Parse(body)
		if err != nil || m.Kind() != frame.Request {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		mu.Lock()
		if m.Method() == "tools/list" {
			seen = append(seen, [2]string{r.Header.Get("Traceparent"), r.Header.Get("Tracestate")})
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(frame.ResultResponse(m.ID(), []byte(`{}`)).Bytes())
	}))
	defer srv.Close()
	inW, out, done := runRelay(context.Background(), srv.URL, nil)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"traceparent":"`+tp+`","tracestate":"rojo=1"}}}`)
	is.True(out.Scan())
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"traceparent":"00-`+tp[3:35]+`-0000000000000000-01"}}}`)
	is.True(out.Scan())
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	is.True(out.Scan())
	_ = inW.Close()
	is.NoErr(<-done)
	mu.Lock()
	defer mu.Unlock()
	is.Equal(seen, [][2]string{
		{tp, "rojo=1"},
		{"", ""}, // an all-zero parent id: not sent
		{"", ""},
	})
}

// Over HTTP+SSE too: the POST carrying a host's request has its trace
// context as headers, and neither of Streamable HTTP's session headers
// (the endpoint URL is this transport's session).
func TestRelaySendsTheHostsTraceContextOverHTTPSSE(t *testing.T) {
	is := is.New(t)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	answers := make(chan []byte, 8)
	seen := make(chan http.Header, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: endpoint\ndata: /message?session=1\n\n")
			w.(http.Flusher).Flush()
			for {
				select {
				case a := <-answers:
					fmt.Fprintf(w, "event: message\ndata: %s\n\n", a)
					w.(http.Flusher).Flush()
				case <-r.Context().Done():
					return
				}
			}
		}
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusAccepted)
		m, err := frame.Parse(body)
		if err != nil || m.Kind() != frame.Request {
			return
		}
		if m.Method() == "tools/list" {
			seen <- r.Header.Clone()
		}
		answers <- frame.ResultResponse(m.ID(), []byte(`{"tools":[]}`)).Bytes()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // before srv.Close: ends the relay's stream on a failure
	pr, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Relay(ctx, pipeline.RelayConfig{URL: srv.URL + "/sse", Transport: pipeline.TransportSSE}, pr, outW)
		_ = outW.Close()
	}()
	out := bufio.NewScanner(outR)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	is.True(out.Scan())
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"traceparent":"`+tp+`","tracestate":"rojo=1"}}}`)
	is.True(out.Scan())
	is.Equal(out.Text(), `{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}`)
	h := <-seen
	is.Equal(h.Get("Traceparent"), tp)
	is.Equal(h.Get("Tracestate"), "rojo=1")
	is.Equal(h.Get(frame.HeaderSessionID), "")
	is.Equal(h.Get(frame.HeaderProtocolVersion), "")
	_ = inW.Close()
	is.NoErr(<-done)
}
