package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// HTTPOptions configures the [http.Client] the HTTP transports share.
type HTTPOptions struct {
	// ConnectTimeout bounds dialing plus the TLS handshake; 0 means 10s.
	ConnectTimeout time.Duration
	// ReadTimeout bounds the wait for a response's headers once the request
	// is written; 0 means 120s. Reading a body is bounded separately, by the
	// transports' idle timeouts, because streams are long-lived.
	ReadTimeout time.Duration
	// KeepAlive turns TCP keepalive probes on: first probe after 60s idle,
	// then every 15s, the link declared dead after 4 unanswered probes (about
	// two minutes to notice a half-open connection). When false, keepalive
	// is off.
	KeepAlive bool
	// Getenv reads HTTP_PROXY, HTTPS_PROXY and NO_PROXY (or their lower-case
	// forms). nil means no proxy.
	Getenv func(string) string
	// TLSClientConfig is used for https connections when set.
	TLSClientConfig *tls.Config
}

// Defaults for [HTTPOptions].
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultReadTimeout    = 120 * time.Second
)

// TCP keepalive settings used when [HTTPOptions.KeepAlive] is on.
const (
	keepAliveIdle     = 60 * time.Second
	keepAliveInterval = 15 * time.Second
	keepAliveCount    = 4
)

// NewHTTPClient returns the client for the HTTP transports. It has no
// overall timeout (streams are long-lived); dialing and waiting for response
// headers are bounded by o. HTTP/2 is negotiated on https. Proxies come from
// o.Getenv, read once here. Redirects are followed only when they keep the
// method (307, 308): a 301, 302 or 303 would turn a POST into a GET and lose
// the message, so it is returned to the transport, which reports it as a
// status error. The client transports add their own rule about where a
// redirect may lead (see [StreamableClient.FollowRedirects]). On Linux its
// connections are read and written as [NewStdio] says.
func NewHTTPClient(o HTTPOptions) *http.Client {
	return &http.Client{
		Transport:     newHTTPTransport(o),
		CheckRedirect: keepMethodRedirects,
	}
}

// keepMethodRedirects follows at most 10 redirects, and only those that keep
// the request's method.
func keepMethodRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return http.ErrUseLastResponse
	}
	if len(via) > 0 && req.Method != via[0].Method {
		return http.ErrUseLastResponse
	}
	return nil
}

func newHTTPTransport(o HTTPOptions) *http.Transport {
	connect := o.ConnectTimeout
	if connect <= 0 {
		connect = DefaultConnectTimeout
	}
	read := o.ReadTimeout
	if read <= 0 {
		read = DefaultReadTimeout
	}
	return &http.Transport{
		Proxy:                 proxyFunc(o.Getenv),
		DialContext:           rawDial(newDialer(o).DialContext),
		TLSClientConfig:       o.TLSClientConfig,
		TLSHandshakeTimeout:   connect,
		ResponseHeaderTimeout: read,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// rawDial returns dial with what it dials read and written as
// rawConnOf does.
func rawDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return rawConnOf(c), nil
	}
}

// newDialer returns the dialer behind [NewHTTPClient].
func newDialer(o HTTPOptions) *net.Dialer {
	connect := o.ConnectTimeout
	if connect <= 0 {
		connect = DefaultConnectTimeout
	}
	d := &net.Dialer{Timeout: connect}
	if o.KeepAlive {
		d.KeepAliveConfig = net.KeepAliveConfig{
			Enable:   true,
			Idle:     keepAliveIdle,
			Interval: keepAliveInterval,
			Count:    keepAliveCount,
		}
	} else {
		d.KeepAlive = -1
	}
	return d
}

// outgoing is one HTTP request a client transport sends, with the
// bookkeeping needed to report how it ended: the caller's context, the
// request's own context (cancelled by an idle timeout or when the request
// is closed) and how far the request got.
type outgoing struct {
	ctx    context.Context // the caller's
	reqCtx context.Context
	cancel context.CancelCauseFunc
	req    *http.Request

	getConn atomic.Bool // net/http began looking for a connection
	gotConn atomic.Bool // net/http obtained one: the request may have left
}

