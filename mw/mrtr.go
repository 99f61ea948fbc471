package mw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// Bounds of [MRTRBridge].
const (
	// DefaultMRTRRounds is the most input_required results the bridge
	// answers for one call; the next one fails the call.
	DefaultMRTRRounds = 10
	// DefaultMRTRStateOnlyRounds is the most of those that may be
	// state-only (requestState without inputRequests: "come back later").
	DefaultMRTRStateOnlyRounds = 3
	// maxInputRequests bounds the input requests of one round, and
	// maxAsked those outstanding toward the client over all calls, so the
	// map of outstanding requests stays bounded whatever a server sends.
	maxInputRequests = 64
	maxAsked         = 1024
)

// mrtrInputPrefix starts the ids of the requests the bridge sends the
// client ([IDMinter] stage "mrtr-input"): the client's answers to them are
// the bridge's, never the server's.
const mrtrInputPrefix = MintedIDPrefix + "mrtr-input/"

// MRTROptions configures [MRTRBridge].
type MRTROptions struct {
	// MaxRounds is the most input_required results answered for one call;
	// 0 means [DefaultMRTRRounds].
	MaxRounds int
	// MaxStateOnlyRounds is the most state-only results among them; 0
	// means [DefaultMRTRStateOnlyRounds].
	MaxStateOnlyRounds int
	// Sleep waits d or until ctx is done, returning ctx's error then; it
	// is the wait before re-issuing after a state-only result (see
	// [MRTRBackoff]). nil means [frame.Sleep].
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger receives a debug line per round and per answer dropped; nil
	// discards.
	Logger *slog.Logger
}

// MRTRBackoff is the wait before the re-issue that follows the n-th
// state-only result of a call (n from 1): 50 ms, 150 ms, then 250 ms.
func MRTRBackoff(n int) time.Duration {
	d := 50*time.Millisecond + time.Duration(n-1)*100*time.Millisecond
	return min(max(d, 50*time.Millisecond), 250*time.Millisecond)
}

// MRTRBridge returns the stage that lets a client of the session era (an
// MCP host of 2025-11-25 or older) use a 2026-07-28 server that asks for
// input the stateless way (multi round-trip requests, SEP-2322). In the
// relay's modern chain it sits just inside the cancel filter and outside
// _meta injection, so that every re-issue is stamped and routed like the
// opening call (see the package documentation).
//
// It acts on a tools/call, prompts/get or resources/read request when the
// connection speaks 2026-07-28 ([ConnOf], [EraStateless]) and the request
// is the client's own of the session era ([ClassifyEra]: no protocol
// version in params._meta; a 2026-07-28 client runs the rounds itself).
// Everything else passes untouched. For such a call:
//
//   - The request goes on as it is, under the client's id. A result with
//     resultType "input_required" that answers it is taken; any other
//     answer reaches the client as it is.
//   - Each entry of the result's inputRequests (elicitation/create,
//     sampling/createMessage or roots/list) becomes a JSON-RPC request to
//     the client under an id minted here ("mcp-stdio/mrtr-input/<n>"),
//     all of them at once, params byte for byte. A URL-mode elicitation
//     without an elicitationId, which 2025-11-25 requires, gets the minted
//     id's string as its elicitationId. An entry whose kind the client did
//     not declare in its initialize capabilities ([Conn.ClientInitialize];
//     url and form elicitation, and sampling with tools, told apart) fails
//     the call with -32021 and data.requiredCapabilities, before anything
//     is asked; so does an entry of another kind with -32000.
//   - The client's answers to those ids are taken on the server-bound side
//     and never go further (nor does a late one). A result, a decline
//     included, is an answer; an error fails the call with that error
//     object under the call's id, and the requests still outstanding are
//     cancelled toward the client (notifications/cancelled).
//   - The call is re-issued: the client's request bytes under a fresh
//     minted id ("mcp-stdio/mrtr/<n>", so the client never sees it) with
//     its HTTP side channel ([frame.Message.Header]), params.inputResponses
//     set to the answers under the same keys, in the same order, and
//     params.requestState set to the result's requestState token byte for
//     byte (removed when there was none). A state-only result (no
//     inputRequests) is re-issued without inputResponses after
//     Sleep([MRTRBackoff](n)).
//   - The first answer that is not input_required ends the call: it
//     reaches the client under the client's id, as the server wrote it
//     otherwise. More than MaxRounds input_required results, more than
//     MaxStateOnlyRounds state-only ones, or one that is malformed, fail
//     the call with -32000. A failure of a re-issue is returned as a Go
//     error (a server's JSON-RPC error in an HTTP error status is passed on
//     under the client's id).
//   - A notifications/cancelled naming the call ends it: the call's
//     context is cancelled (aborting what runs upstream), each request
//     outstanding toward the client for it is cancelled with a
//     notifications/cancelled naming the minted id, and Handle returns
//     [frame.ErrCancelled], so the client gets no answer. The notification
//     itself goes on, its requestId pointed at the re-issue in flight, if
//     any.
//
// The bridge keeps no state between calls beyond those in flight.
func MRTRBridge(o MRTROptions) Middleware {
	if o.MaxRounds <= 0 {
		o.MaxRounds = DefaultMRTRRounds
	}
	if o.MaxStateOnlyRounds <= 0 {
		o.MaxStateOnlyRounds = DefaultMRTRStateOnlyRounds
	}
	if o.Sleep == nil {
		o.Sleep = frame.Sleep
	}
	return func(next Duplex) Duplex {
		b := &mrtrBridge{
			next:    next,
			o:       o,
			log:     loggerOrDiscard(o.Logger),
			reissue: NewRemap("mrtr"),
			calls:   make(map[frame.ID]*mrtrCall),
			asked:   make(map[frame.ID]askSlot),
		}
		return Duplex{ToServer: HandlerFunc(b.toServer), ToClient: HandlerFunc(b.toClient)}
	}
}

