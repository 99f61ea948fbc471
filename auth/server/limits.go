package server

import (
	"log/slog"
	"slices"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Token buckets on an injected clock: the rate limits of the embedded
// authorization server (by source) and of introspection (toward the
// issuer). Neither is safe for concurrent use: each lives under its
// owner's lock.

// bucket is a token bucket: it holds at most burst tokens and gains one
// every interval. Its zero value, seen at its first use, is full.
type bucket struct {
	tokens float64
	at     time.Time // when tokens was counted; zero: never used
	used   time.Time // when its key last took or spent (buckets)
}

// fill brings b's tokens up to now.
func (b *bucket) fill(now time.Time, burst int, every time.Duration) {
	if b.at.IsZero() {
		b.tokens, b.at = float64(burst), now
		return
	}
	if now.After(b.at) {
		b.tokens = min(float64(burst), b.tokens+float64(now.Sub(b.at))/float64(every))
	}
	b.at = now
}

// ready reports whether b holds a token at now, and else how long until
// it does.
func (b *bucket) ready(now time.Time, burst int, every time.Duration) (bool, time.Duration) {
	b.fill(now, burst, every)
	if b.tokens >= 1 {
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) * float64(every))
}

// take spends a token when b holds one, and else says how long until it
// does.
func (b *bucket) take(now time.Time, burst int, every time.Duration) (bool, time.Duration) {
	ok, wait := b.ready(now, burst, every)
	if ok {
		b.tokens--
	}
	return ok, wait
}

// spend takes a token whether or not b holds one (a wrong answer counts
// even when it was checked on the last token).
func (b *bucket) spend(now time.Time, burst int, every time.Duration) {
	b.fill(now, burst, every)
	b.tokens = max(b.tokens-1, 0)
}

// full reports whether b is as good as never used at now.
func (b *bucket) full(now time.Time, burst int, every time.Duration) bool {
	b.fill(now, burst, every)
	return b.tokens >= float64(burst)
}

// buckets are token buckets by key (a source), at most size of them: when
// a new key finds the table full, buckets that have filled up again are
// dropped, and if that frees less than an eighth of the table, the least
// recently used eighth goes (so that a flood of new keys pays for a sort
// once per size/8 of them, not a scan each). Dropping a bucket hands its
// key a full one later, which only a caller with more keys than the table
// holds can gain from; the limits behind (the client table, the one-time
// code's wrong-answer budget) bound what it gains.
type buckets struct {
	burst int
	every time.Duration
	size  int
	m     map[string]*bucket
}

func newBuckets(burst int, every time.Duration, size int) *buckets {
	return &buckets{burst: burst, every: every, size: size, m: map[string]*bucket{}}
}

// get returns key's bucket, making room for it when needed.
func (bs *buckets) get(key string, now time.Time) *bucket {
	if b, ok := bs.m[key]; ok {
		return b
	}
	if len(bs.m) >= bs.size {
		bs.makeRoom(now)
	}
	b := &bucket{}
	bs.m[key] = b
	return b
}

func (bs *buckets) makeRoom(now time.Time) {
	type used struct {
		key string
		at  time.Time
	}
	all := make([]used, 0, len(bs.m))
	for k, b := range bs.m {
		if b.full(now, bs.burst, bs.every) {
			delete(bs.m, k)
			continue
		}
		all = append(all, used{k, b.used})
	}
	room := max(bs.size/8, 1)
	if bs.size-len(bs.m) >= room {
		return
	}
	slices.SortFunc(all, func(x, y used) int { return x.at.Compare(y.at) })
	for _, u := range all[:room] {
		delete(bs.m, u.key)
	}
}

// take spends one of key's tokens, or says how long until one is there.
func (bs *buckets) take(key string, now time.Time) (bool, time.Duration) {
	b := bs.get(key, now)
	b.used = now
	return b.take(now, bs.burst, bs.every)
}

// ready reports whether key holds a token, or how long until it does.
func (bs *buckets) ready(key string, now time.Time) (bool, time.Duration) {
	b, ok := bs.m[key]
	if !ok {
		return true, 0
	}
	return b.ready(now, bs.burst, bs.every)
}

// spend takes one of key's tokens, down to none.
func (bs *buckets) spend(key string, now time.Time) {
	b := bs.get(key, now)
	b.used = now
	b.spend(now, bs.burst, bs.every)
}

// retryAfter renders a wait as whole seconds for Retry-After: at least 1.
func retryAfter(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

// quietLogEvery is the least time between two log lines of one kind of
// refusal: a flood of refusals is one line per interval, with the count.
const quietLogEvery = time.Minute

// quietLog logs refusals, at most one line per kind per quietLogEvery,
// saying how many were refused since the last line. Safe for concurrent
// use.
type quietLog struct {
	log  *slog.Logger
	gate frame.QuietLog
}

func newQuietLog(log *slog.Logger) *quietLog {
	return &quietLog{log: log, gate: frame.QuietLog{Every: quietLogEvery}}
}

// warn logs msg (with args) at warning level unless kind was logged less
// than quietLogEvery ago.
func (q *quietLog) warn(now time.Time, kind, msg string, args ...any) {
	if ok, unlogged := q.gate.Allow(now, kind); ok {
		q.log.Warn(msg, append(args, "refused_since_last_line", unlogged+1)...)
	}
}
