package transport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// errAnswerOver is what a write to an answer whose handler has returned
// gets.
var errAnswerOver = errors.New("transport: write to an answer after its handler returned")

// h1response is the http.ResponseWriter of an [HTTP1Server] request.
type h1response struct {
	c      *h1conn
	req    *http.Request
	body   *h1body // nil when the request has none
	header http.Header

	continueMu sync.Mutex
	continueOK bool // the 100 may still go out (guarded by continueMu)

	mu          sync.Mutex
	out         *h1out // nil until the first write, and after the end
	status      int
	wroteHeader bool  // the final status is set
	committed   bool  // the header is in out.bw
	chunked     bool  // the body goes in chunks
	declared    int64 // the handler's Content-Length, or -1
	written     int64 // body bytes written by the handler
	closeAfter  bool  // the connection closes after this answer
	over        bool  // the handler has returned
	failed      error // the connection failed a write
}

// newH1Response returns the answer to req on c.
func newH1Response(c *h1conn, req *http.Request) *h1response {
	w := &h1response{c: c, req: req, header: make(http.Header), declared: -1, continueOK: true}
	if req.Body != nil && req.Body != http.NoBody {
		w.body = &h1body{c: c, w: w, src: req.Body}
		req.Body = w.body
	}
	w.closeAfter = req.Close // Connection: close, or HTTP/1.0 without keep-alive (http.ReadRequest tells)
	return w
}

func (w *h1response) Header() http.Header { return w.header }

func (w *h1response) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeHeaderLocked(code)
}

// writeHeaderLocked sets the status (a 1xx is written at once); w.mu is
// held.
func (w *h1response) writeHeaderLocked(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if w.wroteHeader || w.over {
		w.c.srv.log.Debug("a handler set its answer's status twice; the second is ignored", "path", w.req.URL.Path, "status", code)
		return
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		w.writeInformational(code)
		return
	}
	w.wroteHeader = true
	w.status = code
	if cl := w.header.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			w.declared = n
		} else {
			w.c.srv.log.Debug("a handler set an invalid Content-Length; it is dropped", "value", cl)
			w.header.Del("Content-Length")
		}
	}
}

// writeInformational writes a 1xx answer with the header as it is.
func (w *h1response) writeInformational(code int) {
	if w.failed != nil {
		return
	}
	if code == http.StatusContinue {
		w.writeContinue() // at most once, and never after the header
		return
	}
	o := w.outLocked()
	w.writeStatusLine(o, code)
	_ = w.header.Write(o.bw)
	_, _ = o.bw.WriteString("\r\n")
	w.failed = o.bw.Flush()
}

// outLocked returns the pooled writer, taking it on first use; w.mu is
// held.
func (w *h1response) outLocked() *h1out {
	if w.out == nil {
		w.out = w.c.srv.getOut(w.c)
	}
	return w.out
}

// bodyAllowed reports whether the status lets the answer have a body.
func (w *h1response) bodyAllowed() bool {
	return w.status >= 200 && w.status != http.StatusNoContent && w.status != http.StatusNotModified
}

func (w *h1response) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return writeBody(w, p)
}

// WriteString is Write without a copy of s.
func (w *h1response) WriteString(s string) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return writeBody(w, s)
}

// writeBody writes the handler's bytes; w.mu is held.
func writeBody[T []byte | string](w *h1response, p T) (int, error) {
	if w.over {
		return 0, errAnswerOver
	}
	if !w.wroteHeader {
		w.writeHeaderLocked(http.StatusOK)
	}
	if !w.bodyAllowed() {
		return 0, http.ErrBodyNotAllowed
	}
	if w.failed != nil {
		return 0, w.failed
	}
	if len(p) == 0 {
		return 0, nil
	}
	if w.declared >= 0 && w.written+int64(len(p)) > w.declared {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	o := w.outLocked()
	if !w.committed {
		if len(o.pre)+len(p) <= cap(o.pre) {
			o.pre = append(o.pre, p...)
			return len(p), nil
		}
		w.commit(false)
		if w.failed != nil {
			return 0, w.failed
		}
	}
	if w.req.Method == http.MethodHead {
		return len(p), nil
	}
	if w.failed = writeFramed(o.bw, p, w.chunked); w.failed != nil {
		return 0, w.failed
	}
	return len(p), nil
}

// writeFramed writes p, the body's next bytes, to bw: as a chunk of its
// own when the body is chunked.
func writeFramed[T []byte | string](bw *bufio.Writer, p T, chunked bool) error {
	if chunked {
		writeInt(bw, int64(len(p)), 16)
		_, _ = bw.WriteString("\r\n")
	}
	var err error
	switch p := any(p).(type) {
	case []byte:
		_, err = bw.Write(p)
	case string:
		_, err = bw.WriteString(p)
	}
	if chunked && err == nil {
		_, err = bw.WriteString("\r\n")
	}
	return err
}

// Flush sends what was written, the header first.
func (w *h1response) Flush() { _ = w.FlushError() }

// FlushError sends what was written, the header first, and returns the
// connection's error, if any.
func (w *h1response) FlushError() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over {
		return errAnswerOver
	}
	if !w.wroteHeader {
		w.writeHeaderLocked(http.StatusOK)
	}
	if w.failed != nil {
		return w.failed
	}
	o := w.outLocked()
	if !w.committed {
		w.commit(false)
	}
	if w.failed == nil {
		w.failed = o.bw.Flush()
	}
	if w.failed == nil {
		// Nothing is held between flushes: a stream that waits holds no
		// buffer either.
		w.c.srv.putOut(o)
		w.out = nil
	}
	return w.failed
}