type mrtrBridge struct {
	next    Duplex
	o       MRTROptions
	log     *slog.Logger
	reissue *Remap   // re-issued calls, on behalf of the client's call
	inputs  IDMinter // requests to the client

	mu sync.Mutex
	// calls holds the calls being bridged, by the client's id.
	calls map[frame.ID]*mrtrCall
	// asked holds the requests outstanding toward the client, by minted id.
	asked map[frame.ID]askSlot
}

// mrtrCall is a call being bridged.
type mrtrCall struct {
	cancel context.CancelCauseFunc
	// opening is true while the call's first request is in flight under
	// the client's id; its input_required answer goes to first.
	opening bool
	first   chan frame.Message
}

// askSlot is where the client's answer to a minted request goes: the
// round's channel, and the request's place in the round.
type askSlot struct {
	answers chan<- askAnswer
	i       int
}

type askAnswer struct {
	i int
	m frame.Message
}

// bridged reports whether m is a call the bridge runs.
func bridged(ctx context.Context, m frame.Message) bool {
	if !mcp.ClassOf(m.Method()).Has(mcp.TakesInput) {
		return false
	}
	c := ConnOf(ctx)
	return c != nil && c.Era() == EraStateless && ClassifyEra(m) == EraSession
}

func (b *mrtrBridge) toServer(ctx context.Context, m frame.Message) error {
	switch k := m.Kind(); {
	case k == frame.Request && bridged(ctx, m):
		return b.call(ctx, m)
	case k.IsResponse() && strings.HasPrefix(string(m.ID()), mrtrInputPrefix):
		b.answered(m)
		return nil
	case k == frame.Notification && m.Method() == cancelMethod:
		id, ok := cancelledRequestID(m)
		if !ok {
			break
		}
		// Forward while the re-issue is in flight, so it names the request
		// the server runs, then end the call.
		err := b.next.ToServer.Handle(ctx, b.reissue.RetargetCancel(m))
		b.mu.Lock()
		c := b.calls[id]
		b.mu.Unlock()
		if c != nil {
			c.cancel(frame.ErrCancelled)
		}
		return err
	}
	return b.next.ToServer.Handle(ctx, m)
}

func (b *mrtrBridge) toClient(ctx context.Context, m frame.Message) error {
	if b.reissue.Capture(m) {
		return nil
	}
	if m.Kind() == frame.Result && inputRequired(m) {
		b.mu.Lock()
		c := b.calls[m.ID()]
		if c != nil && c.opening {
			c.opening = false
			c.first <- m // buffered, and sent to once
			b.mu.Unlock()
			return nil
		}
		b.mu.Unlock()
	}
	return b.next.ToClient.Handle(ctx, m)
}