// newOutgoing prepares a request with body (nil for none). Call close when
// done with the response.
func newOutgoing(ctx context.Context, method, target string, body []byte) (*outgoing, error) {
	x := &outgoing{ctx: ctx}
	x.reqCtx, x.cancel = context.WithCancelCause(ctx)
	trace := &httptrace.ClientTrace{
		GetConn: func(string) { x.getConn.Store(true) },
		GotConn: func(httptrace.GotConnInfo) { x.gotConn.Store(true) },
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(x.reqCtx, trace), method, target, rd)
	if err != nil {
		x.cancel(nil)
		return nil, &frame.SendError{Sent: false, Err: err}
	}
	x.req = req
	return x, nil
}

// header layers hs onto the request's headers in order, later layers
// replacing earlier ones name by name.
func (x *outgoing) header(hs ...http.Header) {
	for _, h := range hs {
		for k, v := range h {
			x.req.Header[textproto.CanonicalMIMEHeaderKey(k)] = v
		}
	}
}

// do sends the request with c, redirects judged by p. A non-nil error is
// already the outcome to report.
func (x *outgoing) do(c *http.Client, p redirectPolicy) (*http.Response, error) {
	resp, err := p.client(c).Do(x.req)
	if err != nil {
		return nil, x.fail(err)
	}
	return resp, nil
}

// body returns resp's body bounded by the idle timeout d (0 = none).
func (x *outgoing) body(resp *http.Response, d time.Duration) io.Reader {
	return newIdleReader(resp.Body, d, func() { x.cancel(&IdleTimeoutError{Idle: d}) })
}

// close ends the request, aborting whatever is still being read.
func (x *outgoing) close() { x.cancel(nil) }

// fail turns an error met while sending the request or reading its response
// into the outcome to report: the caller's context error when its context
// ended, a *RedirectError for a redirect not followed, else a
// *frame.SendError.
func (x *outgoing) fail(err error) error {
	if e := x.ctx.Err(); e != nil {
		return e
	}
	if re, ok := redirectRefused(err); ok {
		return re
	}
	var idle *IdleTimeoutError
	if errors.As(context.Cause(x.reqCtx), &idle) {
		return &frame.SendError{Sent: true, Err: idle}
	}
	var se *frame.SendError
	if errors.As(err, &se) {
		return err
	}
	return &frame.SendError{Sent: x.sent(err), Err: err}
}

// sent reports whether the request may have reached the server. The
// connection trace decides when net/http's transport ran: no connection
// obtained means nothing was written. Otherwise (a RoundTripper that does not
// trace) only errors that can only happen before sending count as unsent.
func (x *outgoing) sent(err error) bool {
	if x.gotConn.Load() {
		return true
	}
	if x.getConn.Load() {
		return false
	}
	return !beforeSending(err)
}

// beforeSending reports whether err can only come from setting up a
// connection: name resolution, dialing (directly or to a proxy), or the TLS
// handshake.
func beforeSending(err error) bool {
	var dns *net.DNSError
	var op *net.OpError
	var rec tls.RecordHeaderError
	var alert tls.AlertError
	var verify *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &dns),
		errors.As(err, &op) && (op.Op == "dial" || op.Op == "proxyconnect"),
		errors.As(err, &rec), errors.As(err, &alert), errors.As(err, &verify),
		errors.As(err, &unknownCA), errors.As(err, &host), errors.As(err, &invalid):
		return true
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "net/http: TLS handshake timeout" {
			return true
		}
	}
	return false
}

// statusBodyMax bounds the body a *frame.StatusError keeps, and the extra
// amount drained so the connection can be reused.
const statusBodyMax = 64 << 10