// SetReadDeadline sets the connection's read deadline (for
// http.ResponseController).
func (w *h1response) SetReadDeadline(t time.Time) error { return w.c.rwc.SetReadDeadline(t) }

// SetWriteDeadline sets the connection's write deadline (for
// http.ResponseController).
func (w *h1response) SetWriteDeadline(t time.Time) error { return w.c.rwc.SetWriteDeadline(t) }

// commit puts the header in the writer, with what of the body waited for
// it; final says the handler has returned, so that the body's length is
// known. w.mu is held.
func (w *h1response) commit(final bool) {
	w.committed = true
	w.continueMu.Lock()
	w.continueOK = false // no 100 after the header
	w.continueMu.Unlock()
	o := w.outLocked()
	h := w.header
	isHEAD := w.req.Method == http.MethodHead
	handlerClose := hasToken(h.Get("Connection"), "close")
	if handlerClose || w.c.srv.shuttingDown.Load() {
		w.closeAfter = true
	}
	if w.body != nil && !w.closeAfter {
		w.closeAfter = !w.body.drainForAnswer()
	}
	if _, ok := h["Transfer-Encoding"]; ok {
		h.Del("Transfer-Encoding") // the framing is ours
	}
	var length int64 = -1
	switch {
	case !w.bodyAllowed():
		if w.declared < 0 {
			h.Del("Content-Length")
		}
	case w.declared >= 0:
	case final && (!isHEAD || len(o.pre) > 0):
		length = int64(len(o.pre))
	case isHEAD:
	case w.req.ProtoAtLeast(1, 1):
		w.chunked = true
	default: // an HTTP/1.0 client: the body ends with the connection
		w.closeAfter = true
	}
	keepAlive10 := !w.closeAfter && w.req.ProtoMajor == 1 && w.req.ProtoMinor == 0
	bw := o.bw
	w.writeStatusLine(o, w.status)
	if err := h.Write(bw); err != nil {
		w.failed = err
		return
	}
	if _, ok := h["Date"]; !ok {
		_, _ = bw.WriteString("Date: ")
		_, _ = bw.Write(time.Now().UTC().AppendFormat(bw.AvailableBuffer(), http.TimeFormat))
		_, _ = bw.WriteString("\r\n")
	}
	if _, ok := h["Content-Type"]; !ok && len(o.pre) > 0 && w.bodyAllowed() {
		_, _ = bw.WriteString("Content-Type: ")
		_, _ = bw.WriteString(http.DetectContentType(o.pre))
		_, _ = bw.WriteString("\r\n")
	}
	if length >= 0 {
		_, _ = bw.WriteString("Content-Length: ")
		writeInt(bw, length, 10)
		_, _ = bw.WriteString("\r\n")
	}
	if w.chunked {
		_, _ = bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	if w.closeAfter && !handlerClose {
		_, _ = bw.WriteString("Connection: close\r\n")
	} else if keepAlive10 && h.Get("Connection") == "" {
		_, _ = bw.WriteString("Connection: keep-alive\r\n")
	}
	_, _ = bw.WriteString("\r\n")
	if len(o.pre) > 0 && !isHEAD {
		w.failed = writeFramed(bw, o.pre, w.chunked)
	}
	o.pre = o.pre[:0]
}

// writeStatusLine writes the status line of code.
func (w *h1response) writeStatusLine(o *h1out, code int) {
	bw := o.bw
	if w.req.ProtoMajor == 1 && w.req.ProtoMinor == 0 {
		_, _ = bw.WriteString("HTTP/1.0 ")
	} else {
		_, _ = bw.WriteString("HTTP/1.1 ")
	}
	writeInt(bw, int64(code), 10)
	_ = bw.WriteByte(' ')
	if text := http.StatusText(code); text != "" {
		_, _ = bw.WriteString(text)
	} else {
		_, _ = bw.WriteString("status code ")
		writeInt(bw, int64(code), 10)
	}
	_, _ = bw.WriteString("\r\n")
}

// writeInt writes v in base to bw, formatted in bw's own free space:
// nothing is allocated.
func writeInt(bw *bufio.Writer, v int64, base int) {
	_, _ = bw.Write(strconv.AppendInt(bw.AvailableBuffer(), v, base))
}

// finish ends the answer once the handler has returned: the header if it
// is not out yet, the end of a chunked body, everything flushed. It
// reports whether the connection may carry another request.
func (w *h1response) finish() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.wroteHeader {
		w.writeHeaderLocked(http.StatusOK)
	}
	o := w.outLocked()
	if !w.committed && w.failed == nil {
		w.commit(true)
	}
	if w.chunked && w.failed == nil {
		_, w.failed = o.bw.WriteString("0\r\n\r\n")
	}
	if w.declared >= 0 && w.written < w.declared && w.bodyAllowed() && w.req.Method != http.MethodHead {
		w.closeAfter = true // the client waits for bytes that will not come
	}
	if w.failed == nil {
		w.failed = o.bw.Flush()
	}
	w.over = true
	w.c.srv.putOut(o)
	w.out = nil
	if w.body != nil {
		w.body.end()
	}
	return w.failed == nil && !w.closeAfter
}

