package transporttest_test

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// testWait bounds every wait; reaching it is a failure.
const testWait = 20 * time.Second

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

var pidLine = regexp.MustCompile(`started pid=(\d+)`)

func TestWatchSeesEarlierAndLaterLinesInOrder(t *testing.T) {
	is := is.New(t)
	var b transporttest.SyncBuffer
	fmt.Fprint(&b, "noise\nstarted pid=1\n")
	w := b.Watch(pidLine) // after the first match was written
	is.Equal(w.Next(t, testWait), []string{"started pid=1", "1"})

	go func() {
		fmt.Fprint(&b, "more noise\nstarted ")
		fmt.Fprint(&b, "pid=2") // a line is handed over only once complete
		fmt.Fprint(&b, "\nstarted pid=3\n")
	}()
	is.Equal(w.Next(t, testWait)[1], "2")
	is.Equal(w.Next(t, testWait)[1], "3")
	is.Equal(b.Watch(pidLine).Next(t, testWait)[1], "1") // a new watch starts from the first line
}

func TestCloseEndsTheWatches(t *testing.T) {
	is := is.New(t)
	var b transporttest.SyncBuffer
	before := b.Watch(pidLine)
	fmt.Fprint(&b, "started pid=1\nstarted pid=2") // the last line is not complete
	is.NoErr(b.Close())
	is.NoErr(b.Close()) // again: nothing happens

	m, ok := <-before.C
	is.True(ok)
	is.Equal(m[1], "1")
	_, ok = <-before.C
	is.True(!ok) // closed: "started pid=2" never ended

	after := b.Watch(pidLine)
	m, ok = <-after.C
	is.True(ok)
	is.Equal(m[1], "1")
	_, ok = <-after.C
	is.True(!ok)

	fmt.Fprint(&b, "\n") // kept, though no watch sees it
	is.Equal(b.String(), "started pid=1\nstarted pid=2\n")
}
