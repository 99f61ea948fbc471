package transport

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// DefaultBodyReadTimeout is [HTTPServerConfig.ReadTimeout]'s default: how
// long a request body may stop arriving before it is given up.
const DefaultBodyReadTimeout = 30 * time.Second

// ErrBodyTimeout means a request body stopped arriving: nothing came for
// the read timeout ([BodyLimits.ReadTimeout]).
var ErrBodyTimeout = errors.New("request body timed out")

// BodyLimits bound the reading of a request body; see [ReadBodyLimited].
type BodyLimits struct {
	// Max caps the body: a longer one fails with *http.MaxBytesError,
	// whatever its Content-Length claimed.
	Max int64
	// ReadTimeout bounds the silence while the body arrives, not its
	// total time: each read of the connection waits at most this long for
	// more bytes, so a large upload on a slow link that keeps coming gets
	// through and one that stops fails with ErrBodyTimeout. 0 means no
	// bound. It needs the request's ResponseWriter to support read
	// deadlines (see http.ResponseController); with one that does not,
	// there is no bound.
	ReadTimeout time.Duration
	// Budget, when set, counts the body's buffer when it is
	// frame.BudgetMin bytes or more (a body of unknown length as it
	// grows); a body it cannot take fails with frame.ErrOverBudget before
	// the buffer is allocated.
	Budget *frame.Budget
}

// bodyChunk is the most ReadBody allocates ahead of the bytes that have
// actually arrived, so a large Content-Length alone costs little memory.
const bodyChunk = 4 << 20

// unknownLengthStart is the first buffer for a body of unknown length,
// which then doubles as the body keeps coming.
const unknownLengthStart = 16 << 10

// ReadBody reads r's body, at most limit bytes. A longer body fails with
// *http.MaxBytesError, whatever the Content-Length claimed (and an
// http.MaxBytesReader put in front fails the same way).
func ReadBody(r *http.Request, limit int64) ([]byte, error) {
	b, _, err := ReadBodyLimited(nil, r, BodyLimits{Max: limit})
	return b, err
}

// ReadBodyLimited reads r's body within lim; w is r's ResponseWriter, whose
// connection's read deadline times each read (nil for none). It returns
// the body and what it holds of lim.Budget, which the caller releases
// once done with the body; after an error nothing stays counted.
//
// After a body read whole, the read deadline is cleared, so that it does
// not outlive the body: the server (http.Server or [HTTP1Server]) reads
// on from then, to notice the client going away. After a failure it is
// left as it is, and the connection should not carry another request:
// answer with "Connection: close", which also keeps the server from
// reading on to discard the rest of the body.
func ReadBodyLimited(w http.ResponseWriter, r *http.Request, lim BodyLimits) (body []byte, held int64, err error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, 0, nil
	}
	if r.ContentLength > lim.Max {
		return nil, 0, &http.MaxBytesError{Limit: lim.Max}
	}
	br := bodyReader{body: r.Body, lim: lim}
	if lim.ReadTimeout > 0 && w != nil {
		br.rc = http.NewResponseController(w)
	}
	body, err = br.readAll(r.ContentLength)
	if err != nil {
		lim.Budget.Release(br.held)
		return nil, 0, err
	}
	if br.rc != nil {
		_ = br.rc.SetReadDeadline(time.Time{})
	}
	return body, br.held, nil
}

// bodyReader reads one body within its limits.
type bodyReader struct {
	body io.Reader
	lim  BodyLimits
	rc   *http.ResponseController // nil: no read deadline
	held int64                    // counted against lim.Budget
}

// readAll reads the body; length is its Content-Length (-1 if unknown).
func (br *bodyReader) readAll(length int64) ([]byte, error) {
	limit := br.lim.Max
	want := limit + 1 // unknown length: read until EOF or past the cap
	first := min(want, unknownLengthStart)
	if length >= 0 {
		want = length
		first = min(want, bodyChunk)
	}
	buf, err := br.grow(nil, first)
	if err != nil {
		return nil, err
	}
	for {
		if int64(len(buf)) >= want {
			if length >= 0 {
				return buf, nil
			}
			return nil, &http.MaxBytesError{Limit: limit}
		}
		if len(buf) == cap(buf) {
			// The first chunk arrived: trust the announced length now (one
			// copy), or keep doubling for a body of unknown length.
			grow := want - int64(len(buf))
			if length < 0 {
				grow = min(grow, int64(len(buf)))
			}
			if buf, err = br.grow(buf, grow); err != nil {
				return nil, err
			}
		}
		end := min(int64(cap(buf)), want)
		n, err := br.read(buf[len(buf):end])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			if length >= 0 && int64(len(buf)) < length {
				return nil, io.ErrUnexpectedEOF
			}
			if int64(len(buf)) > limit {
				return nil, &http.MaxBytesError{Limit: limit}
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// grow returns buf with room for n more bytes, counting its new capacity
// (up to the cap) against the budget first when it reaches
// frame.BudgetMin.
func (br *bodyReader) grow(buf []byte, n int64) ([]byte, error) {
	c := int64(len(buf)) + n
	if br.lim.Budget != nil && c >= frame.BudgetMin {
		counted := min(c, br.lim.Max)
		if !br.lim.Budget.Acquire(counted - br.held) {
			return nil, frame.ErrOverBudget
		}
		br.held = counted
	}
	grown := make([]byte, len(buf), c)
	copy(grown, buf)
	return grown, nil
}

// read reads the body once, waiting at most the read timeout for bytes.
func (br *bodyReader) read(p []byte) (int, error) {
	if br.rc != nil && br.rc.SetReadDeadline(time.Now().Add(br.lim.ReadTimeout)) != nil {
		br.rc = nil // not supported: no bound
	}
	n, err := br.body.Read(p)
	if err != nil && br.rc != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		err = ErrBodyTimeout
	}
	return n, err
}

// writeBodyError answers a POST whose body could not be read: 413 for a
// body over the cap, 408 for one that stopped arriving, 503 when the
// memory budget could not take it, 400 otherwise. The connection is
// closed after the answer: what is left of the body, if anything, could
// not be told from a next request.
func writeBodyError(w http.ResponseWriter, err error, readTimeout time.Duration) {
	h := w.Header()
	h.Set("Connection", "close")
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeRPCError(w, http.StatusRequestEntityTooLarge, "", frame.CodeInvalidRequest, "request body too large")
	case errors.Is(err, ErrBodyTimeout):
		writeRPCError(w, http.StatusRequestTimeout, "", frame.CodeInvalidRequest, "request body timed out: nothing arrived for "+readTimeout.String())
	case errors.Is(err, frame.ErrOverBudget):
		h.Set("Retry-After", strconv.Itoa(budgetRetryAfter))
		writeRPCError(w, http.StatusServiceUnavailable, "", frame.CodeGateway, "the gateway's memory budget for messages is used up; try again later")
	default:
		writeRPCError(w, http.StatusBadRequest, "", frame.CodeInvalidRequest, "cannot read the request body")
	}
}

// budgetRetryAfter is the Retry-After, in seconds, of a body refused for
// the memory budget.
const budgetRetryAfter = 1
