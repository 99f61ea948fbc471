//go:build linux

package pipeline

import (
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// An answer from the child that the memory budget cannot take is not
// assembled: the client gets an error for its request instead, the
// session goes on, and the same call passes once the budget has room.
func TestServeChildAnswerOverTheBudget(t *testing.T) {
	is := is.New(t)
	b := frame.NewBudget(1 << 20)
	g := newSessionGateway(t, func(cfg *ServeConfig) {
		cfg.Budget = b
		cfg.MaxBodySize = 1 << 20
		cfg.MaxMessageSize = 1 << 20
	})
	sid := g.initialize(t)
	echo := `{"jsonrpc":"2.0","id":"big","method":"echo","params":{"s":"` + strings.Repeat("e", 300<<10) + `"}}`

	is.True(b.Acquire(700 << 10)) // held elsewhere: the body fits beside it, the answer does not
	msgs, resp := g.call(t, sid, acceptJSON, echo)
	is.Equal(resp.StatusCode, http.StatusOK)
	is.Equal(len(msgs), 1)
	is.Equal(msgs[0].ID(), frame.ID(`"big"`))
	code, isErr := msgs[0].ErrorCode()
	is.True(isErr)
	is.Equal(code, frame.CodeInternalError)
	is.True(strings.Contains(msgs[0].Get("error.message").Str, "memory budget"))

	b.Release(700 << 10)
	msgs, _ = g.call(t, sid, acceptBoth, echo)
	is.Equal(len(msgs), 1)
	is.Equal(len(msgs[0].Get("result.s").Str), 300<<10)

	is.Equal(g.status(t, http.MethodDelete, sid, ""), http.StatusNoContent)
	is.Equal(b.Used(), int64(0)) // the session's buffers went with it
}
