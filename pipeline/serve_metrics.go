// The serve pipeline's metrics: what AdminHandler's /metrics shows, in the
// Prometheus text format, kept with github.com/VictoriaMetrics/metrics
// (small, nothing registered or started at init that we use, a Set per
// server rather than a global registry).

package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
	"github.com/mcp-stdio/mcp-stdio/transport"
)

// The eras a request is counted under, as indexes (the era label's value
// is eraSession, eraModern or eraSSE).
const (
	eraIdxSession = iota // Streamable HTTP, session era
	eraIdxModern         // 2026-07-28
	eraIdxSSE            // HTTP+SSE
	numEras
)

// eraLabel returns the era label's value for the era of index i.
func eraLabel(i int) string {
	switch i {
	case eraIdxModern:
		return eraModern
	case eraIdxSSE:
		return eraSSE
	}
	return eraSession
}

// eraIndex returns the index of era.
func eraIndex(era string) int {
	switch era {
	case eraModern:
		return eraIdxModern
	case eraSSE:
		return eraIdxSSE
	}
	return eraIdxSession
}

// durationBuckets are the upper bounds (seconds) of the request duration
// histogram: from a ping answered at once to a tool call of minutes.
func durationBuckets() []float64 {
	return []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}
}

// Children's states (the state label of mcp_stdio_children).
const (
	childStarting  int32 = iota // started, nothing written yet
	childRunning                // it has written a message
	childStopping               // the gateway is ending it
	childGone                   // exited (not counted)
	numChildStates = childGone
)

// childStateLabel returns the state label's value for state st.
func childStateLabel(st int32) string {
	switch st {
	case childStarting:
		return "starting"
	case childRunning:
		return "running"
	}
	return "stopping"
}

// numChildExits is the number of transport.ChildExit values.
const numChildExits = int(transport.ChildFailed) + 1

// serveMetrics holds a Server's metrics. Counters that have a label are
// made once (or, for the requests, on their first use and kept), so that
// counting builds no string.
type serveMetrics struct {
	families []family
	server   string // ServeConfig.Name: the server label, when set

	requests *metrics.Set
	reqs     [numEras][mw.NumMetricMethods][mw.NumMetricOutcomes]atomic.Pointer[metrics.Counter]
	duration [numEras]*metrics.PrometheusHistogram
	bytesIn  *metrics.Counter
	bytesOut *metrics.Counter
	exits    [numChildExits]*metrics.Counter
	notFound *metrics.Counter
	refusals map[int]*metrics.Counter // by status; 0 for the others

	children [numChildStates]atomic.Int64
	parked   atomic.Int64
}

// family is one metric family: its HELP and TYPE lines, then its series.
type family struct {
	name, help, typ string
	set             *metrics.Set
}

// newServeMetrics makes the metrics of s; the gauges read s when scraped.
func newServeMetrics(s *Server) *serveMetrics {
	m := &serveMetrics{server: s.cfg.Name}
	series := m.series
	add := func(name, typ, help string) *metrics.Set {
		set := metrics.NewSet()
		m.families = append(m.families, family{name: name, help: help, typ: typ, set: set})
		return set
	}
	m.requests = add("mcp_stdio_requests_total", "counter", "JSON-RPC requests that reached the pipeline, by era, method (other for methods outside a fixed list) and outcome (ok, error, refused, failed, cancelled).")
	set := add("mcp_stdio_request_duration_seconds", "histogram", "Time from a request's arrival to its answer being sent, by era.")
	for era := range numEras {
		m.duration[era] = set.NewPrometheusHistogramExt(series("mcp_stdio_request_duration_seconds", `era="`+eraLabel(era)+`"`), durationBuckets())
	}
	add("mcp_stdio_sessions_active", "gauge", "Live sessions (session era and HTTP+SSE), each with its server process.").
		NewGauge(series("mcp_stdio_sessions_active", ""), func() float64 { return float64(s.sessions.Len()) })
	set = add("mcp_stdio_children", "gauge", "Server processes alive, by state: starting (nothing written yet), running, stopping (being ended by the gateway).")
	for st := range numChildStates {
		set.NewGauge(series("mcp_stdio_children", `state="`+childStateLabel(st)+`"`), func() float64 { return float64(m.children[st].Load()) })
	}
	set = add("mcp_stdio_child_exits_total", "counter", "Server processes that ended, by reason: stopped (by the gateway), exited (on their own, status 0), failed (on their own, error status or signal).")
	for e := range numChildExits {
		reason := transport.ChildExit(e).String()
		m.exits[e] = set.NewCounter(series("mcp_stdio_child_exits_total", `reason="`+reason+`"`))
	}
	m.notFound = add("mcp_stdio_session_not_found_total", "counter", "Requests answered 404 because their session id names no session here (Streamable HTTP and HTTP+SSE); rising means misrouting or clients of a restarted replica.").
		NewCounter(series("mcp_stdio_session_not_found_total", ""))
	set = add("mcp_stdio_http_refusals_total", "counter", "HTTP requests answered with an error status before they reached the pipeline (a foreign Origin or Host, no or a wrong token, an unknown path, a body over the cap, an OAuth endpoint's error), by status (other for statuses outside a fixed list); rising means a client or a proxy is misconfigured.")
	// The statuses serve's guards and OAuth endpoints answer with.
	refusalStatuses := []int{
		http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
		http.StatusMethodNotAllowed, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType,
		http.StatusTooManyRequests, http.StatusServiceUnavailable,
	}
	m.refusals = make(map[int]*metrics.Counter, len(refusalStatuses)+1)
	for _, code := range refusalStatuses {
		m.refusals[code] = set.NewCounter(series("mcp_stdio_http_refusals_total", `status="`+strconv.Itoa(code)+`"`))
	}
	m.refusals[0] = set.NewCounter(series("mcp_stdio_http_refusals_total", `status="other"`))
	add("mcp_stdio_parked_calls", "gauge", "2026-07-28 calls waiting for their client's retry with the input a session-era server asked for.").
		NewGauge(series("mcp_stdio_parked_calls", ""), func() float64 { return float64(m.parked.Load()) })
	set = add("mcp_stdio_bytes_total", "counter", "Message bytes received in requests (in) and sent in answers and streams (out).")
	m.bytesIn = set.NewCounter(series("mcp_stdio_bytes_total", `direction="in"`))
	m.bytesOut = set.NewCounter(series("mcp_stdio_bytes_total", `direction="out"`))
	add("mcp_stdio_draining", "gauge", "1 while the server drains for shutdown, else 0.").
		NewGauge(series("mcp_stdio_draining", ""), func() float64 {
			if s.Draining() {
				return 1
			}
			return 0
		})
	return m
}

