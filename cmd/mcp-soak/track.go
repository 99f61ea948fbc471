//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// tracker counts every request the driver sends and every answer that
// comes back for it, by the request's id. Ids are unique over the whole
// run. A request is in flight from start until finish; an answer to an id
// not in flight (answered twice, after its sender gave up, or never sent)
// is a stray.
type tracker struct {
	next atomic.Int64

	mu       sync.Mutex
	inflight map[int64]*call
	kinds    map[string]*tally
	strays   int64
	log      io.Writer // where duplicates and strays are told, if not nil
}

// call is one request in flight.
type call struct {
	kind      string
	answers   int
	errored   bool // the answer was a JSON-RPC error or an HTTP error status
	cancelled bool // the driver cancelled it (notifications/cancelled or an aborted request)
	sources   []string
}

// tally is what became of the requests of one kind.
type tally struct {
	sent       int64
	answered   int64 // exactly one answer
	errors     int64 // of answered: a JSON-RPC error or an HTTP error status
	cancelled  int64 // cancelled by the driver: answered once or not at all
	cancelNone int64 // of cancelled: no answer
	lost       int64 // not cancelled, no answer
	dup        int64 // more than one answer
}

func newTracker() *tracker {
	return &tracker{inflight: map[int64]*call{}, kinds: map[string]*tally{}, log: os.Stderr}
}

// start records a request of kind about to be sent and returns its id.
func (t *tracker) start(kind string) int64 {
	id := t.next.Add(1)
	t.mu.Lock()
	t.inflight[id] = &call{kind: kind}
	k := t.kinds[kind]
	if k == nil {
		k = &tally{}
		t.kinds[kind] = k
	}
	k.sent++
	t.mu.Unlock()
	return id
}

// answer records an answer to id, from whatever stream it came on; source
// says what it was (an HTTP status, a message), for the report of a
// duplicate or a stray.
func (t *tracker) answer(id int64, isErr bool, source string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.inflight[id]
	if c == nil {
		t.strays++
		if t.log != nil {
			fmt.Fprintf(t.log, "mcp-soak: an answer to id %d, not in flight: %s\n", id, excerpt(source))
		}
		return
	}
	c.answers++
	c.errored = c.errored || isErr
	c.sources = append(c.sources, excerpt(source))
}

// excerpt keeps the start of s.
func excerpt(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// cancel marks id as cancelled by the driver.
func (t *tracker) cancel(id int64) {
	t.mu.Lock()
	if c := t.inflight[id]; c != nil {
		c.cancelled = true
	}
	t.mu.Unlock()
}

// answers returns how many answers id has had so far.
func (t *tracker) answers(id int64) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.inflight[id]; c != nil {
		return c.answers
	}
	return 0
}

// finish ends id's time in flight and classifies it.
func (t *tracker) finish(id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.inflight[id]
	if c == nil {
		return
	}
	delete(t.inflight, id)
	k := t.kinds[c.kind]
	switch {
	case c.answers > 1:
		k.dup++
		if t.log != nil {
			fmt.Fprintf(t.log, "mcp-soak: %s request %d answered %d times: %s\n", c.kind, id, c.answers, strings.Join(c.sources, " | "))
		}
	case c.cancelled:
		k.cancelled++
		if c.answers == 0 {
			k.cancelNone++
		}
	case c.answers == 0:
		k.lost++
	default:
		k.answered++
		if c.errored {
			k.errors++
		}
	}
}

// totals sums every kind's tally; requests still in flight count as lost.
func (t *tracker) totals() (sum tally, strays int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range t.kinds {
		sum.sent += k.sent
		sum.answered += k.answered
		sum.errors += k.errors
		sum.cancelled += k.cancelled
		sum.cancelNone += k.cancelNone
		sum.lost += k.lost
		sum.dup += k.dup
	}
	sum.lost += int64(len(t.inflight))
	return sum, t.strays
}

// progress is a one-line summary of the requests so far.
func (t *tracker) progress() string {
	sum, strays := t.totals()
	return fmt.Sprintf("%d requests, %d answered, %d cancelled, %d lost or in flight, %d duplicated, %d strays",
		sum.sent, sum.answered, sum.cancelled, sum.lost, sum.dup, strays)
}

// table renders the per-kind tallies.
func (t *tracker) table() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := make([]string, 0, len(t.kinds))
	for n := range t.kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "| %-22s | %9s | %9s | %7s | %9s | %10s | %5s | %4s |\n", "request", "sent", "answered", "errors", "cancelled", "cancel: no answer", "lost", "dup")
	fmt.Fprintf(&b, "|%s|%s|%s|%s|%s|%s|%s|%s|\n", strings.Repeat("-", 24), strings.Repeat("-", 11), strings.Repeat("-", 11), strings.Repeat("-", 9), strings.Repeat("-", 11), strings.Repeat("-", 19), strings.Repeat("-", 7), strings.Repeat("-", 6))
	for _, n := range names {
		k := t.kinds[n]
		fmt.Fprintf(&b, "| %-22s | %9d | %9d | %7d | %9d | %17d | %5d | %4d |\n", n, k.sent, k.answered, k.errors, k.cancelled, k.cancelNone, k.lost, k.dup)
	}
	return b.String()
}
