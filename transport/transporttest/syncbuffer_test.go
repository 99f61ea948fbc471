package transporttest_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

func TestSyncBufferConcurrentWriters(t *testing.T) {
	is := is.New(t)
	var b transporttest.SyncBuffer
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 100 {
				fmt.Fprintf(&b, "writer %d line %d\n", w, i)
				_ = b.String() // reading while others write
			}
		})
	}
	wg.Wait()
	is.Equal(strings.Count(b.String(), "\n"), 800)
	is.True(strings.Contains(b.String(), "writer 7 line 99\n"))
}
