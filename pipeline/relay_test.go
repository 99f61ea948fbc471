package pipeline_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"go.uber.org/goleak"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/pipeline"
)

// blockingServer answers every request with an empty result at once,
// except tools/call of the tool "block", whose answer waits until release
// is closed; started receives the id of each blocked call.
func blockingServer(t *testing.T, release <-chan struct{}, started chan<- string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m, err := frame.Parse(body)
		if err != nil || m.Kind() != frame.Request {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if m.Method() == "tools/call" && m.Get("params.name").String() == "block" {
			started <- m.ID().String()
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(frame.ResultResponse(m.ID(), []byte(`{}`)).Bytes())
	}))
	t.Cleanup(srv.Close)
	return srv
}

// runRelay runs a streamable-HTTP relay to url until its input ends or ctx
// does: its input is in, or else a pipe whose writing end is returned. It
// returns a scanner of its output and the channel of its result.
func runRelay(ctx context.Context, url string, in io.Reader) (stdin io.WriteCloser, out *bufio.Scanner, done <-chan error) {
	if in == nil {
		pr, pw := io.Pipe()
		in, stdin = pr, pw
	}
	outR, outW := io.Pipe()
	result := make(chan error, 1)
	go func() {
		result <- pipeline.Relay(ctx, pipeline.RelayConfig{URL: url, Transport: pipeline.TransportStreamable}, in, outW)
		_ = outW.Close()
	}()
	return stdin, bufio.NewScanner(outR), result
}

// The goroutine that reads a request sends it and hands reading on: a
// request whose answer is slow does not hold up the lines after it.
func TestRelayReadsOnWhileARequestIsInFlight(t *testing.T) {
	is := is.New(t)
	release, started := make(chan struct{}), make(chan string, 1)
	srv := blockingServer(t, release, started)
	inW, out, done := runRelay(context.Background(), srv.URL, nil)

	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block"}}`)
	is.Equal(<-started, "1")
	for id := 2; id <= 4; id++ { // each answered while 1 is still waiting
		fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`+"\n", id)
		is.True(out.Scan())
		is.Equal(out.Text(), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, id))
	}
	close(release)
	is.True(out.Scan())
	is.Equal(out.Text(), `{"jsonrpc":"2.0","id":1,"result":{}}`)
	_ = inW.Close()
	is.NoErr(<-done)
}

// When ctx ends while the client keeps stdin open, a stdin that supports
// read deadlines (here one end of an OS pipe) is interrupted and Relay
// returns leaving no goroutine behind; the request in flight is answered.
func TestRelayInterruptsAPollableStdinWhenCtxEnds(t *testing.T) {
	is := is.New(t)
	release, started := make(chan struct{}), make(chan string, 1)
	srv := blockingServer(t, release, started)
	ignore := goleak.IgnoreCurrent()

	inR, inW, err := os.Pipe()
	is.NoErr(err)
	defer inW.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, out, done := runRelay(ctx, srv.URL, inR)

	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"block"}}`)
	is.Equal(<-started, "7")
	cancel() // stdin stays open
	close(release)
	is.True(out.Scan())
	is.Equal(out.Text(), `{"jsonrpc":"2.0","id":7,"result":{}}`)
	is.NoErr(<-done)
	is.True(!out.Scan()) // nothing else
	srv.CloseClientConnections()
	goleak.VerifyNone(t, ignore) // stdin is still open: no reader is left
	_ = inR.Close()
}

// Many requests in flight at once, then answered together: each gets its
// answer, the goroutines that sent them take turns reading (at most a few
// stay parked for the next requests), and none is left once stdin ends.
func TestRelayReaderGoroutinesEndWithTheInput(t *testing.T) {
	is := is.New(t)
	const inFlight = 40 // more than the relay keeps parked
	release, started := make(chan struct{}), make(chan string, inFlight)
	srv := blockingServer(t, release, started)
	ignore := goleak.IgnoreCurrent()

	inW, out, done := runRelay(context.Background(), srv.URL, nil)
	for round := range 2 { // the second round reuses parked goroutines
		for i := range inFlight {
			fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"block"}}`+"\n", round*inFlight+i)
		}
		for range inFlight {
			<-started
		}
		release <- struct{}{} // one answer at a time: the handler takes one token each
		seen := map[string]bool{}
		for i := range inFlight {
			if i > 0 {
				release <- struct{}{}
			}
			is.True(out.Scan())
			seen[out.Text()] = true
		}
		is.Equal(len(seen), inFlight)
	}
	_ = inW.Close()
	is.NoErr(<-done)
	srv.CloseClientConnections()
	goleak.VerifyNone(t, ignore)
}

// Check against an HTTP+SSE server that never names its endpoint reports
// why, not that the send was stopped.
func TestCheckReportsTheMissingSSEEndpoint(t *testing.T) {
	is := is.New(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed) // not Streamable HTTP
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // and no endpoint event, ever
	}))
	defer srv.Close()
	var out strings.Builder
	cfg := pipeline.RelayConfig{URL: srv.URL}
	cfg.HTTP.ConnectTimeout = 100 * time.Millisecond // the wait for the endpoint
	_, err := pipeline.Check(context.Background(), cfg, &out)
	is.True(err != nil)
	is.True(strings.Contains(out.String(), "✗ timed out waiting for SSE endpoint event")) // the cause
	srv.CloseClientConnections()
}
