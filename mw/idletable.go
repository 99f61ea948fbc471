package mw

import (
	"context"
	"errors"
	"sync"
	"time"
)

// idleTable is the mechanism serve's session stage ([Sessions]) and its
// 2026-07-28 pool ([Pool]) share: entries keyed by string, each holding a
// backend of its owner's (E), at most max of them alive or starting; an
// entry is idle while no checkout holds it, and one idle for ttl expires;
// at the bound a new entry takes the place of the one idle the longest.
// What an entry is, how it starts and how it closes is its owner's
// policy. It is safe for concurrent use.
type idleTable[E any] struct {
	max    int
	ttl    time.Duration // 0: entries never idle out
	after  func(d time.Duration, f func()) (stop func() bool)
	expire func(E) // closes an entry whose idle timer fired; it is removed already

	mu       sync.Mutex
	entries  map[string]*idleEntry[E]
	starting int    // entries not yet started
	closed   bool   // reserve fails
	ticks    uint64 // orders the moments entries fall idle
	bg       int    // closes in progress the table's Close waits for
	drained  chan struct{}
}

// idleEntry is one entry of an [idleTable].
type idleEntry[E any] struct {
	key       string
	v         E
	live      bool // started; only a live entry idles out or is evicted
	gone      bool // removed: nothing more checks it out
	inUse     int  // checkouts held
	idleSince uint64
	gen       uint64 // bumped when an idle timer is armed: an older one is stale
	stop      func() bool
}

var (
	errTableClosed = errors.New("closed")
	errTableTaken  = errors.New("the key is in use")
	errTableFull   = errors.New("every entry is busy")
)

// newIdleTable returns an empty table; max must be positive. after
// times idle entries; nil means time.AfterFunc.
func newIdleTable[E any](max int, ttl time.Duration, after func(time.Duration, func()) func() bool, expire func(E)) *idleTable[E] {
	if after == nil {
		after = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	return &idleTable[E]{max: max, ttl: ttl, after: after, expire: expire, entries: make(map[string]*idleEntry[E])}
}

// reserve adds a starting entry under key holding v, with one checkout
// held. At the bound it evicts the live entry idle the longest: that one
// is removed and returned for the caller to close, and the caller calls
// done once it has. It fails with errTableClosed after Close, errTableTaken
// when key has an entry, errTableFull when no entry is idle.
func (t *idleTable[E]) reserve(key string, v E) (e, evicted *idleEntry[E], err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		return nil, nil, errTableClosed
	case t.entries[key] != nil:
		return nil, nil, errTableTaken
	}
	if len(t.entries) >= t.max {
		if evicted = t.idlestLocked(); evicted == nil {
			return nil, nil, errTableFull
		}
		t.removeLocked(evicted)
		t.bg++ // the eviction's close: Close waits for it
	}
	e = &idleEntry[E]{key: key, v: v, inUse: 1}
	t.entries[key] = e
	t.starting++
	return e, evicted, nil
}

// idlestLocked returns the live entry idle the longest, or nil.
func (t *idleTable[E]) idlestLocked() *idleEntry[E] {
	var best *idleEntry[E]
	for _, e := range t.entries {
		if e.live && e.inUse == 0 && (best == nil || e.idleSince < best.idleSince) {
			best = e
		}
	}
	return best
}

// start marks e started: from now on it may idle out and be evicted. It
// reports false, removing e, when the table closed meanwhile or e was
// removed; the caller then closes e's backend itself.
func (t *idleTable[E]) start(e *idleEntry[E]) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || e.gone {
		t.removeLocked(e)
		return false
	}
	e.live = true
	t.starting--
	if e.inUse == 0 {
		t.idleLocked(e)
	}
	return true
}

// get returns the live entry under key, or nil.
func (t *idleTable[E]) get(key string) *idleEntry[E] {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.entries[key]; e != nil && e.live {
		return e
	}
	return nil
}

// checkout returns the entry under key, started or starting, with one
// more checkout held; nil when there is none. It fails with
// errTableClosed after Close.
func (t *idleTable[E]) checkout(key string) (*idleEntry[E], error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, errTableClosed
	}
	e := t.entries[key]
	if e != nil {
		t.acquireLocked(e)
	}
	return e, nil
}