// unreadBody reports whether the client may still be sending a body no
// one will read.
func (w *h1response) unreadBody() bool {
	return w.body != nil && !w.body.sawEOF.Load()
}

// abandon ends an answer whose handler panicked: nothing more is sent.
func (w *h1response) abandon() {
	w.mu.Lock()
	w.over = true
	if w.out != nil {
		w.c.srv.putOut(w.out)
		w.out = nil
	}
	w.mu.Unlock()
	if w.body != nil {
		w.body.end()
	}
}

// writeContinue sends "100 Continue", unless the header is out already.
func (w *h1response) writeContinue() {
	w.continueMu.Lock()
	defer w.continueMu.Unlock()
	if !w.continueOK {
		return
	}
	w.continueOK = false
	_, _ = io.WriteString(w.c.rwc, "HTTP/1.1 100 Continue\r\n\r\n")
}

// h1body is the body of an [HTTP1Server] request: it sends the 100 an
// Expect asks for on its first read, starts the read ahead once it has
// been read whole, and fails once its handler has returned (its reader
// then serves the next request).
type h1body struct {
	c      *h1conn
	w      *h1response
	src    io.ReadCloser
	sawEOF atomic.Bool

	mu           sync.Mutex
	continueOwed bool // Expect: 100-continue, not answered yet (set before the handler runs)
	ended        bool // the handler returned
	closed       bool // the handler closed it
	draining     bool // the server reads what the handler left
	failed       bool // a read failed: what is left cannot be told from a next request
}

// errBodyFailed is what a read of a request body gets after one failed.
var errBodyFailed = errors.New("transport: the request body failed to read before")

func (b *h1body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended || b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	return b.readLocked(p)
}

// readLocked reads the body; b.mu is held.
func (b *h1body) readLocked(p []byte) (int, error) {
	if b.sawEOF.Load() {
		return 0, io.EOF
	}
	if b.continueOwed {
		b.continueOwed = false
		b.w.writeContinue()
	}
	if b.failed {
		return 0, errBodyFailed
	}
	n, err := b.src.Read(p)
	if err != nil && err != io.EOF {
		b.failed = true
	}
	if err == io.EOF {
		b.sawEOF.Store(true)
		if !b.draining {
			b.c.requestRead()
		}
	}
	return n, err
}

// Close makes later reads fail; what is left of the body is read, or the
// connection closed, after the answer.
func (b *h1body) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}

// drainForAnswer reads what the handler left of the body, at most
// h1DrainMax bytes, before the answer's header goes out (clients that
// send their whole request before reading the answer would otherwise
// wait forever), and reports whether the connection can carry the next
// request: the body was read to its end. A body whose 100 Continue was
// never sent is not read.
func (b *h1body) drainForAnswer() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sawEOF.Load() {
		return true
	}
	if b.continueOwed || b.failed {
		return false // the client waits for a 100 before it sends the body, or the body is broken
	}
	d := b.c.srv.ReadHeaderTimeout
	if d <= 0 {
		d = h1DrainWait
	}
	_ = b.c.rwc.SetReadDeadline(time.Now().Add(d))
	b.draining = true
	var buf [512]byte
	var err error
	for total := 0; total <= h1DrainMax && err == nil; {
		var n int
		n, err = b.readLocked(buf[:])
		total += n
	}
	b.draining = false
	if err != io.EOF {
		return false // the deadline stays: the connection closes after the answer
	}
	_ = b.c.rwc.SetReadDeadline(time.Time{})
	b.c.requestRead() // after the deadline is lifted
	return true
}

// end makes later reads fail: the handler has returned.
func (b *h1body) end() {
	b.mu.Lock()
	b.ended = true
	b.mu.Unlock()
}

// hasToken reports whether the comma-separated list v has token,
// ignoring case.
func hasToken(v, token string) bool {
	for v != "" {
		var item string
		item, v, _ = strings.Cut(v, ",")
		if strings.EqualFold(strings.TrimSpace(item), token) {
			return true
		}
	}
	return false
}
