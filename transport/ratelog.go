package transport

import (
	"sync"
	"time"
)

// refusalLogEvery is how often a kind of refusal (a connection over the
// cap, a body over the memory budget) is logged at most.
const refusalLogEvery = 10 * time.Second

// rateLog lets an event be logged at most once per interval; the events
// in between are counted and reported with the next line.
type rateLog struct {
	every time.Duration

	mu       sync.Mutex
	last     time.Time
	unlogged int
}

// allow reports whether an event happening at now is logged, and how many
// were not since the last one that was.
func (r *rateLog) allow(now time.Time) (ok bool, unlogged int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.last.IsZero() && now.Sub(r.last) < r.every {
		r.unlogged++
		return false, 0
	}
	r.last, unlogged, r.unlogged = now, r.unlogged, 0
	return true, unlogged
}
