package transporttest

import (
	"bytes"
	"regexp"
	"sync"
	"testing"
	"time"
)

// SyncBuffer is a bytes.Buffer for output that is written concurrently (a
// logger, a child process's stderr) and read by a test while it is being
// written. The zero value is an empty buffer ready to use. Its methods are
// safe for concurrent use; a SyncBuffer must not be copied after first use.
//
// Nothing is ever read out of it: String always returns everything
// written so far.
type SyncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	watches []*LineWatch
	closed  bool
}

// Write appends p to the buffer and hands the lines it completes to the
// buffer's watches. It always returns len(p), nil.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.Write(p)
	for _, w := range b.watches {
		b.scan(w)
	}
	return len(p), nil
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Close marks the end of the output, for a writer that knows it has
// written its last byte (the copy of a pipe that reached EOF, a call that
// returned): the channels of the buffer's watches are closed, so waiting
// for a line that will never come fails at once. It always returns nil,
// and later calls do nothing. Bytes written after Close are still kept.
func (b *SyncBuffer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	for _, w := range b.watches {
		close(w.c)
	}
	b.watches = nil
	return nil
}

// Watch returns a watch for the lines written to b that match re, from
// the first line written: those written before Watch is called count too.
// A line is the bytes up to a '\n', without it; the last bytes before
// Close count as a line only if they end in '\n'.
func (b *SyncBuffer) Watch(re *regexp.Regexp) *LineWatch {
	c := make(chan []string, watchBuffer)
	w := &LineWatch{C: c, c: c, re: re, b: b}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.scan(w)
	if b.closed {
		close(c)
		return w
	}
	b.watches = append(b.watches, w)
	return w
}

// scan hands w the lines completed since its last scan. b.mu is held.
func (b *SyncBuffer) scan(w *LineWatch) {
	all := b.b.Bytes()
	for {
		i := bytes.IndexByte(all[w.next:], '\n')
		if i < 0 {
			return
		}
		line := all[w.next : w.next+i]
		w.next += i + 1
		m := w.re.FindSubmatch(line)
		if m == nil {
			continue
		}
		sub := make([]string, len(m))
		for j, s := range m {
			sub[j] = string(s)
		}
		select {
		case w.c <- sub:
		default: // full: see LineWatch.C
		}
	}
}

// watchBuffer is how many matches a LineWatch holds that nobody has
// received yet.
const watchBuffer = 64

// A LineWatch hands over, in the order they were written, the lines of a
// [SyncBuffer] that match a regular expression. Create one with
// [SyncBuffer.Watch].
type LineWatch struct {
	// C receives the submatches of each matching line (index 0 is the
	// text the whole expression matched, as regexp's FindStringSubmatch
	// returns it), and is closed when the buffer is closed. It holds 64
	// matches that have not been received; later ones are dropped while it
	// is full.
	C <-chan []string

	c    chan []string
	re   *regexp.Regexp
	b    *SyncBuffer
	next int // offset in b of the first byte not yet scanned; guarded by b.mu
}

// Next returns the submatches of the next matching line, waiting up to d
// for it. It fails t, showing everything written, when d passes first or
// when the buffer is closed without such a line.
func (w *LineWatch) Next(t testing.TB, d time.Duration) []string {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case m, ok := <-w.C:
		if !ok {
			t.Fatalf("the output ended without a line matching %v:\n%s", w.re, w.b)
		}
		return m
	case <-timer.C:
		t.Fatalf("no line matching %v within %v:\n%s", w.re, d, w.b)
		return nil
	}
}
