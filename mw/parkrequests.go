package mw

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// Bounds and defaults of [ParkChildRequests].
const (
	// DefaultStateTTL is how long a parked call waits for the client's
	// retry, and how long the requestState it was given stays valid.
	DefaultStateTTL = 10 * time.Minute
	// DefaultParkRounds is the most input_required results one call gets;
	// the child's next request fails the call.
	DefaultParkRounds = 16
	// maxParkedInputs bounds the child's requests parked for one call.
	maxParkedInputs = 64
)

// The methods of the child's requests a 2026-07-28 client can answer as
// input requests.
const (
	methodSampling    = mcp.MethodCreateMessage
	methodElicitation = mcp.MethodElicit
	methodRootsList   = mcp.MethodRootsList
)

// ParkOptions configures [ParkChildRequests].
type ParkOptions struct {
	// StateKey seals the requestState handed to clients (AES-256-GCM);
	// it must be StateKeySize (32) bytes. Replicas of a gateway that share
	// clients share it. See [ParseStateKey] and [NewStateKey].
	StateKey []byte
	// ReplicaID names this gateway process among replicas sharing
	// StateKey: a requestState is honoured only by the replica that
	// issued it, since only that one holds the parked call. The caller
	// makes one per process ([NewReplicaID]).
	ReplicaID string
	// StateTTL is how long a parked call waits for the client's retry
	// (and how long its requestState is valid); 0 means
	// [DefaultStateTTL].
	StateTTL time.Duration
	// MaxRounds is the most input_required results one call gets; 0
	// means [DefaultParkRounds].
	MaxRounds int
	// Gather is how long the first request the child asks for a running
	// call waits for more before the call's input_required result goes
	// out, so that requests the child sends together (go-sdk sends the
	// input requests of one round at once) reach the client in one round.
	// 0 sends each round at once.
	Gather time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// AfterFunc runs f once d has passed, unless the returned stop is
	// called first (which reports whether it stopped it); it times out a
	// parked call and ends a Gather. nil means time.AfterFunc.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
	// AwaitRetryAnswers makes a retry's Handle return only once an answer
	// under the retry's id has been handed client-bound, for a chain whose
	// Handle of a request returns once its answer was delivered (the
	// relay's; see the package documentation). Without it, the one of
	// serve's pooled children, a retry's Handle returns once what it
	// decided was sent, and the call's outcome follows when the child
	// answers.
	AwaitRetryAnswers bool
	// Parked, when set, is told of every call that begins (+1) or ends
	// (-1) waiting for its client's retry, so that the caller can count
	// the calls parked across all children. It is called under the
	// stage's lock and must not block.
	Parked func(delta int)
	// Shared, when set, says that the child serves many clients (serve's
	// pooled child) and answers, in the gateway's name, the child's
	// requests no call can be said to have caused. A request is then
	// given to a call only when that call is the only one running on the
	// child, or, with none running, the only one parked; the child's
	// first roots/list never is. See
	// [ParkChildRequests]. nil (the relay, whose server has one client)
	// keeps the rules for one client.
	Shared *ChildAnswers
	// Logger receives a warning when the child asks for input that could
	// belong to several calls, and debug lines; nil discards.
	Logger *slog.Logger
}

