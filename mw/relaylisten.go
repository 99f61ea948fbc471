package mw

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// ListenOptions configures [ListenBridge].
type ListenOptions struct {
	// Backoff returns the wait before opening a listen again after the
	// n-th failure in a row (n counts from 1): a listen that dropped, or
	// one that ended before the server acknowledged it. nil means
	// [ListenBackoff]: 1 s, doubling up to 30 s.
	Backoff func(n int) time.Duration
	// Sleep waits d or until ctx is done, returning ctx's error then. nil
	// means [frame.Sleep]. Tests inject one that does not wait.
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger receives what happens to the listens; nil discards.
	Logger *slog.Logger
}

// ListenBackoff is [ListenOptions]' default Backoff: 1 s after the first
// failure, doubling up to 30 s, as the relay waits before opening a
// session-era GET stream again.
func ListenBackoff(n int) time.Duration {
	d := time.Second
	for i := 1; i < n && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// listenStage names the minted ids of the bridge's own listens, and
// listenIDPrefix starts their decoded string.
const (
	listenStage    = "listen"
	listenIDPrefix = "mcp-stdio/" + listenStage + "/"
)

// listenMethod and its notifications (MCP 2026-07-28, "Subscriptions").
const (
	listenMethod    = mcp.MethodListen
	listenAckMethod = mcp.MethodAcknowledged
)

// maxOverlapEvents bounds what a swap remembers to de-duplicate (see
// ListenBridge): beyond it, events of the old listen are passed on.
const maxOverlapEvents = 1024

// ListenBridge returns the stage that gives a session-era (2025-11-25 and
// older) client the change notifications of a 2026-07-28 server, which
// sends them only on a subscriptions/listen stream. It sits in the relay's
// chain outside the stages that stamp _meta and routing headers on
// requests (see the package documentation), since its listen is a request
// like any other for them: it carries no _meta of its own.
//
// It acts only while the connection ([ConnOf]) speaks [EraStateless] and
// its client is of the session era: the client's initialize was recorded
// ([Conn.ClientInitialize]) and the message at hand carries no 2026-07-28
// _meta ([ClassifyEra]). Everything else passes untouched both ways — on a
// session-era server, and from a 2026-07-28 client, whose own
// subscriptions/listen runs on its own stream, concurrently with the rest,
// until the client cancels it, its notifications reaching it as the
// server wrote them.
//
// Start. The bridge starts with the first message the client sends after
// its handshake was recorded (both [Conn.ClientInitialize] and
// [Conn.ServerInitialize] present): its notifications/initialized, or its
// first request when a stage outside swallowed that. The listen is opened
// once that notification was passed on, or alongside that request, which
// it does not wait for. Not before, because a session-era client expects
// no notification before it said initialized; not later, because a client
// that only waits for list_changed would never get one. The server's
// capabilities are read from [Conn.ServerInitialize] then: each of tools,
// prompts and resources whose listChanged is true is asked for
// (toolsListChanged, …).
//
// Listen. The bridge's listen is a subscriptions/listen request under an
// id it mints (mcp-stdio/listen/<n>), params
// {"notifications":{"toolsListChanged":true,…,"resourceSubscriptions":[…]}}
// with only the kinds wanted, sent through next.ToServer.Handle on a
// goroutine of its own, under a context the bridge owns: cancelling it
// closes the stream. Handle runs as long as the stream does, and the
// transport delivers the stream's messages client-bound meanwhile. There,
// a message whose _meta subscriptionId is one of the bridge's ids is the
// bridge's: the acknowledgement is swallowed; a notification has the
// subscriptionId removed (and _meta with it, when nothing else is left in
// it) and goes on as the plain session-era notification
// (notifications/tools/list_changed, notifications/resources/updated, …),
// every other byte kept; the listen's final result, or an error, is
// swallowed. No listen is open while there is nothing to ask for.
//
// Subscribe. A resources/subscribe or resources/unsubscribe from the
// client is answered at once with {} under its id and never reaches the
// server (2026-07-28 has neither); a params.uri that is not a string gets
// -32602. A change of the set of subscribed URIs replaces the listen with
// one whose resourceSubscriptions is the new set, in the order the URIs
// were first subscribed, since a listen's filter cannot change. The answer
// does not wait for the new listen: a session-era subscribe promises only
// that it was accepted, and waiting would hold the client behind a stream
// that may be backing off.
//
// Swap. The new listen is opened before the old one is closed, and the
// old one is closed once the new one is acknowledged: at every moment one
// of them reports each event the client still wants, so none is lost. While both are open the
// same event may come on both. A notification of the old listen that the
// new one has already delivered during that overlap (the same bytes once
// the subscriptionId is removed) is dropped; the new listen's
// notifications are never dropped, since it alone goes on. This keeps
// every event and doubles none except one the old stream happens to
// deliver first in the overlap, which arrives twice. The spec sets no
// order between two streams, and every listen notification only says
// "read this again", so a second copy costs a read while a dropped one
// leaves the client stale: when in doubt, the bridge delivers. A listen
// that does not get its acknowledgement (it fails or ends first) leaves
// the old one open, and is tried again after the backoff.
//
// Drop. A listen that ends without the bridge closing it (the stream
// broke, or the server ended it with its final result) is opened again
// after Backoff(n), n counting the failures in a row; an acknowledgement
// starts the count again. Events between the drop and the new
// acknowledgement are not reported: 2026-07-28 has no resumption.
//
// End. Every goroutine of the bridge ends when the connection ends
// ([Conn.OnClose]): the pipeline must close its Conn at its end. The
// bridge serves one connection: messages of another Conn pass untouched.
func ListenBridge(o ListenOptions) Middleware {
	if o.Backoff == nil {
		o.Backoff = ListenBackoff
	}
	if o.Sleep == nil {
		o.Sleep = frame.Sleep
	}
	return func(next Duplex) Duplex {
		b := &listenBridge{next: next, o: o, log: loggerOrDiscard(o.Logger), changed: make(chan struct{}, 1)}
		return Duplex{ToServer: HandlerFunc(b.toServer), ToClient: HandlerFunc(b.toClient)}
	}
}

// listenBridge is one ListenBridge stage.
type listenBridge struct {
	next Duplex
	o    ListenOptions
	log  *slog.Logger
	ids  IDMinter
	// changed wakes the supervisor when the filter wanted changed.
	changed chan struct{}

	mu      sync.Mutex
	conn    *Conn // the connection the bridge started for; nil before
	kinds   listenKinds
	uris    []string        // subscribed URIs, raw JSON tokens, in order
	uriSet  map[string]bool // their decoded values
	version uint64          // counts changes of the filter wanted
	// streams are the open listens by decoded id.
	streams map[string]*listenStream
	// cur is the listen acknowledged last; old, the one it replaces while
	// that is still open, and seen counts the notifications cur delivered
	// meanwhile, by their bytes.
	cur, old *listenStream
	seen     map[string]int
}

// listenKinds are the list_changed kinds a listen asks for.
type listenKinds struct{ tools, prompts, resources bool }

// listenStream is one listen of the bridge.
type listenStream struct {
	id      string // decoded minted id
	version uint64 // the filter it asks for
	cancel  context.CancelFunc
	acked   chan struct{} // closed at its acknowledgement
	done    chan struct{} // closed once its Handle returned
	ackOnce sync.Once
}

// active reports whether the bridge acts on m, a message of ctx's
// connection. When m is the one that starts the bridge, start is the
// function that does.
func (b *listenBridge) active(ctx context.Context, m frame.Message) (ok bool, start func()) {
	c := ConnOf(ctx)
	if c == nil || c.Era() != EraStateless || ClassifyEra(m) == EraStateless {
		return false, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn != nil {
		return b.conn == c, nil
	}
	if m.Method() == "initialize" {
		return false, nil
	}
	_, client := c.ClientInitialize()
	init, server := c.ServerInitialize()
	if !client || !server {
		return false, nil
	}
	caps := init.Get("result.capabilities")
	b.conn = c
	b.kinds = listenKinds{
		tools:     caps.Get("tools.listChanged").Type == gjson.True,
		prompts:   caps.Get("prompts.listChanged").Type == gjson.True,
		resources: caps.Get("resources.listChanged").Type == gjson.True,
	}
	b.uriSet = make(map[string]bool)
	b.streams = make(map[string]*listenStream)
	return true, func() {
		runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c.OnClose(func(error) { cancel() })
		go b.run(runCtx)
	}
}

func (b *listenBridge) toServer(ctx context.Context, m frame.Message) error {
	ok, start := b.active(ctx, m)
	if !ok {
		return b.next.ToServer.Handle(ctx, m)
	}
	if start != nil {
		if m.Kind() != frame.Request {
			// The host's notifications/initialized goes first: its
			// listen follows it.
			err := b.next.ToServer.Handle(ctx, m)
			start()
			return err
		}
		start() // a request may take long: the listen does not wait for it
	}
	if m.Kind() == frame.Request {
		switch m.Method() {
		case "resources/subscribe":
			return b.subscribe(ctx, m, true)
		case "resources/unsubscribe":
			return b.subscribe(ctx, m, false)
		}
	}
	return b.next.ToServer.Handle(ctx, m)
}

// subscribe answers a resources/subscribe (on) or resources/unsubscribe
// and changes the filter wanted.
func (b *listenBridge) subscribe(ctx context.Context, m frame.Message, on bool) error {
	uri := m.Get("params.uri")
	if uri.Type != gjson.String {
		return b.next.ToClient.Handle(ctx, frame.ErrorResponse(m.ID(), frame.CodeInvalidParams, m.Method()+": params.uri must be a string"))
	}
	b.mu.Lock()
	changed := b.uriSet[uri.Str] != on
	if changed {
		if on {
			b.uriSet[uri.Str] = true
			b.uris = append(b.uris, uri.Raw)
		} else {
			delete(b.uriSet, uri.Str)
			b.uris = dropURI(b.uris, uri.Str)
		}
		b.version++
	}
	b.mu.Unlock()
	if changed {
		select {
		case b.changed <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
	return b.next.ToClient.Handle(ctx, frame.ResultResponse(m.ID(), []byte(`{}`)))
}

// dropURI removes the raw token whose decoded value is uri.
func dropURI(raws []string, uri string) []string {
	out := raws[:0]
	for _, r := range raws {
		if gjson.Parse(r).Str != uri {
			out = append(out, r)
		}
	}
	return out
}

func (b *listenBridge) toClient(ctx context.Context, m frame.Message) error {
	b.mu.Lock()
	started := b.conn != nil
	b.mu.Unlock()
	if !started {
		return b.next.ToClient.Handle(ctx, m)
	}
	switch m.Kind() {
	case frame.Result, frame.Error:
		id := m.Get("id")
		if id.Type == gjson.String && strings.HasPrefix(id.Str, listenIDPrefix) {
			b.ended(m, id.Str)
			return nil
		}
	case frame.Notification:
		sub := m.Get(mcp.ParamsSubscriptionID)
		if sub.Type == gjson.String && strings.HasPrefix(sub.Str, listenIDPrefix) {
			return b.event(ctx, m, sub.Str)
		}
	}
	return b.next.ToClient.Handle(ctx, m)
}

// ended takes the answer to a listen: its final result, or an error.
func (b *listenBridge) ended(m frame.Message, id string) {
	if m.Kind() == frame.Error {
		b.log.Warn("the server refused the listen for list changes", "id", id, "error", m.Get("error.message").String())
		return
	}
	b.log.Debug("the server ended the listen for list changes", "id", id)
}

// event takes a notification of the listen id: the acknowledgement, or
// one to hand the client.
func (b *listenBridge) event(ctx context.Context, m frame.Message, id string) error {
	b.mu.Lock()
	s := b.streams[id]
	if s == nil {
		b.mu.Unlock()
		b.log.Debug("dropped a notification of a listen that is closed", "id", id, "method", m.Method())
		return nil
	}
	if m.Method() == listenAckMethod {
		if b.cur != s {
			if b.cur != nil {
				b.old, b.seen = b.cur, make(map[string]int)
			}
			b.cur = s
		}
		b.mu.Unlock()
		b.log.Debug("listening for list changes", "id", id, "honoured", m.Get("params.notifications").Raw)
		s.ackOnce.Do(func() { close(s.acked) })
		return nil
	}
	b.mu.Unlock()

	out, err := stripSubscriptionID(m)
	if err != nil {
		b.log.Warn("dropped a listen notification that cannot be edited", "id", id, "method", m.Method(), "err", err)
		return nil
	}
	key := string(out.Bytes())
	b.mu.Lock()
	if b.old != nil {
		switch s {
		case b.cur:
			if len(b.seen) < maxOverlapEvents {
				b.seen[key]++
			}
		case b.old:
			if b.seen[key] > 0 {
				b.seen[key]--
				b.mu.Unlock()
				b.log.Debug("dropped the replaced listen's copy of a notification", "id", id, "method", m.Method())
				return nil
			}
		}
	}
	b.mu.Unlock()
	return b.next.ToClient.Handle(ctx, out)
}

// stripSubscriptionID returns m without its _meta subscriptionId, and
// without _meta when nothing else was in it.
func stripSubscriptionID(m frame.Message) (frame.Message, error) {
	out, err := m.Delete(mcp.ParamsSubscriptionID)
	if err != nil {
		return frame.Message{}, err
	}
	if meta := out.Get("params._meta"); meta.IsObject() && len(meta.Map()) == 0 {
		return out.Delete("params._meta")
	}
	return out, nil
}

// wanted returns the filter wanted, its version, and whether it asks for
// anything.
func (b *listenBridge) wanted() (params []byte, version uint64, any bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var f []byte
	add := func(name string, v []byte) {
		if len(f) > 0 {
			f = append(f, ',')
		}
		f = append(f, '"')
		f = append(f, name...)
		f = append(f, `":`...)
		f = append(f, v...)
	}
	if b.kinds.tools {
		add("toolsListChanged", []byte("true"))
	}
	if b.kinds.prompts {
		add("promptsListChanged", []byte("true"))
	}
	if b.kinds.resources {
		add("resourcesListChanged", []byte("true"))
	}
	if len(b.uris) > 0 {
		add("resourceSubscriptions", []byte("["+strings.Join(b.uris, ",")+"]"))
	}
	if len(f) == 0 {
		return nil, b.version, false
	}
	return append(append([]byte(`{"notifications":{`), f...), "}}"...), b.version, true
}

// run keeps one listen open with the filter wanted until ctx ends, and
// then closes every listen and waits for them.
func (b *listenBridge) run(ctx context.Context) {
	var (
		active *listenStream // acknowledged, and not closed by us
		fails  int
		wg     sync.WaitGroup
	)
	defer wg.Wait()
	for ctx.Err() == nil {
		params, version, any := b.wanted()
		switch {
		case active != nil && isClosed(active.done):
			active = nil
			fails++
			b.log.Info("the listen for list changes dropped; opening it again", "wait", b.o.Backoff(fails))
			b.o.Sleep(ctx, b.o.Backoff(fails))
		case active != nil && active.version == version:
			select {
			case <-ctx.Done():
			case <-b.changed:
			case <-active.done:
			}
		case !any:
			if active != nil {
				active.cancel()
				<-active.done
				active = nil
			}
			select {
			case <-ctx.Done():
			case <-b.changed:
			}
		default:
			s := b.open(ctx, &wg, params, version)
			select {
			case <-ctx.Done():
			case <-s.acked:
			case <-s.done:
			}
			if isClosed(s.acked) {
				fails = 0
				if active != nil {
					active.cancel()
					<-active.done
				}
				active = s
				continue
			}
			if ctx.Err() != nil {
				break
			}
			s.cancel()
			fails++
			b.log.Warn("could not open the listen for list changes; trying again", "wait", b.o.Backoff(fails))
			b.o.Sleep(ctx, b.o.Backoff(fails))
		}
	}
}

// open sends a listen with params on a goroutine of its own.
func (b *listenBridge) open(ctx context.Context, wg *sync.WaitGroup, params []byte, version uint64) *listenStream {
	id := b.ids.Mint(listenStage)
	sctx, cancel := context.WithCancel(ctx)
	s := &listenStream{
		id:      strings.Trim(string(id), `"`),
		version: version,
		cancel:  cancel,
		acked:   make(chan struct{}),
		done:    make(chan struct{}),
	}
	req := frame.MustParse(`{"jsonrpc":"2.0","id":` + string(id) + `,"method":"` + listenMethod + `","params":` + string(params) + `}`)
	b.mu.Lock()
	b.streams[s.id] = s
	b.mu.Unlock()
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(s.done)
		defer cancel()
		err := b.next.ToServer.Handle(sctx, req)
		if err != nil && sctx.Err() == nil {
			b.log.Debug("the listen for list changes failed", "id", s.id, "err", err)
		}
		b.mu.Lock()
		delete(b.streams, s.id)
		if b.cur == s {
			b.cur = nil
		}
		if b.old == s || b.cur == nil {
			b.old, b.seen = nil, nil
		}
		b.mu.Unlock()
	}()
	return s
}

// isClosed reports whether ch is closed.
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
