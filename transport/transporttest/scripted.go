package transporttest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// ScriptedServer is a small scripted MCP server on stdin and stdout, to run
// as a test child (see RunProgram); it returns its exit status. Methods:
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
//	raw           writes params.line, a string of JSON, as one line as it
//	              is (a bad envelope, say); when params.await names an id,
//	              answers {"reply":<what came back under that id>} once it
//	              comes, else nothing
//
// Everything else gets -32601.
func ScriptedServer([]string) int {
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
		case "raw":
			var ch chan frame.Message
			if await := m.Get("params.await"); await.Exists() {
				ch = make(chan frame.Message, 1)
				mu.Lock()
				asks[frame.ID(await.Raw)] = ch
				mu.Unlock()
			}
			w.Write(frame.MustParse(m.Get("params.line").Str))
			if ch != nil {
				go func() {
					reply := <-ch
					w.Write(frame.ResultResponse(id, []byte(`{"reply":`+reply.String()+`}`)))
				}()
			}
		default:
			w.Write(frame.ErrorResponse(id, frame.CodeMethodNotFound, "method not found"))
		}
	}
}