// answered hands the client's answer to a minted request to the round
// waiting for it; an answer nobody waits for is dropped.
func (b *mrtrBridge) answered(m frame.Message) {
	b.mu.Lock()
	slot, ok := b.asked[m.ID()]
	delete(b.asked, m.ID())
	b.mu.Unlock()
	if !ok {
		b.log.Debug("dropping the client's late answer to an input request", "id", m.ID().String())
		return
	}
	slot.answers <- askAnswer{i: slot.i, m: m} // buffered for the whole round
}

// inputRequired reports whether result m asks for input.
func inputRequired(m frame.Message) bool {
	t := m.Get("result.resultType")
	return t.Type == gjson.String && t.Str == "input_required"
}

// call runs one bridged call, req, to its end.
func (b *mrtrBridge) call(ctx context.Context, req frame.Message) error {
	id := req.ID()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c := &mrtrCall{cancel: cancel, opening: true, first: make(chan frame.Message, 1)}
	b.mu.Lock()
	if _, dup := b.calls[id]; dup {
		// Two calls under one id (AnswerOnce refuses that in the relay):
		// their answers could not be told apart, so this one is not bridged.
		b.mu.Unlock()
		return b.next.ToServer.Handle(ctx, req)
	}
	b.calls[id] = c
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.calls, id)
		b.mu.Unlock()
	}()

	err := b.next.ToServer.Handle(ctx, req)
	b.mu.Lock()
	c.opening = false
	b.mu.Unlock()
	var answer frame.Message
	select {
	case answer = <-c.first:
	default:
		// The answer, if any, went to the client: the call needed no input.
		return b.outcome(ctx, err)
	}

	rounds, stateOnly := 0, 0
	for {
		rounds++
		if rounds > b.o.MaxRounds {
			return b.fail(ctx, id, fmt.Sprintf("the server still asked for input after %d rounds", b.o.MaxRounds))
		}
		requests := answer.Get("result.inputRequests")
		state := answer.Get("result.requestState")
		if (requests.Exists() && !requests.IsObject()) || (state.Exists() && state.Type != gjson.String) {
			return b.fail(ctx, id, "the server's input_required result is malformed")
		}
		var responses []byte
		if n := countKeys(requests); n > 0 {
			var hostErr frame.Message
			responses, hostErr, err = b.ask(ctx, req, requests, n)
			if err != nil {
				return b.outcome(ctx, err)
			}
			if hostErr.Len() > 0 {
				return b.next.ToClient.Handle(ctx, hostErr)
			}
		} else {
			if !state.Exists() {
				return b.fail(ctx, id, "the server's input_required result has neither inputRequests nor requestState")
			}
			stateOnly++
			if stateOnly > b.o.MaxStateOnlyRounds {
				return b.fail(ctx, id, fmt.Sprintf("the server still asked to come back later after %d tries", b.o.MaxStateOnlyRounds))
			}
			wait := MRTRBackoff(stateOnly)
			b.log.Debug("the server asked to come back later", "id", id.String(), "round", rounds, "wait", wait)
			if err := b.o.Sleep(ctx, wait); err != nil {
				return b.outcome(ctx, err)
			}
		}

		again, err := continuation(req, responses, state)
		if err != nil {
			return b.fail(ctx, id, "cannot re-issue the call: "+err.Error())
		}
		answer, err = b.reissue.Call(ctx, b.next.ToServer, again, id)
		if err != nil {
			if m, ok := serverError(err, id); ok {
				return b.next.ToClient.Handle(ctx, m)
			}
			return b.outcome(ctx, err)
		}
		if answer.Kind() != frame.Result || !inputRequired(answer) {
			out, err := answer.WithID(id)
			if err != nil {
				return err
			}
			return b.next.ToClient.Handle(ctx, out)
		}
	}
}

// outcome is what call returns when it stops on err: frame.ErrCancelled
// when the client cancelled the call.
func (b *mrtrBridge) outcome(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), frame.ErrCancelled) {
		return frame.ErrCancelled
	}
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// fail answers the call with the bridge's own error.
func (b *mrtrBridge) fail(ctx context.Context, id frame.ID, msg string) error {
	if errors.Is(context.Cause(ctx), frame.ErrCancelled) {
		return frame.ErrCancelled
	}
	b.log.Debug("MRTR call failed", "id", id.String(), "reason", msg)
	return b.next.ToClient.Handle(ctx, frame.ErrorResponse(id, frame.CodeGateway, msg))
}

