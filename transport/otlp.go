package transport

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Defaults of an [OTLPExporter], those of OpenTelemetry's batch span
// processor and OTLP exporter.
const (
	DefaultOTLPTimeout   = 10 * time.Second
	DefaultOTLPQueue     = 2048
	DefaultOTLPBatch     = 512
	DefaultOTLPInterval  = 5 * time.Second
	otlpMaxResponseBytes = 64 << 10
)

// OTLPConfig configures [NewOTLPExporter].
type OTLPConfig struct {
	// URL is the traces endpoint, the whole URL: http://host:4318/v1/traces.
	URL string
	// Header is sent with every POST (OTEL_EXPORTER_OTLP_HEADERS).
	Header http.Header
	// Timeout bounds each POST, its retry included; 0 means
	// DefaultOTLPTimeout.
	Timeout time.Duration
	// Client sends the POSTs; nil means a client of its own without
	// proxies from the environment.
	Client *http.Client
	// Resource is the resource's attributes, in pairs: key, value, … —
	// service.name among them.
	Resource []string
	// ScopeName and ScopeVersion name the instrumentation scope.
	ScopeName, ScopeVersion string
	// QueueSize bounds the spans waiting to be sent; a span beyond is
	// dropped and counted. 0 means DefaultOTLPQueue.
	QueueSize int
	// BatchSize is the most spans a POST carries; a full batch is sent at
	// once. 0 means DefaultOTLPBatch.
	BatchSize int
	// Interval is how long a span waits at most for its batch to fill;
	// 0 means DefaultOTLPInterval.
	Interval time.Duration
	// Logger receives a warning when spans cannot be sent (one until a
	// POST succeeds again); nil discards.
	Logger *slog.Logger
}

// OTLPExporter sends spans to an OpenTelemetry collector over OTLP/HTTP,
// encoded as http/protobuf (the protocol's binary encoding, written field
// by field: see otlpwire.go). ExportSpan only queues: a goroutine of the exporter sends
// batches, each POST bounded by the timeout and retried once at most (on
// a network error, 429, 502, 503 or 504); spans it cannot queue or send
// are dropped and counted ([OTLPExporter.Dropped]). [OTLPExporter.Shutdown]
// sends what is queued and ends the goroutine.
//
// Its methods are safe for concurrent use.
type OTLPExporter struct {
	cfg  OTLPConfig
	head []byte // the encoded Resource and scope, the same in every POST

	mu      sync.Mutex
	queue   []frame.Span
	closed  bool
	kick    chan struct{} // a batch is full
	stop    chan struct{} // closed by Shutdown
	done    chan struct{} // closed when the goroutine has ended
	ctx     context.Context
	cancel  context.CancelFunc // ends the POST under way: Shutdown's ctx ended
	dropped atomic.Uint64
	sent    atomic.Uint64
	failing atomic.Bool // a warning was logged; the next success ends it
}

// NewOTLPExporter returns an exporter sending to cfg.URL, its goroutine
// started; call Shutdown to end it.
func NewOTLPExporter(cfg OTLPConfig) *OTLPExporter {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultOTLPTimeout
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultOTLPQueue
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultOTLPBatch
	}
	cfg.BatchSize = min(cfg.BatchSize, cfg.QueueSize)
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultOTLPInterval
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, IdleConnTimeout: 90 * time.Second}}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	e := &OTLPExporter{
		cfg:  cfg,
		head: encodeOTLPHead(cfg),
		kick: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	go e.run()
	return e
}

// ExportSpan queues s for sending; it never blocks. A span that finds the
// queue full, or the exporter shut down, is dropped and counted.
func (e *OTLPExporter) ExportSpan(s frame.Span) {
	e.mu.Lock()
	if e.closed || len(e.queue) >= e.cfg.QueueSize {
		e.mu.Unlock()
		e.dropped.Add(1)
		return
	}
	e.queue = append(e.queue, s)
	full := len(e.queue) >= e.cfg.BatchSize
	e.mu.Unlock()
	if full {
		select {
		case e.kick <- struct{}{}:
		default:
		}
	}
}

// Dropped returns how many spans were dropped: the queue was full, the
// exporter shut down, or the collector could not take them.
func (e *OTLPExporter) Dropped() uint64 { return e.dropped.Load() }

// Sent returns how many spans a collector accepted.
func (e *OTLPExporter) Sent() uint64 { return e.sent.Load() }

