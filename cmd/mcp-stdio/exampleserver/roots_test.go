package exampleserver

import (
	"testing"

	"github.com/matryer/is"
)

// With AskRoots the server asks a client that declared roots for them once
// notifications/initialized has come, keeps the answer, and the roots tool
// shows it; with ask it asks again during the call.
func TestAskRootsAtTheStart(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{AskRoots: true})
	c.initialize("2025-11-25", `{"roots":{}}`)
	req := c.recv()
	is.Equal(req.Get("method").String(), "roots/list")
	c.send(`{"jsonrpc":"2.0","id":` + req.Get("id").Raw + `,"result":{"roots":[{"uri":"file:///start"}]}}`)
	m := c.roundTrip(callTool("1", "roots", `{}`))
	is.Equal(m.Get("result.content.0.text").String(), `roots asked at the start: [{"uri":"file:///start"}]`)

	c.send(callTool("2", "roots", `{"ask":true}`))
	req = c.recv()
	is.Equal(req.Get("method").String(), "roots/list")
	c.send(`{"jsonrpc":"2.0","id":` + req.Get("id").Raw + `,"error":{"code":-32603,"message":"no"}}`)
	m = c.recv()
	is.True(m.Get("result.isError").Bool())
	is.Equal(m.Get("result.content.0.text").String(), "roots/list asked now failed: no")
}

// Without the roots capability nothing is asked, and without AskRoots
// there is no roots tool.
func TestAskRootsOnlyWhenDeclaredAndAsked(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{AskRoots: true})
	c.initialize("2025-11-25", `{}`)
	m := c.roundTrip(callTool("1", "roots", `{}`)) // the next line is its answer: nothing was asked
	is.Equal(m.Get("result.content.0.text").String(), "no roots: none were asked for, or no answer came yet")

	c2 := start(t, Options{})
	c2.initialize("2025-11-25", `{"roots":{}}`)
	m = c2.roundTrip(callTool("1", "roots", `{}`))
	is.Equal(m.Get("error.code").Int(), int64(-32602))
}