// acquire holds one more checkout of e; false once e is removed.
func (t *idleTable[E]) acquire(e *idleEntry[E]) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.gone {
		return false
	}
	t.acquireLocked(e)
	return true
}

func (t *idleTable[E]) acquireLocked(e *idleEntry[E]) {
	e.inUse++
	if e.stop != nil {
		e.stop()
		e.stop = nil
	}
}

// release ends one checkout of e; the last one makes a live e idle.
func (t *idleTable[E]) release(e *idleEntry[E]) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e.inUse--
	if e.inUse == 0 && e.live && !e.gone {
		t.idleLocked(e)
	}
}

// idleLocked records that e fell idle now, and arms its idle timer.
func (t *idleTable[E]) idleLocked(e *idleEntry[E]) {
	t.ticks++
	e.idleSince = t.ticks
	if t.ttl <= 0 {
		return
	}
	e.gen++
	gen := e.gen
	e.stop = t.after(t.ttl, func() { t.fire(e, gen) })
}

// fire expires e if nothing held it since the timer of generation gen
// was armed, and the table is open.
func (t *idleTable[E]) fire(e *idleEntry[E], gen uint64) {
	t.mu.Lock()
	if e.gone || e.inUse > 0 || e.gen != gen || t.closed {
		t.mu.Unlock()
		return
	}
	e.stop = nil
	t.removeLocked(e)
	t.bg++
	t.mu.Unlock()
	defer t.done()
	t.expire(e.v)
}

// remove takes e out of the table, if it is still in; it reports whether
// it was.
func (t *idleTable[E]) remove(e *idleEntry[E]) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.removeLocked(e)
}

func (t *idleTable[E]) removeLocked(e *idleEntry[E]) bool {
	if e.gone {
		return false
	}
	e.gone = true
	if t.entries[e.key] == e {
		delete(t.entries, e.key)
	}
	if !e.live {
		t.starting--
	}
	if e.stop != nil {
		e.stop()
		e.stop = nil
	}
	return true
}

// isGone reports whether e has been removed.
func (t *idleTable[E]) isGone(e *idleEntry[E]) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return e.gone
}

// count returns the entries in the table and how many of them are
// starting.
func (t *idleTable[E]) count() (all, starting int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries), t.starting
}

// full reports whether reserve would fail now for want of room: the
// table is closed, or at its bound with no live entry idle.
func (t *idleTable[E]) full() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed || len(t.entries) >= t.max && t.idlestLocked() == nil
}

// spawn runs f on a goroutine of its own that Close waits for.
func (t *idleTable[E]) spawn(f func()) {
	t.mu.Lock()
	t.bg++
	t.mu.Unlock()
	go func() {
		defer t.done()
		f()
	}()
}

// done ends a close Close waits for: an eviction's (see reserve) or
// spawn's.
func (t *idleTable[E]) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.bg--
	if t.bg == 0 && t.drained != nil {
		close(t.drained)
		t.drained = nil
	}
}

// Close marks the table closed (reserve fails from now on), runs end for
// every entry at once (live tells it whether the entry has started), and
// returns once they have returned and every close in progress (evictions,
// expiries, spawn) is over, or ctx ends. Its error joins end's errors,
// and ctx's when ctx ended first.
func (t *idleTable[E]) Close(ctx context.Context, end func(ctx context.Context, e *idleEntry[E], live bool) error) error {
	type ent struct {
		e    *idleEntry[E]
		live bool
	}
	t.mu.Lock()
	t.closed = true
	all := make([]ent, 0, len(t.entries))
	for _, e := range t.entries {
		all = append(all, ent{e, e.live})
	}
	t.mu.Unlock()
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for _, x := range all {
		wg.Go(func() {
			if err := end(ctx, x.e, x.live); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.mu.Lock()
	var drained chan struct{}
	if t.bg > 0 {
		if t.drained == nil {
			t.drained = make(chan struct{})
		}
		drained = t.drained
	}
	t.mu.Unlock()
	if drained != nil {
		select {
		case <-drained:
		case <-ctx.Done():
			errs = append(errs, ctx.Err())
		}
	}
	return errors.Join(errs...)
}