// Shutdown stops taking spans, sends those queued (within ctx) and ends
// the exporter's goroutine. It returns ctx's error if ctx ended first,
// the spans not sent by then being dropped. Later calls wait for the
// first one's end.
func (e *OTLPExporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		close(e.stop)
	}
	e.mu.Unlock()
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
		e.cancel()
		<-e.done
		return ctx.Err()
	}
}

// run sends a batch when one is full, when the interval has passed, and
// the rest at shutdown.
func (e *OTLPExporter) run() {
	defer close(e.done)
	defer e.cancel()
	ctx := e.ctx
	t := time.NewTicker(e.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-e.kick:
		case <-e.stop:
			for e.flush(ctx) && ctx.Err() == nil {
			}
			e.mu.Lock()
			e.dropped.Add(uint64(len(e.queue))) // Shutdown's ctx ended first
			e.queue = nil
			e.mu.Unlock()
			return
		}
		for e.flush(ctx) {
		}
	}
}

// flush sends one batch of what is queued, and reports whether more than
// a batch was queued.
func (e *OTLPExporter) flush(ctx context.Context) (more bool) {
	e.mu.Lock()
	n := min(len(e.queue), e.cfg.BatchSize)
	batch := e.queue[:n:n]
	e.queue = e.queue[n:]
	if len(e.queue) == 0 {
		e.queue = nil // let the backing array go
	}
	more = len(e.queue) > 0
	e.mu.Unlock()
	if n == 0 {
		return false
	}
	if err := e.post(ctx, e.encode(batch)); err != nil {
		e.dropped.Add(uint64(n))
		if !e.failing.Swap(true) {
			e.cfg.Logger.Warn("cannot send spans to the OTLP collector; "+otlpAdvice(err), "url", e.cfg.URL, "err", err, "spans_dropped", e.Dropped())
		}
		return more
	}
	e.sent.Add(uint64(n))
	if e.failing.Swap(false) {
		e.cfg.Logger.Info("spans reach the OTLP collector again", "url", e.cfg.URL)
	}
	return more
}

// post sends body, once more at most when the first attempt may succeed
// on a second try, within the timeout.
func (e *OTLPExporter) post(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		var retry bool
		retry, err = e.postOnce(ctx, body)
		if err == nil || !retry || ctx.Err() != nil {
			break
		}
	}
	return err
}

func (e *OTLPExporter) postOnce(ctx context.Context, body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	for k, v := range e.cfg.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := e.cfg.Client.Do(req)
	if err != nil {
		return true, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, otlpMaxResponseBytes))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299:
		return false, nil
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusBadGateway,
		resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
		return true, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return false, errors.New("HTTP " + resp.Status)
}

// OTLP field numbers (opentelemetry-proto, trace/v1, common/v1,
// resource/v1, collector/trace/v1).
const (
	fExportResourceSpans = 1 // ExportTraceServiceRequest.resource_spans

	fResourceSpansResource = 1
	fResourceSpansScope    = 2

	fResourceAttributes = 1

	fScopeSpansScope = 1
	fScopeSpansSpans = 2

	fScopeName    = 1
	fScopeVersion = 2

	fSpanTraceID    = 1
	fSpanSpanID     = 2
	fSpanTraceState = 3
	fSpanParentID   = 4
	fSpanName       = 5
	fSpanKind       = 6
	fSpanStart      = 7
	fSpanEnd        = 8
	fSpanAttributes = 9
	fSpanStatus     = 15
	fSpanFlags      = 16

	fStatusMessage = 2
	fStatusCode    = 3

	fKeyValueKey   = 1
	fKeyValueValue = 2
	fAnyString     = 1

	otlpStatusOK    = 1
	otlpStatusError = 2
	// spanFlagsHasRemote says that the span's flags tell whether its
	// parent is remote (SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK).
	spanFlagsHasRemote = 0x100
	spanFlagsIsRemote  = 0x200
)

// encodeOTLPHead encodes what every POST repeats: the Resource (field 1
// of ResourceSpans) and the scope (field 1 of ScopeSpans, kept apart).
func encodeOTLPHead(cfg OTLPConfig) []byte {
	var res []byte
	for i := 0; i+1 < len(cfg.Resource); i += 2 {
		res = appendKeyValue(res, fResourceAttributes, cfg.Resource[i], cfg.Resource[i+1])
	}
	var b []byte
	b = appendTag(b, fResourceSpansResource, wireBytes)
	b = appendBytes(b, res)
	return b
}

