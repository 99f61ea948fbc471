package pipeline_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

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

// The goroutine that reads a request sends it and hands reading on: a
// request whose answer is slow does not hold up the lines after it.
func TestRelayReadsOnWhileARequestIsInFlight(t *testing.T) {
	is := is.New(t)
	release, started := make(chan struct{}), make(chan string, 1)
	srv := blockingServer(t, release, started)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Relay(context.Background(), pipeline.RelayConfig{URL: srv.URL, Transport: pipeline.TransportStreamable}, inR, outW)
		_ = outW.Close()
	}()
	out := bufio.NewScanner(outR)

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
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Relay(ctx, pipeline.RelayConfig{URL: srv.URL, Transport: pipeline.TransportStreamable}, inR, outW)
		_ = outW.Close()
	}()
	out := bufio.NewScanner(outR)

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

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Relay(context.Background(), pipeline.RelayConfig{URL: srv.URL, Transport: pipeline.TransportStreamable}, inR, outW)
		_ = outW.Close()
	}()
	out := bufio.NewScanner(outR)
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
