package transport

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// bigRequest returns a request line of about n bytes.
func bigRequest(id string, n int) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"echo","params":{"s":"` + strings.Repeat("s", n) + `"}}`
}

// A message read under a budget is counted while its handler has it, on
// every dispatch path (requests on their own goroutines, the rest in
// order), and released once it has been handled; a line the budget cannot
// take is answered as a bad line.
func TestStdioCountsMessagesUntilHandled(t *testing.T) {
	for _, inFlight := range []int{0, 4} {
		t.Run("", func(t *testing.T) {
			is := is.New(t)
			b := frame.NewBudget(1 << 20)
			in := bigRequest("1", 200<<10) + "\n" +
				`{"jsonrpc":"2.0","method":"note","params":{"s":"` + strings.Repeat("n", 200<<10) + `"}}` + "\n" +
				bigRequest(`"too-big"`, 2<<20) + "\n" +
				bigRequest("3", 100<<10) + "\n"
			var out transporttest.SyncBuffer
			var mu sync.Mutex
			var seen []int64 // what was counted while each message was handled
			h := &handled{h: func(context.Context, frame.Message) error {
				mu.Lock()
				seen = append(seen, b.Used())
				mu.Unlock()
				return nil
			}}
			s := NewStdio(strings.NewReader(in), &out, StdioConfig{MaxInFlight: inFlight, Budget: b})
			is.NoErr(s.Serve(t.Context(), h))
			is.Equal(len(h.all()), 3)
			for _, used := range seen {
				is.True(used >= 100<<10) // the message in hand was counted
			}
			is.Equal(b.Used(), int64(0)) // and released once handled
			is.True(strings.Contains(out.String(), `{"jsonrpc":"2.0","id":"too-big","error":{"code":-32000,"message":"message refused: the gateway's memory budget for messages is used up"}}`))
		})
	}
}