// encode returns the ExportTraceServiceRequest carrying spans.
func (e *OTLPExporter) encode(spans []frame.Span) []byte {
	var scope []byte
	scope = appendString(scope, fScopeName, e.cfg.ScopeName)
	scope = appendString(scope, fScopeVersion, e.cfg.ScopeVersion)
	var ss []byte
	ss = appendTag(ss, fScopeSpansScope, wireBytes)
	ss = appendBytes(ss, scope)
	var sp []byte
	for i := range spans {
		sp = appendSpan(sp[:0], &spans[i])
		ss = appendTag(ss, fScopeSpansSpans, wireBytes)
		ss = appendBytes(ss, sp)
	}
	rs := append([]byte(nil), e.head...)
	rs = appendTag(rs, fResourceSpansScope, wireBytes)
	rs = appendBytes(rs, ss)
	var b []byte
	b = appendTag(b, fExportResourceSpans, wireBytes)
	return appendBytes(b, rs)
}

// appendSpan appends the fields of one Span message.
func appendSpan(b []byte, s *frame.Span) []byte {
	b = appendTag(b, fSpanTraceID, wireBytes)
	b = appendBytes(b, s.TraceID[:])
	b = appendTag(b, fSpanSpanID, wireBytes)
	b = appendBytes(b, s.SpanID[:])
	b = appendString(b, fSpanTraceState, s.TraceState)
	if s.Parent != ([8]byte{}) {
		b = appendTag(b, fSpanParentID, wireBytes)
		b = appendBytes(b, s.Parent[:])
	}
	b = appendString(b, fSpanName, s.Name)
	b = appendTag(b, fSpanKind, wireVarint)
	b = appendVarint(b, uint64(s.Kind))
	b = appendTag(b, fSpanStart, wireFixed64)
	b = appendFixed64(b, uint64(s.Start.UnixNano()))
	b = appendTag(b, fSpanEnd, wireFixed64)
	b = appendFixed64(b, uint64(s.End.UnixNano()))
	for i := 0; i+1 < len(s.Attrs); i += 2 {
		b = appendKeyValue(b, fSpanAttributes, s.Attrs[i], s.Attrs[i+1])
	}
	var st []byte
	st = appendString(st, fStatusMessage, s.Message)
	st = appendTag(st, fStatusCode, wireVarint)
	if s.Error {
		st = appendVarint(st, otlpStatusError)
	} else {
		st = appendVarint(st, otlpStatusOK)
	}
	b = appendTag(b, fSpanStatus, wireBytes)
	b = appendBytes(b, st)
	flags := uint32(s.Flags) | spanFlagsHasRemote
	if s.Parent != ([8]byte{}) && s.Kind == frame.SpanServer {
		flags |= spanFlagsIsRemote // serve's parent is the caller's span
	}
	b = appendTag(b, fSpanFlags, wireFixed32)
	return appendFixed32(b, flags)
}

// appendKeyValue appends field num as a KeyValue of a string value.
func appendKeyValue(b []byte, num wireNumber, key, value string) []byte {
	var any []byte
	any = appendTag(any, fAnyString, wireBytes)
	any = appendStr(any, value)
	var kv []byte
	kv = appendString(kv, fKeyValueKey, key)
	kv = appendTag(kv, fKeyValueValue, wireBytes)
	kv = appendBytes(kv, any)
	b = appendTag(b, num, wireBytes)
	return appendBytes(b, kv)
}

// appendString appends field num unless s is empty (proto3's default).
func appendString(b []byte, num wireNumber, s string) []byte {
	if s == "" {
		return b
	}
	b = appendTag(b, num, wireBytes)
	return appendStr(b, s)
}

// otlpAdvice says what to do about a POST to the collector that failed
// with err, naming OpenTelemetry's standard variables.
func otlpAdvice(err error) string {
	var unknown x509.UnknownAuthorityError
	var remote *net.OpError
	switch {
	case errors.As(err, &unknown):
		return "its certificate is signed by an authority this machine does not trust: name the PEM file of its CA in OTEL_EXPORTER_OTLP_CERTIFICATE"
	case errors.As(err, &remote) && remote.Op == "remote error" && wantsClientCertificate(remote.Err.Error()):
		return "it wants a client certificate: name its PEM files in OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY"
	}
	return "check OTEL_EXPORTER_OTLP_ENDPOINT"
}

// wantsClientCertificate reports whether a TLS alert from the server says
// it wants a client certificate it did not get (RFC 8446 section 6.2).
// crypto/tls reports a peer's alert as a net.OpError "remote error"
// around a value of an unexported type, so only its text tells it.
func wantsClientCertificate(alert string) bool {
	switch alert {
	case "tls: bad certificate", "tls: certificate required":
		return true
	}
	return false
}