// ParkChildRequests returns the stage that lets a 2026-07-28 client answer
// the requests a session-era child sends during a call (sampling,
// elicitation, roots) the 2026-07-28 way: multi round-trip requests
// (SEP-2322). It sits in the entry chain of serve's session-era children,
// below the router (every request it sees has a minted id unique on the
// child) and above LocalDiscover and StripModernMeta (it reads the _meta
// of the client's request); see the package documentation. It panics when
// o.StateKey is not StateKeySize bytes.
//
// Server-bound, a tools/call, prompts/get or resources/read whose
// params._meta["io.modelcontextprotocol/clientCapabilities"] declares
// sampling, elicitation or roots is a call it tracks, with those
// capabilities and the principal ([Conn.Principal] of [ConnOf]); it goes
// on to the child unchanged. Client-bound, the child's requests are
// answered here, never passed on:
//
//   - ping: {} to the child.
//   - sampling/createMessage, elicitation/create, roots/list, with Shared
//     (a child many clients share): given to a call only when serve can
//     tell that call caused it. That is when it is the only call
//     (tools/call, prompts/get or resources/read) running on the child
//     — written to it, or being written, not answered or cancelled yet,
//     and not parked — when the request arrives, or, when none runs, the
//     only parked one (a parked call's question is with its client, and
//     a child waiting for that answer asks nothing more on its behalf
//     unless it asked for several things at once, see Gather); and the
//     request is not the child's first roots/list, which asks for the
//     roots of its connection (see [ChildAnswers.FirstRoots]). Requests
//     the child sends while the gateway performs its handshake never
//     reach this stage ([ChildAnswers.Handshake]). A request given to a
//     call whose client declared the capability is parked as below; one
//     whose client did not gets what such a client would give: for an
//     elicitation {"action":"decline"}, for sampling an error (-32600),
//     for roots/list Shared's roots. Every other request — none in
//     flight, several running, several parked and none running, or the
//     first roots/list — is answered by Shared
//     ([ChildAnswers.Answer]: roots/list with the roots configured for
//     the child, none by default; sampling and elicitation with an error
//     saying no client can answer them) and logged, once per method at
//     Info or Warn, after that at Debug. No client's roots reach the
//     child but through a call of that client's alone.
//   - sampling/createMessage, elicitation/create, roots/list, without
//     Shared (one client): given to the one tracked call, not finished,
//     whose client declared that capability (URL elicitation needs elicitation.url, form elicitation
//     elicitation.form or an empty elicitation, sampling with tools
//     sampling.tools). Calls running on the child (not parked) come
//     first: while one runs, the request is taken to be one of theirs,
//     and a parked call takes it only when none runs, since a child
//     waiting for the answers of a parked call asks for nothing more on
//     its behalf unless it asked for several things at once (see Gather).
//     With no such call the child gets what a client without the
//     capability would give: for an elicitation the result
//     {"action":"decline"}, for roots/list no roots ({"roots":[]}), for
//     sampling an error (-32600); with several, nothing tells which call the
//     child means: the child gets an error (-32603) and the log one
//     warning. Given to a call, the request is parked: the call gets a
//     response under its id, as the client sees it (at once, or Gather
//     after the first request of the round, with the ones that came
//     meanwhile): {"resultType":"input_required","inputRequests":
//     {"input-<n>":{"method":…,"params":…}},"requestState":"<sealed>"},
//     params byte for byte, with every request parked for the call and
//     not answered yet. A request that arrives while the call is already
//     parked waits for the next round.
//   - any other request: -32601 to the child.
//
// The call keeps running on the child; the child's response to it is held
// until the client's retry. The retry is the call again under a new id,
// with params.inputResponses (keyed like inputRequests) and
// params.requestState, which is sealed with StateKey (AES-256-GCM) and
// binds the principal, an expiry StateTTL ahead, the request
// ([requestHash]: method, name or uri, and arguments, canonically), the
// parked round, and ReplicaID. A retry whose state does not open, or
// that comes from another principal, too late, to another replica, for
// another request, for a round already answered or a call abandoned, or
// to a child that has since ended, is refused with -32602 and HTTP 400
// ([Refuse]) naming the cause, and never reaches the child: the tool never
// runs twice. A retry that holds is not passed to the
// child either: each
// parked request with an answer among inputResponses (an object) gets it
// as its result; the ones left are asked again at once in a new round;
// extra answers are ignored. From then on the retry's id is the call's:
// the child's next request makes a new round under it, and the child's
// response reaches the client under it. notifications/progress for the
// call's progressToken is pointed at the retry's progressToken, if it has
// one. More than MaxRounds rounds fail the call: the id waiting gets
// -32603, the call is cancelled on the child, its parked requests get
// errors.
//
// A call parked for StateTTL with no retry is abandoned: cancelled on the
// child (notifications/cancelled naming it), its parked requests answered
// with an error, and forgotten. A notifications/cancelled (server-bound)
// naming an id the call has already answered with input_required is
// swallowed: the client may still retry, and its stream ending after an
// input_required is normal. One naming the retry that waits cancels the
// call on the child. When the child's connection ends ([Conn.OnClose],
// registered for the first message's Conn), everything is dropped and
// nothing more is answered; a retry for a call that ran there is refused.
//
// In the relay the call's own Handle does not return once the request is
// written: it runs until the server's response was delivered (held, or
// under the retry waiting), long after the call was answered
// input_required. A Go error it returns then fails the retry waiting, if
// one is (its Handle returns that error); [frame.ErrAnswerElsewhere] (the
// server will answer on another stream) keeps the call, whose outcome
// still reaches the retry. With AwaitRetryAnswers a retry's Handle waits
// for an answer under its id: the call's outcome or its next round (its
// Handle returns nil), the call's failure (that error), a cancel
// ([frame.ErrCancelled]), the connection's end (its cause), or ctx's end
// (ctx's cause).
func ParkChildRequests(o ParkOptions) Middleware {
	sealer, err := newStateSealer(o.StateKey)
	if err != nil {
		panic(err.Error())
	}
	if o.StateTTL <= 0 {
		o.StateTTL = DefaultStateTTL
	}
	if o.MaxRounds <= 0 {
		o.MaxRounds = DefaultParkRounds
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.AfterFunc == nil {
		o.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	return func(next Duplex) Duplex {
		p := &parker{
			next:     next,
			o:        o,
			seal:     sealer,
			log:      loggerOrDiscard(o.Logger),
			replica:  sha256.Sum256([]byte(o.ReplicaID)),
			byChild:  make(map[frame.ID]*parkedCall),
			byID:     make(map[frame.ID]*parkedCall),
			byHandle: make(map[uint64]*parkedCall),
			byToken:  make(map[string]*parkedCall),
		}
		_, _ = rand.Read(p.instance[:])
		return Duplex{ToServer: HandlerFunc(p.toServer), ToClient: HandlerFunc(p.toClient)}
	}
}

// parker is one child's ParkChildRequests.
type parker struct {
	next     Duplex
	o        ParkOptions
	seal     *stateSealer
	log      *slog.Logger
	replica  [32]byte // sha256 of o.ReplicaID
	instance [8]byte  // this stage among the children's, in handles

	mu      sync.Mutex
	conn    *Conn // whose OnClose is registered; nil before
	closed  bool
	warned  bool   // the ambiguity warning was logged
	handles uint64 // the last handle number issued
	// byChild holds the tracked calls by the id the child knows; byID by
	// every id the call has answered or will answer (the child's and each
	// retry's); byHandle the parked ones by their round's handle; byToken
	// by the raw progressToken the child knows, for calls that have one.
	byChild  map[frame.ID]*parkedCall
	byID     map[frame.ID]*parkedCall
	byHandle map[uint64]*parkedCall
	byToken  map[string]*parkedCall
}

// parkedCall is a tracked call.
type parkedCall struct {
	childID   frame.ID
	caps      string // raw clientCapabilities of the latest request
	principal [32]byte
	hash      [32]byte
	ids       []frame.ID // the retries' ids
	// waiting is the id the call's outcome answers now: the child's id,
	// then a retry's; "" while the call is parked.
	waiting frame.ID
	handle  uint64      // while parked: its round's handle; 0 otherwise
	stop    func() bool // while parked: stops the abandon timer
	// gather stops the Gather timer while the call's round is gathering;
	// nil otherwise.
	gather  func() bool
	pending []parkedInput
	keys    int           // the last input-<n> given
	held    frame.Message // the child's response, while parked
	rounds  int
	// childToken is the raw progressToken the child knows ("" for none),
	// token the one of the retry waiting.
	childToken, token string
	// waiter is the Handle of the retry waiting, with AwaitRetryAnswers,
	// until something is handed client-bound under its id; nil otherwise.
	waiter *retryWaiter
	// elsewhere is set once the call's own Handle returned
	// frame.ErrAnswerElsewhere: its outcome comes on another stream.
	elsewhere bool
}

// retryWaiter is a retry's Handle waiting for its answer.
type retryWaiter struct {
	done chan struct{} // closed once err is set
	err  error         // nil: the answer was handed client-bound
}

// parkedInput is a request of the child parked for a call.
type parkedInput struct {
	key    string
	id     frame.ID
	method string
	params string // raw; "" when the request had none
}

// parkSends are the messages a step decided to send, once the lock is
// released: to the child first, then to the client; then the retries
// waiting are released.
type parkSends struct {
	child, client []frame.Message
	release       []*retryWaiter
}

// releaseLocked adds c's waiter, if any, to the retries s releases, with
// err (nil: what s hands client-bound answers it).
func (s *parkSends) releaseLocked(c *parkedCall, err error) {
	if c.waiter == nil {
		return
	}
	c.waiter.err = err
	s.release = append(s.release, c.waiter)
	c.waiter = nil
}

func (p *parker) flush(ctx context.Context, s parkSends) error {
	for _, m := range s.child {
		if err := p.next.ToServer.Handle(ctx, m); err != nil {
			p.log.Debug("a message to the child was not delivered", "id", m.ID().String(), "err", err)
		}
	}
	var first error
	for _, m := range s.client {
		if err := p.next.ToClient.Handle(ctx, m); err != nil && first == nil {
			first = err
		}
	}
	for _, w := range s.release {
		close(w.done)
	}
	return first
}

// parkEligible reports whether method may answer input_required.
func parkEligible(method string) bool { return mcp.ClassOf(method).Has(mcp.TakesInput) }

// watch registers the OnClose of ctx's Conn, once.
func (p *parker) watch(ctx context.Context) {
	c := ConnOf(ctx)
	if c == nil {
		return
	}
	p.mu.Lock()
	if p.conn != nil {
		p.mu.Unlock()
		return
	}
	p.conn = c
	p.mu.Unlock()
	c.OnClose(func(error) { p.close() })
}

// parked reports a change of the calls parked to o.Parked; called with
// p.mu held.
func (p *parker) parked(delta int) {
	if p.o.Parked != nil && delta != 0 {
		p.o.Parked(delta)
	}
}

// close drops everything: the child is gone.
func (p *parker) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	cause := errors.New("the server's connection ended")
	if p.conn != nil && p.conn.Err() != nil {
		cause = p.conn.Err()
	}
	for _, c := range p.byChild {
		if c.stop != nil {
			c.stop()
		}
		c.stopGather()
		if w := c.waiter; w != nil {
			c.waiter = nil
			w.err = cause
			close(w.done)
		}
	}
	clear(p.byChild)
	clear(p.byID)
	p.parked(-len(p.byHandle))
	clear(p.byHandle)
	clear(p.byToken)
}

// principalOf returns who the client of ctx's request is.
func principalOf(ctx context.Context) string {
	if c := ConnOf(ctx); c != nil {
		return c.Principal()
	}
	return PrincipalOf(ctx)
}

func (p *parker) toServer(ctx context.Context, m frame.Message) error {
	p.watch(ctx)
	switch {
	case m.Kind() == frame.Request && parkEligible(m.Method()):
		if m.Get("params.requestState").Exists() || m.Get("params.inputResponses").Exists() {
			return p.retry(ctx, m)
		}
		p.track(ctx, m)
		err := p.next.ToServer.Handle(ctx, m)
		if err != nil {
			var s parkSends
			p.mu.Lock()
			if c := p.byChild[m.ID()]; c != nil {
				if errors.Is(err, frame.ErrAnswerElsewhere) {
					c.elsewhere = true
				} else {
					p.dropLocked(c)
				}
				s.releaseLocked(c, err)
			}
			p.mu.Unlock()
			_ = p.flush(ctx, s)
		}
		return err
	case m.Kind() == frame.Notification && m.Method() == cancelMethod:
		return p.cancel(ctx, m)
	}
	return p.next.ToServer.Handle(ctx, m)
}

// capsPath is where a 2026-07-28 request declares its client's
// capabilities.
var capsPath = "params._meta." + gjson.Escape(MetaClientCapabilities)

// track starts tracking call m when its client declared a capability the
// child may use; with Shared, every call, to know which are in flight.
func (p *parker) track(ctx context.Context, m frame.Message) {
	caps := m.Get(capsPath)
	if !caps.Get("sampling").IsObject() && !caps.Get("elicitation").IsObject() && !caps.Get("roots").IsObject() {
		if p.o.Shared == nil {
			return
		}
		caps = gjson.Result{} // in flight, asks for nothing
	}
	c := &parkedCall{
		childID: m.ID(),
		caps:    caps.Raw,
		waiting: m.ID(),
	}
	if caps.Raw != "" {
		c.principal = sha256.Sum256([]byte(principalOf(ctx)))
		c.hash = requestHash(m)
	}
	if t := m.Get("params._meta.progressToken"); t.Type == gjson.String || t.Type == gjson.Number {
		c.childToken = t.Raw
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.byID[m.ID()] != nil {
		return
	}
	p.byChild[c.childID] = c
	p.byID[c.childID] = c
	if c.childToken != "" {
		p.byToken[c.childToken] = c
	}
}

// dropLocked forgets c.
func (p *parker) dropLocked(c *parkedCall) {
	if p.byChild[c.childID] != c {
		return
	}
	delete(p.byChild, c.childID)
	delete(p.byID, c.childID)
	for _, id := range c.ids {
		delete(p.byID, id)
	}
	if c.handle != 0 {
		delete(p.byHandle, c.handle)
		p.parked(-1)
		c.handle = 0
	}
	if c.stop != nil {
		c.stop()
		c.stop = nil
	}
	c.stopGather()
	if c.childToken != "" && p.byToken[c.childToken] == c {
		delete(p.byToken, c.childToken)
	}
}

// refuseRetry is how a retry that does not hold is refused.
func refuseRetry(id frame.ID, why string) error {
	return Refuse(400, id, -32602, why)
}

// retry takes the client's retry of a parked call.
func (p *parker) retry(ctx context.Context, m frame.Message) error {
	id := m.ID()
	rs := m.Get("params.requestState")
	if !rs.Exists() {
		return refuseRetry(id, "params.inputResponses without params.requestState: send the call again without inputResponses, or with the requestState of its input_required result")
	}
	if rs.Type != gjson.String {
		return refuseRetry(id, "params.requestState is not a string")
	}
	responses := m.Get("params.inputResponses")
	if responses.Exists() && !responses.IsObject() {
		return refuseRetry(id, "params.inputResponses is not an object")
	}
	st, err := p.seal.open(rs.Str)
	if err != nil {
		return refuseRetry(id, err.Error())
	}
	again := ": send the call again without inputResponses and requestState"
	switch {
	case st.replica != p.replica:
		return refuseRetry(id, "params.requestState was issued by another replica of this gateway, which holds the call: send the retry to that replica")
	case st.principal != sha256.Sum256([]byte(principalOf(ctx))):
		return refuseRetry(id, "params.requestState was issued to another principal")
	case p.o.Now().After(st.expiry):
		return refuseRetry(id, "params.requestState has expired (it lasts "+p.o.StateTTL.String()+")"+again)
	case st.hash != requestHash(m):
		return refuseRetry(id, "params.requestState belongs to another request: the method, name or uri, or arguments differ from the call that was given it")
	case st.handle.instance != p.instance:
		return refuseRetry(id, "the server process that ran this call has ended"+again)
	}

	var s parkSends
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return refuseRetry(id, "the server process that ran this call has ended"+again)
	}
	c := p.byHandle[st.handle.n]
	if c == nil {
		p.mu.Unlock()
		return refuseRetry(id, "params.requestState was used already, or its call was abandoned"+again)
	}
	delete(p.byHandle, c.handle)
	p.parked(-1)
	c.handle = 0
	if c.stop != nil {
		c.stop()
		c.stop = nil
	}
	c.waiting = id
	c.ids = append(c.ids, id)
	p.byID[id] = c
	if caps := m.Get(capsPath); caps.Exists() {
		c.caps = caps.Raw
	}
	c.token = ""
	if t := m.Get("params._meta.progressToken"); t.Type == gjson.String || t.Type == gjson.Number {
		c.token = t.Raw
	}
	var w *retryWaiter
	if p.o.AwaitRetryAnswers {
		// Released by whatever goes out under id first (see flush).
		w = &retryWaiter{done: make(chan struct{})}
		c.waiter = w
	}
	left := c.pending[:0:0]
	for _, in := range c.pending {
		answer := responses.Get(gjson.Escape(in.key))
		if !answer.IsObject() {
			left = append(left, in)
			continue
		}
		s.child = append(s.child, frame.ResultResponse(in.id, []byte(answer.Raw)))
	}
	c.pending = left
	switch {
	case c.held.Len() > 0:
		for _, in := range c.pending {
			s.child = append(s.child, frame.ErrorResponse(in.id, -32603, "the call this request belongs to is over"))
		}
		s.client = append(s.client, p.outcomeLocked(c, c.held))
		s.releaseLocked(c, nil)
	case len(c.pending) > 0:
		s = p.roundLocked(c, s)
	}
	if w != nil && c.waiter == w && c.elsewhere {
		// Nothing went out under id, and the call's outcome comes on
		// another stream: the edge waits for it (AnswerOnce).
		s.releaseLocked(c, frame.ErrAnswerElsewhere)
	}
	p.mu.Unlock()
	if err := p.flush(ctx, s); err != nil {
		return err
	}
	if w == nil {
		return nil
	}
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// outcomeLocked returns the child's response to c under the id waiting,
// and forgets c.
func (p *parker) outcomeLocked(c *parkedCall, m frame.Message) frame.Message {
	p.dropLocked(c)
	if c.waiting == c.childID {
		return m
	}
	out, err := m.WithID(c.waiting)
	if err != nil {
		return frame.ErrorResponse(c.waiting, -32603, "the server's response could not be relayed")
	}
	return out
}

// roundLocked answers the id waiting for c with input_required for c's
// pending requests, parks c under a new handle, and adds the messages to
// s; past MaxRounds it fails the call instead.
func (p *parker) roundLocked(c *parkedCall, s parkSends) parkSends {
	c.rounds++
	if c.rounds > p.o.MaxRounds {
		s.client = append(s.client, frame.ErrorResponse(c.waiting, -32603,
			"the call asked for input more than "+strconv.Itoa(p.o.MaxRounds)+" times; it was cancelled"))
		s.releaseLocked(c, nil)
		return p.endLocked(c, s, "the call asked for input too many times")
	}
	p.handles++
	h := p.handles
	c.handle = h
	p.byHandle[h] = c
	p.parked(1)
	state := p.seal.seal(requestState{
		expiry:    p.o.Now().Add(p.o.StateTTL),
		hash:      c.hash,
		handle:    stateHandle{instance: p.instance, n: h},
		principal: c.principal,
		replica:   p.replica,
	})
	b := []byte(`{"resultType":"input_required","inputRequests":{`)
	for i, in := range c.pending {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, jsonString(in.key)...)
		b = append(b, `:{"method":`...)
		b = append(b, jsonString(in.method)...)
		if in.params != "" {
			b = append(b, `,"params":`...)
			b = append(b, in.params...)
		}
		b = append(b, '}')
	}
	b = append(b, `},"requestState":`...)
	b = append(b, jsonString(state)...)
	b = append(b, '}')
	s.client = append(s.client, frame.ResultResponse(c.waiting, b))
	s.releaseLocked(c, nil)
	c.waiting = ""
	c.stop = p.o.AfterFunc(p.o.StateTTL, func() { p.abandon(c, h) })
	return s
}

// endLocked cancels c on the child (unless it has answered), then answers
// its parked requests with an error, forgets it, and adds the messages to
// s. The cancel goes first, so that the child knows the call is over
// before an answer could let it carry on with it.
func (p *parker) endLocked(c *parkedCall, s parkSends, reason string) parkSends {
	if c.held.Len() == 0 { // else the child has answered the call already
		s.child = append(s.child, cancelNotification(c.childID, reason))
	}
	for _, in := range c.pending {
		s.child = append(s.child, frame.ErrorResponse(in.id, -32603, "no answer: "+reason))
	}
	c.pending = nil
	s.releaseLocked(c, frame.ErrCancelled)
	p.dropLocked(c)
	return s
}

// abandon ends c if it is still parked in round h: no retry came.
func (p *parker) abandon(c *parkedCall, h uint64) {
	p.mu.Lock()
	if p.closed || p.byHandle[h] != c {
		p.mu.Unlock()
		return
	}
	c.stop = nil
	s := p.endLocked(c, parkSends{}, "the client did not come back for the call")
	conn := p.conn
	p.mu.Unlock()
	p.log.Debug("a parked call was abandoned: no retry came", "id", c.childID.String(), "after", p.o.StateTTL)
	ctx := context.Background()
	if conn != nil {
		ctx = WithConn(ctx, conn)
	}
	_ = p.flush(ctx, s)
}

// cancel takes a server-bound notifications/cancelled.
func (p *parker) cancel(ctx context.Context, m frame.Message) error {
	rid, ok := cancelledRequestID(m)
	if !ok {
		return p.next.ToServer.Handle(ctx, m)
	}
	p.mu.Lock()
	c := p.byID[rid]
	switch {
	case c == nil:
		p.mu.Unlock()
		return p.next.ToServer.Handle(ctx, m)
	case c.waiting != rid:
		// Answered with input_required already: the call stays parked.
		p.mu.Unlock()
		p.log.Debug("a cancel of a call answered with input_required is ignored; the call stays parked", "id", rid.String())
		return nil
	case rid == c.childID:
		// The cancel first, as endLocked does, then the requests asked
		// for during a Gather, never sent to the client.
		s := parkSends{child: []frame.Message{m}}
		for _, in := range c.pending {
			s.child = append(s.child, frame.ErrorResponse(in.id, -32603, "no answer: cancelled by the client"))
		}
		c.pending = nil
		p.dropLocked(c)
		p.mu.Unlock()
		return p.flush(ctx, s)
	}
	s := p.endLocked(c, parkSends{}, "cancelled by the client")
	p.mu.Unlock()
	// The client's own notification, pointed at the call the child runs.
	if len(s.child) > 0 && s.child[0].Method() == cancelMethod {
		if out, ok := retargetCancel(m, c.childID); ok {
			s.child[0] = out
		}
	}
	return p.flush(ctx, s)
}

func (p *parker) toClient(ctx context.Context, m frame.Message) error {
	switch m.Kind() {
	case frame.Request:
		return p.childRequest(ctx, m)
	case frame.Result, frame.Error:
		return p.childResponse(ctx, m)
	case frame.Notification:
		if m.Method() == "notifications/progress" {
			m = p.retoken(m)
		}
	}
	return p.next.ToClient.Handle(ctx, m)
}

// retoken points the child's progress for a call at the retry waiting.
func (p *parker) retoken(m frame.Message) frame.Message {
	t := m.Get("params.progressToken")
	if t.Type != gjson.String && t.Type != gjson.Number {
		return m
	}
	p.mu.Lock()
	c := p.byToken[t.Raw]
	token := ""
	if c != nil && c.waiting != "" && c.waiting != c.childID {
		token = c.token
	}
	p.mu.Unlock()
	if token == "" {
		return m
	}
	out, err := m.Set("params.progressToken", []byte(token))
	if err != nil {
		return m
	}
	return out
}

// childResponse takes the child's response: a tracked call's outcome is
// held while it is parked and goes under the id waiting otherwise.
func (p *parker) childResponse(ctx context.Context, m frame.Message) error {
	p.mu.Lock()
	c := p.byChild[m.ID()]
	switch {
	case c == nil:
		p.mu.Unlock()
		return p.next.ToClient.Handle(ctx, m)
	case c.waiting == "":
		c.held = m
		p.mu.Unlock()
		return nil
	}
	var s parkSends
	for _, in := range c.pending { // asked for during a Gather, never sent
		s.child = append(s.child, frame.ErrorResponse(in.id, -32603, "the call this request belongs to is over"))
	}
	c.pending = nil
	s.client = append(s.client, p.outcomeLocked(c, m))
	s.releaseLocked(c, nil)
	p.mu.Unlock()
	return p.flush(ctx, s)
}

// childRequest answers the child's request (see ParkChildRequests).
func (p *parker) childRequest(ctx context.Context, m frame.Message) error {
	method := m.Method()
	switch method {
	case "ping":
		return p.next.ToServer.Handle(ctx, frame.ResultResponse(m.ID(), []byte("{}")))
	case methodSampling, methodElicitation, methodRootsList:
	default:
		return p.next.ToServer.Handle(ctx, frame.ErrorResponse(m.ID(), -32601,
			"method not found: "+method+" (a 2026-07-28 client answers only sampling/createMessage, elicitation/create and roots/list, during a call)"))
	}
	if p.o.Shared != nil {
		return p.sharedRequest(ctx, m)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	// The child asks for a running call, if any runs; else for a parked
	// one. Of those, the calls whose clients declared the capability.
	var found, parkedOnes []*parkedCall
	running := false
	for _, c := range p.byChild {
		switch {
		case c.held.Len() > 0:
		case c.waiting != "":
			running = true
			if declares(c.caps, m) {
				found = append(found, c)
			}
		case declares(c.caps, m):
			parkedOnes = append(parkedOnes, c)
		}
	}
	if !running {
		found = parkedOnes
	}
	switch {
	case len(found) == 0:
		p.mu.Unlock()
		switch method {
		case methodElicitation:
			return p.next.ToServer.Handle(ctx, frame.ResultResponse(m.ID(), []byte(`{"action":"decline"}`)))
		case methodRootsList:
			return p.next.ToServer.Handle(ctx, frame.ResultResponse(m.ID(), []byte(`{"roots":[]}`)))
		}
		return p.next.ToServer.Handle(ctx, frame.ErrorResponse(m.ID(), -32600,
			method+" is not available: no call in flight comes from a client that declared that capability"))
	case len(found) > 1:
		warn := !p.warned
		p.warned = true
		p.mu.Unlock()
		msg := method + " could belong to any of " + strconv.Itoa(len(found)) + " calls in flight whose clients declared that capability; the server cannot say which, so it is refused"
		if warn {
			p.log.Warn("the server asked for input while several calls that could answer it were in flight; it was refused. "+
				"Have clients of this principal run one call that may ask for input at a time, or serve a server that speaks 2026-07-28",
				"method", method, "calls", len(found))
		} else {
			p.log.Debug(msg)
		}
		return p.next.ToServer.Handle(ctx, frame.ErrorResponse(m.ID(), -32603, msg))
	}
	return p.giveLocked(ctx, found[0], m)
}

// sharedRequest answers the request m of a child many clients share
// (ParkOptions.Shared): given to the call that caused it, when serve can
// tell which, else answered by Shared.
func (p *parker) sharedRequest(ctx context.Context, m frame.Message) error {
	method := m.Method()
	if method == methodRootsList && p.o.Shared.FirstRoots() {
		return p.next.ToServer.Handle(ctx, p.o.Shared.Answer(m,
			"it is the server's first roots/list, which asks for the roots of its connection, and every client of this server shares that connection"))
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	// The calls in flight on the child (not answered by it yet): running
	// ones first. A parked call's question is with its client, and the
	// child, waiting for that answer, asks nothing more on its behalf
	// unless it asked for several things at once; so a parked call is
	// taken to have asked only when no call runs.
	var running, parked []*parkedCall
	for _, c := range p.byChild {
		switch {
		case c.held.Len() > 0: // the child has answered it
		case c.waiting != "":
			running = append(running, c)
		default:
			parked = append(parked, c)
		}
	}
	candidates := running
	if len(running) == 0 {
		candidates = parked
	}
	if len(candidates) != 1 {
		p.mu.Unlock()
		why := "it came while no call was in flight on the server"
		switch {
		case len(running) > 1:
			why = "it came while " + strconv.Itoa(len(running)) + " calls were running on the server, and nothing tells which one asked"
		case len(parked) > 1:
			why = "it came while " + strconv.Itoa(len(parked)) + " calls waited for their clients' input on the server, and nothing tells which one asked"
		}
		return p.next.ToServer.Handle(ctx, p.o.Shared.Answer(m, why))
	}
	c := candidates[0]
	if !declares(c.caps, m) {
		p.mu.Unlock()
		switch method {
		case methodElicitation:
			return p.next.ToServer.Handle(ctx, frame.ResultResponse(m.ID(), []byte(`{"action":"decline"}`)))
		case methodRootsList:
			return p.next.ToServer.Handle(ctx, p.o.Shared.Answer(m, "the client of the call in flight declared no roots"))
		}
		return p.next.ToServer.Handle(ctx, frame.ErrorResponse(m.ID(), -32600,
			method+" is not available: the client of the call in flight did not declare that capability"))
	}
	return p.giveLocked(ctx, c, m)
}

// giveLocked parks the child's request m for call c, whose client will be
// asked for it (see ParkChildRequests); p.mu is held, and released.
func (p *parker) giveLocked(ctx context.Context, c *parkedCall, m frame.Message) error {
	method := m.Method()
	var s parkSends
	if len(c.pending) >= maxParkedInputs {
		p.mu.Unlock()
		return p.next.ToServer.Handle(ctx, frame.ErrorResponse(m.ID(), -32603,
			"too many requests parked for one call ("+strconv.Itoa(maxParkedInputs)+")"))
	}
	c.keys++
	in := parkedInput{key: "input-" + strconv.Itoa(c.keys), id: m.ID(), method: method}
	if params := m.Params(); params.Exists() {
		in.params = params.Raw
	}
	c.pending = append(c.pending, in)
	switch {
	case c.waiting == "" || c.gather != nil: // parked, or gathering: the round to come takes it
	case p.o.Gather > 0:
		c.gather = p.o.AfterFunc(p.o.Gather, func() { p.gathered(c) })
	default:
		s = p.roundLocked(c, s)
	}
	p.mu.Unlock()
	return p.flush(ctx, s)
}

// gathered sends c's round once its Gather is over.
func (p *parker) gathered(c *parkedCall) {
	p.mu.Lock()
	if p.closed || c.gather == nil || p.byChild[c.childID] != c {
		p.mu.Unlock()
		return
	}
	c.gather = nil
	var s parkSends
	if c.waiting != "" && len(c.pending) > 0 {
		s = p.roundLocked(c, s)
	}
	conn := p.conn
	p.mu.Unlock()
	ctx := context.Background()
	if conn != nil {
		ctx = WithConn(ctx, conn)
	}
	if err := p.flush(ctx, s); err != nil {
		p.log.Debug("an input_required result was not delivered", "id", c.childID.String(), "err", err)
	}
}

// stopGather stops c's Gather, if it runs.
func (c *parkedCall) stopGather() {
	if c.gather != nil {
		c.gather()
		c.gather = nil
	}
}

// declares reports whether the raw clientCapabilities caps cover the
// child's request m.
func declares(caps string, m frame.Message) bool {
	cs := gjson.Parse(caps)
	switch m.Method() {
	case methodSampling:
		s := cs.Get("sampling")
		if !s.IsObject() {
			return false
		}
		if t := m.Get("params.tools"); t.IsArray() && len(t.Array()) > 0 {
			return s.Get("tools").Exists()
		}
		return true
	case methodElicitation:
		e := cs.Get("elicitation")
		if !e.IsObject() {
			return false
		}
		if m.Get("params.mode").String() == "url" {
			return e.Get("url").Exists()
		}
		return e.Get("form").Exists() || !e.Get("url").Exists()
	case methodRootsList:
		return cs.Get("roots").IsObject()
	}
	return false
}