// series returns the name of a series of metric name with labels (k="v"
// pairs, comma-separated, or ""), the server label first when the server
// has a name (ServeConfig.Name).
func (m *serveMetrics) series(name, labels string) string {
	if m.server != "" {
		labels = strings.TrimSuffix(`server="`+m.server+`",`+labels, ",")
	}
	if labels == "" {
		return name
	}
	return name + "{" + labels + "}"
}

// WritePrometheus writes every metric to w in the Prometheus text format.
func (m *serveMetrics) WritePrometheus(w io.Writer) { writePrometheus(w, m) }

// writePrometheus writes the metrics of several servers (those [NewMulti]
// publishes together, each with its server label) to w in the Prometheus
// text format: each family's HELP and TYPE once, then its series of every
// server.
func writePrometheus(w io.Writer, ms ...*serveMetrics) {
	if len(ms) == 0 {
		return
	}
	for i, f := range ms[0].families {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.typ)
		for _, m := range ms {
			m.families[i].set.WritePrometheus(w)
		}
	}
}

// refused counts a request answered with status before the pipeline.
func (m *serveMetrics) refused(status int) {
	c := m.refusals[status]
	if c == nil {
		c = m.refusals[0]
	}
	c.Inc()
}

// era returns the mw.RequestMetrics of requests of era.
func (m *serveMetrics) era(era int) mw.RequestMetrics { return eraMetrics{m: m, era: era} }

// eraMetrics counts the requests of one era.
type eraMetrics struct {
	m   *serveMetrics
	era int
}

func (e eraMetrics) Request(method mw.MetricMethod, outcome mw.MetricOutcome, took time.Duration) {
	m := e.m
	slot := &m.reqs[e.era][method][outcome]
	c := slot.Load()
	if c == nil {
		c = m.requests.GetOrCreateCounter(m.series("mcp_stdio_requests_total", fmt.Sprintf(`era=%q,method=%q,outcome=%q`, eraLabel(e.era), method.String(), outcome.String())))
		slot.Store(c)
	}
	c.Inc()
	m.duration[e.era].Update(took.Seconds())
}

func (e eraMetrics) Bytes(in, out int) {
	if in > 0 {
		e.m.bytesIn.Add(in)
	}
	if out > 0 {
		e.m.bytesOut.Add(out)
	}
}

// childTrack follows one child through its states for the children
// gauge, the exits counter and the readiness of starts: its start has
// succeeded once it writes a message; it has failed when it ends on its
// own before that.
type childTrack struct {
	s     *Server
	state atomic.Int32
	sink  mw.Handler
	own   atomic.Bool // it ended on its own (not stopped by the gateway)
}

// endedOnItsOwn reports whether the child has ended, and not because the
// gateway stopped it.
func (t *childTrack) endedOnItsOwn() bool { return t.own.Load() }

// newChildTrack counts a child about to be started, whose messages go to
// sink.
func (s *Server) newChildTrack(sink mw.Handler) *childTrack {
	t := &childTrack{s: s, sink: sink}
	s.metrics.children[childStarting].Add(1)
	return t
}

// move takes the child from state from to state to, if it is in from.
func (t *childTrack) move(from, to int32) bool {
	if !t.state.CompareAndSwap(from, to) {
		return false
	}
	t.s.metrics.children[from].Add(-1)
	if to < numChildStates {
		t.s.metrics.children[to].Add(1)
	}
	return true
}

// Handle passes a message of the child on; its first one marks the
// child running and its start a success.
func (t *childTrack) Handle(ctx context.Context, m frame.Message) error {
	if t.state.Load() == childStarting && t.move(childStarting, childRunning) {
		t.s.ready.record(nil)
	}
	return t.sink.Handle(ctx, m)
}

// stopping marks the child as being ended by the gateway.
func (t *childTrack) stopping() {
	for {
		st := t.state.Load()
		if st == childStopping || st == childGone || t.move(st, childStopping) {
			return
		}
	}
}

// failedStart uncounts a child that could not be started.
func (t *childTrack) failedStart(err error) {
	t.move(childStarting, childGone)
	t.s.ready.record(err)
}

// exited counts the child's end; one that ended on its own before it
// wrote anything failed to start.
func (t *childTrack) exited(e transport.ChildExit, status error) {
	st := t.state.Swap(childGone)
	if st < numChildStates {
		t.s.metrics.children[st].Add(-1)
	}
	t.s.metrics.exits[e].Inc()
	t.own.Store(e != transport.ChildStopped)
	if st == childStarting && e != transport.ChildStopped {
		why := "the server process exited before it answered"
		if status != nil {
			why += " (" + status.Error() + ")"
		}
		t.s.ready.record(errors.New(why))
	}
}
