//go:build linux

package transport

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// The test binary doubles as the child process of the child and server
// tests (see transporttest.RunProgram), as one of these programs:
//
//   - "server": a scripted MCP server (see testServer);
//   - "stubborn": ignores SIGTERM and stdin's end, and runs until killed;
//   - "parent": starts a "sleeper" grandchild in its process group, writes
//     {"jsonrpc":"2.0","method":"grandchild","params":{"pid":N}} and then
//     serves like "server";
//   - "sleeper": sleeps until killed;
//   - "stderr": writes lines to stderr (one of them long) and exits.
func init() {
	transporttest.RunProgram(map[string]func(args []string) int{
		"server":   func([]string) int { return testServer() },
		"stubborn": stubbornChild,
		"parent":   parentChild,
		"sleeper":  sleeperChild,
		"stderr":   stderrChild,
	})
}

// testChildCommand returns a ChildConfig that runs the test binary as the
// child program mode.
func testChildCommand(t testing.TB, mode string) ChildConfig {
	t.Helper()
	cmd := transporttest.Command(mode)
	return ChildConfig{
		Command:    cmd.Args,
		Env:        cmd.Env,
		StdinGrace: 5 * time.Second,
		TermGrace:  5 * time.Second,
	}
}

func stubbornChild([]string) int {
	signal.Ignore(syscall.SIGTERM)
	frame.NewWriter(os.Stdout).Write(frame.MustParse(`{"jsonrpc":"2.0","method":"ready"}`))
	for {
		time.Sleep(time.Hour)
	}
}

func parentChild([]string) int {
	cmd := transporttest.Command("sleeper")
	if err := cmd.Start(); err != nil {
		return 1
	}
	frame.NewWriter(os.Stdout).Write(frame.MustParse(fmt.Sprintf(`{"jsonrpc":"2.0","method":"grandchild","params":{"pid":%d}}`, cmd.Process.Pid)))
	return testServer()
}

func sleeperChild([]string) int {
	for {
		time.Sleep(time.Hour)
	}
}

func stderrChild([]string) int {
	fmt.Fprint(os.Stderr, "first line\nsecond line\n")
	long := make([]byte, stderrLineMax+10)
	for i := range long {
		long[i] = 'x'
	}
	os.Stderr.Write(long)
	fmt.Fprint(os.Stderr, "\nno newline at the end")
	return 0
}

// testServer is a small scripted MCP server on stdin and stdout. Methods:
//
//	initialize    result with protocolVersion 2025-11-25; an error when
//	              params.clientInfo.name is "reject"
//	echo          result: the params
//	pid           result: {"pid":<its pid>}
//	ask           sends elicitation/create {"message":params.message} to the
//	              client and answers with the client's result
//	progress      sends notifications/progress for params._meta.progressToken,
//	              then answers {}
//	notify        sends notifications/message {"data":params.data}, then answers {}
//	wait          answers {} when the notification "release" arrives (in
//	              the order the waits came, before anything read later)
//	stderr        writes params.text to stderr, answers {}
//	crash         exits with status 3 at once
//
// Everything else gets -32601.
func testServer() int {
	r := frame.NewReader(os.Stdin, 0)
	w := frame.NewWriter(os.Stdout)
	var mu sync.Mutex
	asks := map[frame.ID]chan frame.Message{}
	var waiting []frame.ID // "wait" requests, answered on "release"
	next := 0
	for {
		m, err := r.Read()
		var le *frame.LineError
		if errors.As(err, &le) {
			w.Write(frame.ErrorResponse(le.ID, le.Code(), le.Err.Error()))
			continue
		}
		if err != nil {
			return 0
		}
		switch m.Kind() {
		case frame.Result, frame.Error:
			mu.Lock()
			ch := asks[m.ID()]
			delete(asks, m.ID())
			mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		case frame.Notification:
			if m.Method() == "release" {
				for _, id := range waiting {
					w.Write(frame.ResultResponse(id, []byte(`{}`)))
				}
				waiting = nil
			}
			continue
		case frame.Request:
		default:
			continue
		}
		id := m.ID()
		params := m.Get("params").Raw
		if params == "" {
			params = "{}"
		}
		switch m.Method() {
		case "initialize":
			if m.Get("params.clientInfo.name").Str == "reject" {
				w.Write(frame.ErrorResponse(id, frame.CodeInvalidParams, "rejected"))
				continue
			}
			w.Write(frame.ResultResponse(id, []byte(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"test","version":"1"}}`)))
		case "echo":
			w.Write(frame.ResultResponse(id, []byte(params)))
		case "pid":
			w.Write(frame.ResultResponse(id, []byte(`{"pid":`+strconv.Itoa(os.Getpid())+`}`)))
		case "ask":
			next++
			askID := frame.StringID("ask-" + strconv.Itoa(next))
			ch := make(chan frame.Message, 1)
			mu.Lock()
			asks[askID] = ch
			mu.Unlock()
			msg, _ := json.Marshal(m.Get("params.message").String())
			w.Write(frame.MustParse(`{"jsonrpc":"2.0","id":` + string(askID) + `,"method":"elicitation/create","params":{"message":` + string(msg) + `}}`))
			go func() {
				reply := <-ch
				res := reply.Get("result").Raw
				if res == "" {
					res = "{}"
				}
				w.Write(frame.ResultResponse(id, []byte(res)))
			}()
		case "progress":
			tok := m.Get("params._meta.progressToken").Raw
			w.Write(frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + tok + `,"progress":1,"total":2}}`))
			w.Write(frame.ResultResponse(id, []byte(`{}`)))
		case "notify":
			data := m.Get("params.data").Raw
			if data == "" {
				data = "null"
			}
			w.Write(frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":` + data + `}}`))
			w.Write(frame.ResultResponse(id, []byte(`{}`)))
		case "wait":
			waiting = append(waiting, id)
		case "stderr":
			fmt.Fprintln(os.Stderr, m.Get("params.text").String())
			w.Write(frame.ResultResponse(id, []byte(`{}`)))
		case "crash":
			os.Exit(3)
		default:
			w.Write(frame.ErrorResponse(id, frame.CodeMethodNotFound, "method not found"))
		}
	}
}
