package transporttest

import (
	"bytes"
	"sync"
)

// SyncBuffer is a bytes.Buffer for output that is written concurrently (a
// logger, a child process's stderr) and read by a test while it is being
// written. The zero value is an empty buffer ready to use. Its methods are
// safe for concurrent use; a SyncBuffer must not be copied after first use.
//
// Nothing is ever read out of it: String always returns everything
// written so far.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the buffer. It always returns len(p), nil.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.Write(p)
	return len(p), nil
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
