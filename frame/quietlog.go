package frame

import (
	"sync"
	"time"
)

// QuietLog lets each kind of event — a refusal an attacker can repeat at
// will, say — be logged at most once per interval: the events in between
// are counted, and the count goes with the next line of that kind. It is
// safe for concurrent use; the zero QuietLog logs every event.
type QuietLog struct {
	// Every is the least time between two lines of one kind.
	Every time.Duration

	mu    sync.Mutex
	kinds map[string]*quietKind
}

type quietKind struct {
	last     time.Time
	unlogged int
}

// Allow reports whether an event of kind happening at now is to be logged,
// and how many events of that kind were not since the last one that was.
// An event earlier than the last one logged (a clock set back) is logged.
func (q *QuietLog) Allow(now time.Time, kind string) (ok bool, unlogged int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := q.kinds[kind]
	if k == nil {
		if q.kinds == nil {
			q.kinds = map[string]*quietKind{}
		}
		k = &quietKind{}
		q.kinds[kind] = k
	}
	if !k.last.IsZero() && now.Sub(k.last) < q.Every && !now.Before(k.last) {
		k.unlogged++
		return false, 0
	}
	k.last, unlogged, k.unlogged = now, k.unlogged, 0
	return true, unlogged
}
