package frame_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestQuietLog(t *testing.T) {
	is := is.New(t)
	q := frame.QuietLog{Every: time.Minute}
	t0 := time.Unix(1000, 0)
	ok, n := q.Allow(t0, "a")
	is.True(ok)
	is.Equal(n, 0)
	for range 3 {
		ok, _ = q.Allow(t0.Add(time.Second), "a")
		is.True(!ok) // quiet within the minute
	}
	ok, _ = q.Allow(t0.Add(time.Second), "b") // another kind is not held back
	is.True(ok)
	ok, n = q.Allow(t0.Add(time.Minute), "a")
	is.True(ok)
	is.Equal(n, 3)           // the events not logged are counted
	ok, _ = q.Allow(t0, "a") // a clock set back
	is.True(ok)
	var zero frame.QuietLog
	ok, _ = zero.Allow(t0, "")
	is.True(ok)
	ok, _ = zero.Allow(t0, "")
	is.True(ok) // the zero QuietLog logs everything
}

func ExampleQuietLog() {
	q := frame.QuietLog{Every: time.Minute}
	start := time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC)
	for i := range 5 {
		if ok, unlogged := q.Allow(start.Add(time.Duration(i)*20*time.Second), "refused"); ok {
			fmt.Println("refused; not logged since the last line:", unlogged)
		}
	}
	// Output:
	// refused; not logged since the last line: 0
	// refused; not logged since the last line: 2
}
