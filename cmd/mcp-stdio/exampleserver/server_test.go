package exampleserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"
	"go.uber.org/goleak"
)

func TestInitializeEachSessionEraVersion(t *testing.T) {
	for _, tc := range []struct{ requested, want string }{
		{"2025-11-25", "2025-11-25"},
		{"2025-06-18", "2025-06-18"},
		{"2025-03-26", "2025-03-26"},
		{"2024-11-05", "2024-11-05"},
		{"2024-01-01", "2025-11-25"}, // unknown: offer the latest
		{"2026-07-28", "2025-11-25"}, // not an initialize version
	} {
		t.Run(tc.requested, func(t *testing.T) {
			is := is.New(t)
			c := start(t, Options{Version: "1.2.3"})
			res := c.initialize(tc.requested, `{}`).Get("result")
			is.Equal(res.Get("protocolVersion").String(), tc.want)
			is.Equal(res.Get("serverInfo").Raw, `{"name":"mcp-stdio-example","version":"1.2.3"}`)
			is.Equal(res.Get("capabilities.tools.listChanged").Bool(), true)
			is.Equal(res.Get("capabilities.resources.subscribe").Bool(), true)
			is.Equal(res.Get("capabilities.resources.listChanged").Bool(), true)
			is.Equal(res.Get("capabilities.prompts.listChanged").Bool(), true)
			is.True(res.Get("capabilities.logging").IsObject())
			is.True(res.Get("instructions").String() != "")
			is.True(!res.Get("resultType").Exists()) // session-era results are unstamped
			m := c.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
			is.Equal(m.Raw, `{"jsonrpc":"2.0","id":2,"result":{}}`)
		})
	}
}

func TestInitializeNeedsAVersion(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	m := c.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`)
	is.Equal(m.Get("error.code").Int(), int64(-32602))
}

func TestIDsEchoedByteExact(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	for _, id := range []string{`7`, `"7"`, `1.50e2`, `-0`, `"a\"b\u00e9"`, `1e3`} { // MCP ids are strings and integers: 1.50 is not one, 1.50e2 is
		m := c.roundTrip(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		is.Equal(m.Raw, `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`)
		m = c.roundTrip(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
		is.Equal(m.Get("id").Raw, id)
	}
}

func TestUnknownMethod(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	m := c.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"no/such"}`)
	is.Equal(m.Get("error.code").Int(), int64(-32601))
	m = c.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"server/discover"}`) // unenveloped: the session era has no discover
	is.Equal(m.Get("error.code").Int(), int64(-32601))
}

func TestSessionEraRequestsBeforeInitialize(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	m := c.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"early"}}}`)
	is.Equal(m.Get("result.content.0.text").String(), "early")
	is.True(!m.Get("result.resultType").Exists())
	// The connection is still free to choose: initialize works.
	is.Equal(c.initialize("2025-06-18", `{}`).Get("result.protocolVersion").String(), "2025-06-18")
}

func TestMalformedLine(t *testing.T) {
	is := is.New(t)
	var logs bytes.Buffer
	c := start(t, Options{Logger: newTestLogger(&logs)})
	c.send(`{"jsonrpc":"2.0","id":1,"method":`)
	m := c.recv()
	is.Equal(m.Raw, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: the line is not valid JSON"}}`)
	// The server carries on.
	m = c.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	is.Equal(m.Get("result").Raw, `{}`)
	err, rest := c.finish()
	is.NoErr(err)
	is.Equal(len(rest), 0)                                     // nothing else on stdout
	is.True(strings.Contains(logs.String(), "bad input line")) // the diagnostic went to the logger
}

func TestNotJSONRPC(t *testing.T) {
	for _, line := range []string{
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`42`,
		`{"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":{},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
	} {
		t.Run(line, func(t *testing.T) {
			is := is.New(t)
			c := start(t, Options{})
			c.send(line)
			m := c.recv()
			is.Equal(m.Get("id").Raw, "null")
			is.Equal(m.Get("error.code").Int(), int64(-32600))
		})
	}
}

func TestParamsMustBeAnObject(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	// MCP's schema makes params an object: an array breaks the envelope,
	// and the request, whose id is fine, is refused under its id.
	m := c.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}`)
	is.Equal(m.Get("error.code").Int(), int64(-32600))
	is.Equal(m.Get("error.message").Str, "invalid request: params must be an object")
}

func TestOversizedLine(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{MaxMessageSize: 1024})
	c.send(`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("a", 4096) + `"}}}`)
	m := c.recv()
	is.Equal(m.Get("id").Raw, `"big"`) // the id was recovered from the start of the line
	is.Equal(m.Get("error.code").Int(), int64(-32600))
	m = c.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	is.Equal(m.Get("result").Raw, `{}`)
}

func TestStdinCloseEndsServe(t *testing.T) {
	defer goleak.VerifyNone(t)
	is := is.New(t)
	c := start(t, Options{})
	c.initialize("2025-11-25", `{}`)
	err, rest := c.finish()
	is.NoErr(err)
	is.Equal(len(rest), 0)
}

func TestServeReturnsNilAtEOF(t *testing.T) {
	is := is.New(t)
	var out bytes.Buffer
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" + "garbage\n" + `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	is.NoErr(Serve(context.Background(), in, &out, Options{}))
	is.NoErr(checkStdout(out.Bytes()))
	is.Equal(bytes.Count(out.Bytes(), []byte("\n")), 3)
}

func TestServeContextCancelled(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, inR, io.Discard, Options{}) }()
	_, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"seconds":3600}}}`+"\n")
	is.NoErr(err)
	cancel()
	select {
	case err := <-done:
		is.Equal(err, context.Canceled)
	case <-time.After(wait):
		t.Fatal("Serve did not return")
	}
	inW.Close() // reclaims the stdin reader
}

func TestStdoutFailureStopsServe(t *testing.T) {
	is := is.New(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	outR.Close()
	done := make(chan error, 1)
	go func() { done <- Serve(context.Background(), inR, outW, Options{}) }()
	_, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
	is.NoErr(err)
	select {
	case err := <-done:
		is.True(err != nil)
	case <-time.After(wait):
		t.Fatal("Serve did not return")
	}
	inW.Close()
}

func TestCancelSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		c := start(t, Options{})
		c.initialize("2025-11-25", `{}`)
		c.send(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"slow","arguments":{"seconds":60,"steps":60},"_meta":{"progressToken":1}}}`)
		m := c.recv()
		is.Equal(m.Get("method").String(), "notifications/progress") // it is running
		is.Equal(m.Get("params.progressToken").Raw, `1`)
		c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s","reason":"enough"}}`)
		synctest.Wait()
		began := time.Now()
		m = c.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"ping"}`) // nothing for "s" came first
		is.Equal(m.Get("result").Raw, `{}`)
		err, rest := c.finish()
		is.NoErr(err)
		is.Equal(rest, []string(nil))                 // no response for the cancelled call
		is.Equal(time.Since(began), time.Duration(0)) // it returned at once, without waiting out the grace
	})
}

func TestCancelMatchesRawID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		c := start(t, Options{})
		c.send(`{"jsonrpc":"2.0","id":"1","method":"tools/call","params":{"name":"slow","arguments":{"seconds":1,"steps":1}}}`)
		c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`) // 1 is not "1"
		m := c.recv()
		is.Equal(m.Get("id").Raw, `"1"`)
		is.Equal(m.Get("result.content.0.text").String(), "slow: finished 1 steps in 1 seconds")
	})
}

func TestShutdownGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		c := start(t, Options{})
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"seconds":1,"steps":1}}}`)
		c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{"seconds":3600,"steps":1}}}`)
		synctest.Wait()
		began := time.Now()
		err, rest := c.finish()
		is.NoErr(err)
		is.Equal(time.Since(began), shutdownGrace)
		is.Equal(len(rest), 2)
		// The short call finished within the grace; the long one was cut off
		// and told so.
		is.Equal(rest[0], `{"jsonrpc":"2.0","id":1,"result":{"content":[{"text":"slow: finished 1 steps in 1 seconds","type":"text"}]}}`)
		is.Equal(rest[1], `{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"request abandoned: stdin closed"}}`)
	})
}

func TestDuplicateInFlightID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		c := start(t, Options{})
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"seconds":1,"steps":1}}}`)
		m := c.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"ping"}`) // ping is stateless: answered
		is.Equal(m.Get("result").Raw, `{}`)
		m = c.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		is.Equal(m.Get("error.code").Int(), int64(-32600))
		m = c.recv()
		is.Equal(m.Get("result.content.0.text").String(), "slow: finished 1 steps in 1 seconds")
	})
}

func TestResponseToNobody(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	c.send(`{"jsonrpc":"2.0","id":"srv-99","result":{}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/whatever"}`)
	m := c.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	is.Equal(m.Get("result").Raw, `{}`) // both ignored silently
}

// TestHandlerGoroutinesAreReused: requests answered one after another run
// on the handler goroutines already there; after a burst, no more than
// maxIdleHandlers of them wait, and none outlive Serve (goleak).
func TestHandlerGoroutinesAreReused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		c := start(t, Options{})
		c.initialize("2025-11-25", `{}`)
		synctest.Wait() // the initialize's handler, which answered before it waits idle, waits
		const burst = maxIdleHandlers + 3
		for i := range burst {
			c.sendf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow","arguments":{"seconds":1,"steps":1}}}`, i)
		}
		synctest.Wait()
		is.Equal(handlerGoroutines(), burst) // one each, at once
		for range burst {
			is.Equal(c.recv().Get("result.content.0.text").String(), "slow: finished 1 steps in 1 seconds")
		}
		synctest.Wait()
		is.Equal(handlerGoroutines(), maxIdleHandlers) // the rest ended
		for i := range 20 {
			m := c.roundTrip(fmt.Sprintf(`{"jsonrpc":"2.0","id":"e%d","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, i))
			is.Equal(m.Get("result.content.0.text").String(), "hi")
			synctest.Wait()
			is.Equal(handlerGoroutines(), maxIdleHandlers) // no new one
		}
		err, rest := c.finish()
		is.NoErr(err)
		is.Equal(rest, []string(nil))
	})
}

// handlerGoroutines counts the goroutines in handlerLoop.
func handlerGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return bytes.Count(buf, []byte("exampleserver.(*server).handlerLoop("))
}