// statusError reads the start of an unwanted response into a
// *frame.StatusError. The caller closes the body.
func statusError(resp *http.Response, body io.Reader) *frame.StatusError {
	b, _ := io.ReadAll(io.LimitReader(body, statusBodyMax))
	_, _ = io.CopyN(io.Discard, body, statusBodyMax)
	return &frame.StatusError{Code: resp.StatusCode, Header: resp.Header, Body: b}
}

// drain reads a little of a body we have no use for, so the connection can
// be reused.
func drain(body io.Reader) { _, _ = io.CopyN(io.Discard, body, statusBodyMax) }

// readBody reads a whole body of at most max bytes. sizeHint is the
// Content-Length (-1 when unknown). A body over max fails with
// frame.ErrTooLarge.
func readBody(r io.Reader, sizeHint int64, max int) ([]byte, error) {
	b, _, err := readBodyCounted(r, sizeHint, max, nil)
	return b, err
}

// readBodyCounted is readBody with the buffer counted against budget (nil
// for none) once it reaches frame.BudgetMin: it returns what the body
// holds of the budget, which the caller releases once done with it, and
// fails with frame.ErrOverBudget, before growing the buffer, when the
// budget cannot take it. After an error nothing stays counted.
//
// A known length is trusted once the first bodyChunk bytes have arrived
// (one copy then), so that a large Content-Length alone costs little; an
// unknown one grows the buffer by doubling, so a large body is copied a
// bounded number of times.
func readBodyCounted(r io.Reader, sizeHint int64, max int, budget *frame.Budget) ([]byte, int64, error) {
	if sizeHint > int64(max) {
		return nil, 0, frame.ErrTooLarge
	}
	var buf []byte
	var held int64
	grow := func(n int) error {
		if c := int64(n); budget != nil && c >= frame.BudgetMin && c > held {
			if !budget.Acquire(c - held) {
				return frame.ErrOverBudget
			}
			held = c
		}
		grown := make([]byte, len(buf), n)
		copy(grown, buf)
		buf = grown
		return nil
	}
	fail := func(err error) ([]byte, int64, error) {
		budget.Release(held)
		return nil, 0, err
	}
	first := 512
	if sizeHint >= 0 {
		first = int(min(sizeHint+1, bodyChunk)) // room for the read that reports EOF
	}
	if err := grow(first); err != nil {
		return fail(err)
	}
	lr := io.LimitReader(r, int64(max)+1)
	for {
		if len(buf) == cap(buf) {
			next := 2 * cap(buf)
			if sizeHint >= 0 && int64(cap(buf)) < sizeHint+1 {
				next = int(sizeHint + 1)
			}
			if err := grow(min(next, max+1)); err != nil {
				return fail(err)
			}
		}
		k, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if len(buf) > max {
			return fail(frame.ErrTooLarge)
		}
		if err == io.EOF {
			return buf, held, nil
		}
		if err != nil {
			return fail(err)
		}
	}
}

// isEventStream reports whether a Content-Type names server-sent events.
func isEventStream(contentType string) bool {
	return strings.Contains(strings.ToLower(contentType), "text/event-stream")
}

// eachResponseID calls fn with the id of every response m carries: m itself
// when it is a response, its response elements when it is a batch (judged
// as frame judges a single message). fn returns false to stop.
func eachResponseID(m frame.Message, fn func(frame.ID) bool) {
	if m.Kind() != frame.Batch {
		if m.Kind().IsResponse() {
			fn(m.ID())
		}
		return
	}
	for el := range m.Elements() {
		if el.Kind().IsResponse() && !fn(el.ID()) {
			return
		}
	}
}

// answers reports whether m is, or is a batch holding, the response to id.
func answers(m frame.Message, id frame.ID) bool {
	found := false
	eachResponseID(m, func(r frame.ID) bool {
		found = r == id
		return !found
	})
	return found
}

// snippet returns the start of b for a log line, never the whole of a large
// payload.
func snippet(b []byte) string {
	const n = 128
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
