package mw

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
)

// tableHarness is an idleTable of strings with manual timers, recording
// what expired.
type tableHarness struct {
	t       *idleTable[string]
	timers  *manualTimers
	mu      sync.Mutex
	expired []string
}

func newTableHarness(max int, ttl time.Duration) *tableHarness {
	h := &tableHarness{timers: &manualTimers{}}
	h.t = newIdleTable(max, ttl, h.timers.AfterFunc, func(v string) {
		h.mu.Lock()
		h.expired = append(h.expired, v)
		h.mu.Unlock()
	})
	return h
}

func (h *tableHarness) gotExpired() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.expired...)
}

// add reserves and starts an entry under key, then releases it (idle).
func (h *tableHarness) add(is *is.I, key string) *idleEntry[string] {
	e, evicted, err := h.t.reserve(key, key)
	is.NoErr(err)
	is.True(evicted == nil)
	is.True(h.t.start(e))
	h.t.release(e)
	return e
}

func TestIdleTableCapacity(t *testing.T) {
	is := is.New(t)
	h := newTableHarness(2, 0)
	a, _, err := h.t.reserve("a", "a")
	is.NoErr(err)
	_, _, err = h.t.reserve("a", "a")
	is.True(errors.Is(err, errTableTaken))
	b, _, err := h.t.reserve("b", "b")
	is.NoErr(err)
	is.True(h.t.full()) // both starting: neither may be evicted
	_, _, err = h.t.reserve("c", "c")
	is.True(errors.Is(err, errTableFull))
	all, starting := h.t.count()
	is.Equal(all, 2)
	is.Equal(starting, 2)

	is.True(h.t.start(a))
	is.True(h.t.start(b))
	is.True(h.t.full()) // started but held
	h.t.release(a)
	is.True(!h.t.full()) // a is idle
	_, starting = h.t.count()
	is.Equal(starting, 0)

	// A starting entry that fails to start gives its place back.
	is.True(h.t.remove(b))
	is.True(!h.t.remove(b))
	all, _ = h.t.count()
	is.Equal(all, 1)
}

func TestIdleTableEvictsTheLongestIdle(t *testing.T) {
	is := is.New(t)
	h := newTableHarness(3, 0)
	a := h.add(is, "a")
	b := h.add(is, "b")
	c := h.add(is, "c")
	// a falls idle again after b and c: b is now idle the longest.
	is.True(h.t.acquire(a))
	h.t.release(a)

	_, evicted, err := h.t.reserve("d", "d")
	is.NoErr(err)
	is.Equal(evicted, b)
	is.True(h.t.isGone(b))
	is.True(!h.t.acquire(b)) // nothing more begins on an evicted entry
	h.t.done()

	// c is busy: a goes next, then none is left to evict.
	is.True(h.t.acquire(c))
	_, evicted, err = h.t.reserve("e", "e")
	is.NoErr(err)
	is.Equal(evicted, a)
	h.t.done()
	_, _, err = h.t.reserve("f", "f")
	is.True(errors.Is(err, errTableFull))
	is.True(h.t.get("a") == nil)
	is.Equal(h.t.get("c"), c)
	is.True(h.t.get("d") == nil) // starting: not found by get
	d, err := h.t.checkout("d")
	is.NoErr(err)
	is.True(d != nil) // but found by checkout
}

