//go:build linux

package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// The official Go SDK client at 2025-11-25, through serve, to the bundled
// example server as a real child process (this test binary): two clients at
// once, each with its own session and child, each asked its own question
// by its own child; a cancelled slow call; a 16 MiB argument and a 16 MiB
// result; and the sessions' DELETE ending their children. Linux only, as
// serveInProcess and transporttest.ProcessGone (a pidfd) are.
func TestServeExampleServerEndToEnd(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, stderr, done := serveInProcess(t, ctx)

	httpClient := &http.Client{Transport: &http.Transport{}}
	defer httpClient.CloseIdleConnections()
	progressed := make(chan struct{}, 1)
	connect := func(name string) *mcp.ClientSession {
		client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				// Each client answers with its own name: a question that
				// reached the wrong client would come back wrong.
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": name + " heard: " + req.Params.Message}}, nil
			},
			ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
				select {
				case progressed <- struct{}{}:
				default:
				}
			},
		})
		cctx, ccancel := context.WithTimeout(ctx, cmdTestWait)
		defer ccancel()
		cs, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClient}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	ada, bob := connect("ada"), connect("bob")
	pids := []int{}
	pidLines := stderr.Watch(childPIDLine)
	for range 2 {
		pid, _ := strconv.Atoi(pidLines.Next(t, cmdTestWait)[1])
		pids = append(pids, pid)
	}

	// Elicitation round trips, concurrently, each to its own client.
	var wg sync.WaitGroup
	answers := map[string]string{}
	var mu sync.Mutex
	for name, cs := range map[string]*mcp.ClientSession{"ada": ada, "bob": bob} {
		wg.Go(func() {
			cctx, ccancel := context.WithTimeout(ctx, cmdTestWait)
			defer ccancel()
			res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"question": "who are you?"}})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			answers[name] = res.Content[0].(*mcp.TextContent).Text
			mu.Unlock()
		})
	}
	wg.Wait()
	is.Equal(answers["ada"], "The user answered: ada heard: who are you?")
	is.Equal(answers["bob"], "The user answered: bob heard: who are you?")

	// A slow call cancelled by its client ends at once; the session goes on.
	slowCtx, slowCancel := context.WithCancel(ctx)
	slowDone := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 60, "steps": 600}}
		params.SetProgressToken("slow-1")
		_, err := ada.CallTool(slowCtx, params)
		slowDone <- err
	}()
	select {
	case <-progressed: // the call is running in the child
	case <-time.After(cmdTestWait):
		t.Fatal("no progress from the slow call")
	}
	slowCancel()
	select {
	case err := <-slowDone:
		is.True(errors.Is(err, context.Canceled))
	case <-time.After(cmdTestWait):
		t.Fatal("the cancelled call did not end")
	}

	// 16 MiB each way (slow under the race detector: go-sdk's codecs on
	// both sides are instrumented).
	cctx, ccancel := context.WithTimeout(ctx, 3*time.Minute)
	defer ccancel()
	big := strings.Repeat("0123456789abcdef", (16<<20-1024)/16) // just under go-sdk's 16 MiB line limit once framed
	res, err := bob.CallTool(cctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": big}})
	is.NoErr(err)
	got := res.Content[0].(*mcp.TextContent).Text
	is.Equal(sha256.Sum256([]byte(got)), sha256.Sum256([]byte(big)))
	res, err = bob.CallTool(cctx, &mcp.CallToolParams{Name: "bytes", Arguments: map[string]any{"n": 16<<20 - 1024}})
	is.NoErr(err)
	is.Equal(len(res.Content[0].(*mcp.TextContent).Text), 16<<20-1024)

	// Closing a client session DELETEs it; its child ends.
	is.NoErr(ada.Close())
	is.NoErr(bob.Close())
	for _, pid := range pids {
		is.True(transporttest.ProcessGone(t, pid, cmdTestWait))
	}
	cancel()
	select {
	case err := <-done:
		is.NoErr(err)
	case <-time.After(cmdTestWait):
		t.Fatal("serve did not stop")
	}
}
