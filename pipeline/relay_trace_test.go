package pipeline_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
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
