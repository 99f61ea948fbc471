//go:build linux

package transport

import (
	"context"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// A line the child writes that the budget cannot take is not assembled:
// the request it answers gets an error instead, and once the budget has
// room again the same answer goes through.
func TestChildLineOverTheBudgetIsAnsweredWithAnError(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	b := frame.NewBudget(1 << 20)
	q := make(messageQueue, 8)
	cfg := testChildCommand(t, "server")
	cfg.Budget = b
	c := startTestChild(t, cfg, q)

	is.True(b.Acquire(700 << 10)) // something else holds most of the budget
	is.NoErr(c.Handle(ctx, frame.MustParse(bigRequest(`"e1"`, 600<<10))))
	got := q.next(t)
	is.Equal(got.ID(), frame.ID(`"e1"`))
	code, isErr := got.ErrorCode()
	is.True(isErr)
	is.Equal(code, frame.CodeInternalError)
	is.True(strings.Contains(got.Get("error.message").Str, "memory budget"))
	is.Equal(b.Used(), int64(700<<10)) // the refused line left nothing counted

	b.Release(700 << 10)
	for _, id := range []string{`"e2"`, `"e3"`} { // the second needs the first released
		is.NoErr(c.Handle(ctx, frame.MustParse(bigRequest(id, 600<<10))))
		got = q.next(t)
		is.Equal(got.ID(), frame.ID(id))
		is.Equal(len(got.Get("result.s").Str), 600<<10)
	}

	is.NoErr(c.Close(ctx))
	waitDone(t, c)
	is.Equal(b.Used(), int64(0))
}