// serverError returns the server's JSON-RPC error for a re-issue carried
// by an HTTP error status, under the client's id.
func serverError(err error, id frame.ID) (frame.Message, bool) {
	var st *frame.StatusError
	if !errors.As(err, &st) {
		return frame.Message{}, false
	}
	m, perr := frame.Parse(st.Body)
	if perr != nil || m.Kind() != frame.Error || !IsMinted(m.ID()) {
		return frame.Message{}, false
	}
	out, werr := m.WithID(id)
	return out, werr == nil
}

// countKeys returns how many members the object r has (0 when r is not an
// object).
func countKeys(r gjson.Result) int {
	n := 0
	if r.IsObject() {
		r.ForEach(func(_, _ gjson.Result) bool { n++; return true })
	}
	return n
}

// continuation is req with this round's inputResponses and requestState in
// its params (and none of an earlier round's).
func continuation(req frame.Message, responses []byte, state gjson.Result) (frame.Message, error) {
	out, err := req.Delete("params.inputResponses")
	if err != nil {
		return frame.Message{}, err
	}
	if out, err = out.Delete("params.requestState"); err != nil {
		return frame.Message{}, err
	}
	if responses != nil {
		if out, err = out.Set("params.inputResponses", responses); err != nil {
			return frame.Message{}, err
		}
	}
	if state.Exists() {
		if out, err = out.Set("params.requestState", []byte(state.Raw)); err != nil {
			return frame.Message{}, err
		}
	}
	return out, nil
}

// inputRequest is one entry of inputRequests, made into a request to the
// client.
type inputRequest struct {
	key string   // the raw JSON key
	id  frame.ID // minted
	msg frame.Message
}

// ask sends the n input requests to the client and collects the answers.
// It returns the inputResponses object, or the error message that answers
// the call (an undeclared capability, a kind MRTR does not allow, the
// client's own error), or the Go error that stopped it.
func (b *mrtrBridge) ask(ctx context.Context, call frame.Message, requests gjson.Result, n int) ([]byte, frame.Message, error) {
	callID := call.ID()
	if n > maxInputRequests {
		return nil, frame.ErrorResponse(callID, frame.CodeGateway,
			fmt.Sprintf("the server asked for %d inputs at once; the gateway answers at most %d", n, maxInputRequests)), nil
	}
	var caps gjson.Result
	if c := ConnOf(ctx); c != nil {
		if init, ok := c.ClientInitialize(); ok {
			caps = init.Get("params.capabilities")
		}
	}
	reqs := make([]inputRequest, 0, n)
	var refusal frame.Message
	requests.ForEach(func(key, value gjson.Result) bool {
		if refusal = checkInput(callID, value, caps); refusal.Len() > 0 {
			return false
		}
		reqs = append(reqs, inputRequest{key: key.Raw, id: b.inputs.Mint("mrtr-input")})
		return true
	})
	if refusal.Len() > 0 {
		return nil, refusal, nil
	}
	i := 0
	var buildErr error
	requests.ForEach(func(_, value gjson.Result) bool {
		reqs[i].msg, buildErr = inputRequestMessage(reqs[i].id, value)
		i++
		return buildErr == nil
	})
	if buildErr != nil {
		return nil, frame.ErrorResponse(callID, frame.CodeGateway, "cannot ask the client for input: "+buildErr.Error()), nil
	}

	answers := make(chan askAnswer, len(reqs))
	b.mu.Lock()
	if len(b.asked)+len(reqs) > maxAsked {
		b.mu.Unlock()
		return nil, frame.ErrorResponse(callID, frame.CodeGateway, "too many input requests outstanding toward the client"), nil
	}
	for i, r := range reqs {
		b.asked[r.id] = askSlot{answers: answers, i: i}
	}
	b.mu.Unlock()
	got := make([]frame.Message, len(reqs))
	sent := 0
	// Whatever ends the round, the requests the client has not answered
	// are forgotten here, and those it was sent are cancelled there.
	defer func() {
		var outstanding []frame.ID
		b.mu.Lock()
		for i, r := range reqs {
			if _, ok := b.asked[r.id]; ok {
				delete(b.asked, r.id)
				if i < sent {
					outstanding = append(outstanding, r.id)
				}
			}
		}
		b.mu.Unlock()
		for _, id := range outstanding {
			b.cancelInput(ctx, id)
		}
	}()

	b.log.Debug("the server asks for input", "id", callID.String(), "requests", len(reqs))
	for _, r := range reqs {
		if err := b.next.ToClient.Handle(ctx, r.msg); err != nil {
			return nil, frame.Message{}, err
		}
		sent++
	}
	for left := len(reqs); left > 0; left-- {
		select {
		case a := <-answers:
			got[a.i] = a.m
			if a.m.Kind() == frame.Error {
				out, err := a.m.WithID(callID)
				if err != nil {
					return nil, frame.Message{}, err
				}
				return nil, out, nil
			}
		case <-ctx.Done():
			return nil, frame.Message{}, context.Cause(ctx)
		}
	}

	var out []byte
	out = append(out, '{')
	for i, r := range reqs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, r.key...)
		out = append(out, ':')
		out = append(out, got[i].Get("result").Raw...)
	}
	return append(out, '}'), frame.Message{}, nil
}