func TestIdleTableIdleTimers(t *testing.T) {
	is := is.New(t)
	h := newTableHarness(4, time.Minute)
	a := h.add(is, "a")
	b := h.add(is, "b")

	// a is used again while its timer is armed: the timer of that older
	// generation must do nothing, even if it fires after all.
	h.timers.mu.Lock()
	stale := h.timers.fs[0]
	h.timers.mu.Unlock()
	is.True(h.t.acquire(a))
	h.t.release(a)
	stale()
	is.Equal(h.gotExpired(), []string(nil))
	is.True(!h.t.isGone(a))

	// b held: its timer was stopped; a is idle: it expires.
	is.True(h.t.acquire(b))
	h.timers.fire()
	is.Equal(h.gotExpired(), []string{"a"})
	is.True(h.t.isGone(a))
	is.True(!h.t.isGone(b))

	// A timer that fires while its entry is held again does nothing.
	h.t.release(b)
	h.timers.mu.Lock()
	pending := h.timers.fs[len(h.timers.fs)-1]
	h.timers.mu.Unlock()
	is.True(h.t.acquire(b))
	pending()
	is.True(!h.t.isGone(b))
	h.t.release(b)

	// An entry that starts with no checkout left is idle at once.
	c, _, err := h.t.reserve("c", "c")
	is.NoErr(err)
	h.t.release(c)
	is.True(h.t.start(c))
	h.timers.fire()
	is.Equal(h.gotExpired(), []string{"a", "b", "c"})

	// Timers do nothing once the table is closed.
	d := h.add(is, "d")
	is.NoErr(h.t.Close(context.Background(), func(context.Context, *idleEntry[string], bool) error { return nil }))
	h.timers.fire()
	is.True(!h.t.isGone(d))
	is.Equal(len(h.gotExpired()), 3)
}

func TestIdleTableCloseWaits(t *testing.T) {
	is := is.New(t)
	h := newTableHarness(4, 0)
	live := h.add(is, "live")
	starting, _, err := h.t.reserve("starting", "starting")
	is.NoErr(err)

	// A close in progress (spawn) holds Close until it is over.
	release := make(chan struct{})
	h.t.spawn(func() { <-release })

	var mu sync.Mutex
	ended := map[string]bool{}
	done := make(chan error)
	go func() {
		done <- h.t.Close(context.Background(), func(_ context.Context, e *idleEntry[string], isLive bool) error {
			mu.Lock()
			ended[e.v] = isLive
			mu.Unlock()
			if isLive {
				return errors.New("close " + e.v)
			}
			return nil
		})
	}()
	select {
	case <-done:
		t.Fatal("Close returned before the close in progress was over")
	default:
	}
	close(release)
	err = <-done
	is.Equal(err.Error(), "close live")
	is.Equal(ended, map[string]bool{"live": true, "starting": false})
	is.True(live != nil)

	// After Close nothing is added, and an entry starting then is told.
	_, _, err = h.t.reserve("x", "x")
	is.True(errors.Is(err, errTableClosed))
	_, err = h.t.checkout("live")
	is.True(errors.Is(err, errTableClosed))
	is.True(!h.t.start(starting))
	is.True(h.t.full())
}

func TestIdleTableCloseEndsWithCtx(t *testing.T) {
	is := is.New(t)
	h := newTableHarness(4, 0)
	release := make(chan struct{})
	h.t.spawn(func() { <-release })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := h.t.Close(ctx, func(context.Context, *idleEntry[string], bool) error { return nil })
	is.True(errors.Is(err, context.Canceled))
	close(release)
	// The spawned goroutine ends once released; a second Close waits for it.
	is.NoErr(h.t.Close(context.Background(), func(context.Context, *idleEntry[string], bool) error { return nil }))
}

// TestIdleTableConcurrency runs reservations, checkouts, releases, timers
// and evictions at once (under -race), then checks the counts add up.
func TestIdleTableConcurrency(t *testing.T) {
	is := is.New(t)
	const max = 4
	h := newTableHarness(max, time.Minute)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 200 {
				key := fmt.Sprint((w + i) % 7)
				e, err := h.t.checkout(key)
				is.NoErr(err)
				if e == nil {
					var evicted *idleEntry[string]
					e, evicted, err = h.t.reserve(key, key)
					if evicted != nil {
						h.t.done()
					}
					if err != nil {
						continue
					}
					if !h.t.start(e) {
						continue
					}
				}
				if i%5 == 0 {
					h.timers.fire()
				}
				h.t.release(e)
			}
		})
	}
	wg.Wait()
	all, starting := h.t.count()
	is.True(all <= max)
	is.Equal(starting, 0)
	h.t.mu.Lock()
	for _, e := range h.t.entries {
		is.Equal(e.inUse, 0)
		is.True(e.live && !e.gone)
	}
	h.t.mu.Unlock()
	is.NoErr(h.t.Close(context.Background(), func(context.Context, *idleEntry[string], bool) error { return nil }))
}
