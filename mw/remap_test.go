package mw

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// answering is an inner chain that answers every request with its own
// params as the result, through deliver, before Handle returns — the
// relay's contract.
type answering struct {
	deliver func(frame.Message) bool
	mu      sync.Mutex
	sent    []frame.Message
	during  func(m frame.Message) // runs while the request is in flight
}

func (a *answering) Handle(_ context.Context, m frame.Message) error {
	a.mu.Lock()
	a.sent = append(a.sent, m)
	a.mu.Unlock()
	if a.during != nil {
		a.during(m)
	}
	if m.IsRequest() {
		result := m.Get("params").Raw
		if result == "" {
			result = "{}"
		}
		a.deliver(frame.ResultResponse(m.ID(), []byte(result)))
	}
	return nil
}

func TestRemapCall(t *testing.T) {
	is := is.New(t)
	r := NewRemap("page")
	inner := &answering{deliver: r.Capture}
	req := frame.MustParse(`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"c"}}`)
	resp, err := r.Call(t.Context(), inner, req, req.ID())
	is.NoErr(err)
	is.Equal(resp.String(), `{"jsonrpc":"2.0","id":"mcp-stdio/page/1","result":{"cursor":"c"}}`) // the answer to the minted id
	is.Equal(inner.sent[0].String(), `{"jsonrpc":"2.0","id":"mcp-stdio/page/1","method":"tools/list","params":{"cursor":"c"}}`)

	// Later answers to that id are not captured: nobody waits for them.
	is.True(!r.Capture(frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/page/1","result":{}}`)))
	// Client ids are never captured, even when they look alike.
	is.True(!r.Capture(frame.MustParse(`{"jsonrpc":"2.0","id":"mcp-stdio/page/2x","method":"a"}`)))
	is.True(!r.Capture(frame.MustParse(`{"jsonrpc":"2.0","id":7,"result":{}}`)))
}

func TestRemapCallWithoutAnAnswer(t *testing.T) {
	is := is.New(t)
	r := NewRemap("x")
	silent := HandlerFunc(func(context.Context, frame.Message) error { return nil })
	_, err := r.Call(t.Context(), silent, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), "")
	is.True(errors.Is(err, frame.ErrStreamEnded)) // delivered but unanswered

	failing := HandlerFunc(func(context.Context, frame.Message) error { return frame.ErrSessionLost })
	_, err = r.Call(t.Context(), failing, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), "")
	is.True(errors.Is(err, frame.ErrSessionLost)) // the inner error as it is
}

func TestRemapRetargetCancel(t *testing.T) {
	is := is.New(t)
	r := NewRemap("page")
	cancel := frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a","reason":"x"}}`)
	is.Equal(r.RetargetCancel(cancel).String(), cancel.String()) // nothing in flight for "a"

	var during string
	inner := &answering{deliver: r.Capture, during: func(frame.Message) {
		during = r.RetargetCancel(cancel).String()
	}}
	_, err := r.Call(t.Context(), inner, frame.MustParse(`{"jsonrpc":"2.0","id":"a","method":"prompts/list"}`), `"a"`)
	is.NoErr(err)
	is.Equal(during, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"mcp-stdio/page/1","reason":"x"}}`)
	is.Equal(r.RetargetCancel(cancel).String(), cancel.String()) // the call is over

	other := frame.MustParse(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"requestId":"a"}}`)
	is.Equal(r.RetargetCancel(other).String(), other.String()) // not a cancel
}
