package transport

import (
	"io"
	"strconv"
	"time"
)

// IdleTimeoutError reports that a response body went silent: no byte
// arrived for Idle while the transport was waiting for one. Transports
// return it inside a *frame.SendError with Sent true.
type IdleTimeoutError struct {
	Idle time.Duration
}

// Error says how long the server was silent, e.g. "no data from the server
// for 120s".
func (e *IdleTimeoutError) Error() string {
	return "no data from the server for " + strconv.FormatFloat(e.Idle.Seconds(), 'f', -1, 64) + "s"
}

// Timeout reports true: the error is a timeout.
func (e *IdleTimeoutError) Timeout() bool { return true }

// idleReader bounds the silence of a response body. Its timer runs only
// while a Read is waiting for the peer, so time the consumer spends handing
// messages on never counts as silence. When the timer fires, onIdle cancels
// the request, which makes the pending Read fail.
type idleReader struct {
	r io.Reader
	d time.Duration
	t *time.Timer
}

// newIdleReader wraps r; d <= 0 returns r unchanged. Between Reads the
// timer is stopped, so an abandoned idleReader holds no pending timer.
func newIdleReader(r io.Reader, d time.Duration, onIdle func()) io.Reader {
	if d <= 0 {
		return r
	}
	t := time.AfterFunc(d, onIdle)
	t.Stop()
	return &idleReader{r: r, d: d, t: t}
}

func (ir *idleReader) Read(p []byte) (int, error) {
	ir.t.Reset(ir.d)
	n, err := ir.r.Read(p)
	ir.t.Stop()
	return n, err
}