// cancelInput tells the client the bridge no longer waits for the answer
// to its request id.
func (b *mrtrBridge) cancelInput(ctx context.Context, id frame.ID) {
	m := cancelNotification(id, "the request it was made for ended")
	if err := b.next.ToClient.Handle(context.WithoutCancel(ctx), m); err != nil {
		b.log.Debug("could not cancel an input request", "id", id.String(), "err", err)
	}
}

// checkInput returns the error that answers call callID when the input
// request r cannot be put to the client: a kind MRTR does not allow, or
// one the client did not declare in caps. It returns the zero Message when
// r can be asked.
func checkInput(callID frame.ID, r gjson.Result, caps gjson.Result) frame.Message {
	method := r.Get("method")
	if !r.IsObject() || method.Type != gjson.String {
		return frame.ErrorResponse(callID, frame.CodeGateway, "the server's input request is malformed")
	}
	params := r.Get("params")
	var (
		has  bool
		need string // the capability missing, as requiredCapabilities
		what string
	)
	switch method.Str {
	case "elicitation/create":
		el := caps.Get("elicitation")
		if params.Get("mode").Str == "url" {
			has, need, what = el.Get("url").Exists(), `{"elicitation":{"url":{}}}`, "URL-mode elicitation"
		} else {
			// An empty elicitation capability means form mode only.
			form := el.Get("form").Exists() || (el.IsObject() && !el.Get("url").Exists())
			has, need, what = form, `{"elicitation":{"form":{}}}`, "form elicitation"
		}
	case "sampling/createMessage":
		if params.Get("tools").Exists() || params.Get("toolChoice").Exists() {
			has, need, what = caps.Get("sampling.tools").Exists(), `{"sampling":{"tools":{}}}`, "sampling with tools"
		} else {
			has, need, what = caps.Get("sampling").Exists(), `{"sampling":{}}`, "sampling"
		}
	case "roots/list":
		has, need, what = caps.Get("roots").Exists(), `{"roots":{}}`, "roots"
	default:
		return frame.ErrorResponse(callID, frame.CodeGateway,
			fmt.Sprintf("the server asked for input with %q, which is not an input request", method.Str))
	}
	if has {
		return frame.Message{}
	}
	return frame.ErrorResponseData(callID, frame.CodeMissingCapability,
		"the server asked for "+what+", which the client did not declare in its initialize capabilities",
		[]byte(`{"requiredCapabilities":`+need+`}`))
}

// inputRequestMessage builds the request to the client under id from the
// input request r: its method and params byte for byte, with an
// elicitationId for a URL-mode elicitation that lacks one.
func inputRequestMessage(id frame.ID, r gjson.Result) (frame.Message, error) {
	var b []byte
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"method":`...)
	b = append(b, r.Get("method").Raw...)
	if p := r.Get("params"); p.Exists() {
		b = append(b, `,"params":`...)
		b = append(b, p.Raw...)
	}
	b = append(b, '}')
	m, err := frame.Parse(b)
	if err != nil {
		return frame.Message{}, err
	}
	if m.Method() == "elicitation/create" && m.Get("params.mode").Str == "url" && !m.Get("params.elicitationId").Exists() {
		return m.Set("params.elicitationId", id.Raw())
	}
	return m, nil
}
