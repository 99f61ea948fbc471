package mw

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// Limits of [ServeListen] (and [ShareListens]).
const (
	// ListenQueueSize is how many notifications wait for one listen's
	// client; one more ends that listen. The queue takes memory only for
	// what waits.
	ListenQueueSize = 1024
	// MaxListenResourceSubscriptions is how many URIs of one listen's
	// resourceSubscriptions are honoured; the rest are dropped.
	MaxListenResourceSubscriptions = 256
)

// serveListenStage names the minted ids of the resources/subscribe and
// resources/unsubscribe requests ServeListen sends its child.
const serveListenStage = "serve-listen"

// Methods ServeListen reads.
const (
	toolsListChangedMethod     = "notifications/tools/list_changed"
	promptsListChangedMethod   = "notifications/prompts/list_changed"
	resourcesListChangedMethod = "notifications/resources/list_changed"
	resourcesUpdatedMethod     = "notifications/resources/updated"
)

// maxPendingSubscribes bounds the subscribe and unsubscribe requests whose
// answers ServeListen waits for, to learn of a failure; beyond it an
// answer is still swallowed, but a failure goes unreported.
const maxPendingSubscribes = 2048

// maxGoneListens bounds the ids of listens ended without a final response
// whose notifications/cancelled (sent by the Router once their exchange is
// over) ServeListen still swallows.
const maxGoneListens = 16

// ServeListenOptions configures [ServeListen].
type ServeListenOptions struct {
	// MaxListens bounds the listens served on one child at once; 0 means
	// DefaultMaxListens.
	MaxListens int
	// LimitFlag is the flag that sets MaxListens, named in a refusal and
	// its log line; "" means --max-listens, "-" names none (the relay has
	// no such flag).
	LimitFlag string
	// AwaitEnd makes the Handle of a listen return only once the listen
	// has ended and let go of its resources (its resources/unsubscribe
	// sent and answered): nil after its final response was handed on,
	// [frame.ErrCancelled] when the client ended it, and an error that
	// says why when it ended abruptly, for the edge to answer the listen
	// request with. The relay sets it: its chain's Handle of a request
	// runs until the request is answered, and a stdio host learns of an
	// end only from a response. Serve leaves it unset (its Router holds
	// the exchange).
	AwaitEnd bool
	// Inline hands each notification to the listens that want it on the
	// goroutine that delivers it from the server, in the server's order
	// and in the order the listens were made, instead of through each
	// listen's queue: the relay's host reads everything on one stdout,
	// which the server's other messages wait for as well. Nothing is
	// queued, so no listen overflows.
	Inline bool
	// Rand is read once per child for the random part of the ids of the
	// stage's own requests (see [IDMinter.Randomize]); nil means
	// crypto/rand.
	Rand io.Reader
	// CounterIDs mints the ids of the stage's own requests as a plain
	// counter, "mcp-stdio/serve-listen/<n>", and Rand is not read, as the
	// relay's other stages mint theirs: the relay has one client, whose
	// ids never take the reserved prefix ([ReservedIDs]), so there is no
	// one to keep from guessing them.
	CounterIDs bool
	// Logger receives what happens to the listens; nil discards.
	Logger *slog.Logger
}

// ServeListen returns the stage that serves a 2026-07-28 client's
// subscriptions/listen for a child that speaks only the session era, and
// the handle that ends those listens when the gateway shuts down. Serve
// lists the stage in a session-era child's entry chain below the Router
// (see the package documentation), so every request it sees carries an id
// unique on its child; it is a pure message stage: it answers client-bound
// under that id and never writes to an exchange, but for cutting one short
// (below). The Middleware may be built into any number of chains (one per
// child); each build serves its own child, and the handle covers them all.
//
// Listen. A server-bound subscriptions/listen (id L) is never passed on.
// A params.notifications that is not an object gets -32602. Otherwise the
// honoured subset is worked out from the child's initialize result
// ([Conn.ServerInitialize] of [ConnOf]): toolsListChanged,
// promptsListChanged and resourcesListChanged are honoured when requested
// (true) and the child advertises listChanged for that kind; a kind the
// child does not advertise is omitted, since the child would never send
// its notification and the ack would promise what never comes.
// resourceSubscriptions is honoured when it is an array and the child
// advertises resources.subscribe: its non-empty strings, first spelling of
// each value kept, duplicates dropped, at most
// MaxListenResourceSubscriptions, the rest truncated. A listen beyond
// MaxListens on one child, or once the handle is closed, is refused
// with [Refuse] (503 with Retry-After, -32603) before any ack.
//
// Ack. The listen is attached to the child's fan-out first, and then its
// first frame is handed client-bound from Handle:
//
//	{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{<honoured>},"_meta":{"io.modelcontextprotocol/subscriptionId":L}}}
//
// with the honoured kinds in the order toolsListChanged,
// promptsListChanged, resourcesListChanged, resourceSubscriptions ({} when
// nothing is honoured: the listen stays open all the same). Handle returns
// once the ack is handed on (see AwaitEnd for the relay).
//
// Subscribe. After the ack, a goroutine takes the listen's references on
// its URIs: the first reference to a URI on the child sends it
// resources/subscribe, the last one released sends resources/unsubscribe,
// both under ids minted as "mcp-stdio/serve-listen/<random>/<n>" (see
// CounterIDs), whose answers are swallowed. The counts are guarded by a
// lock held across the send, so a URI's subscribe and unsubscribe reach
// the child in order; the stage's other lock (the listens) is only ever
// taken inside it, never the other way round, and the child's reader
// never takes it. A listen released
// before its goroutine ran takes no reference. A subscribe the child
// refuses (an error answer, or a failed send) is logged once per URI per
// listen holding it, and the URI stays honoured.
//
// Events. Client-bound from the child, notifications/tools/list_changed,
// …/prompts/list_changed and …/resources/list_changed go to every listen
// that honours that kind; notifications/resources/updated goes to every
// listen whose resourceSubscriptions holds exactly its params.uri string.
// Each copy has L set at params._meta["io.modelcontextprotocol/subscriptionId"],
// every other byte kept, and waits in that listen's queue (ListenQueueSize)
// for a goroutine that hands it client-bound, so a slow client never holds
// the child's reader (Inline hands it on at once instead). These four notifications go no further: the stage
// swallows them, whether a listen wanted them or not. Every other message
// passes both ways untouched; notifications/message in particular never
// reaches a listen.
//
// Endings. The first one wins; the stage never sends notifications/cancelled.
//   - Graceful: [ListenStreams.Close] at gateway shutdown. What is queued
//     is handed on, then the final response
//     {"jsonrpc":"2.0","id":L,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":L}}},
//     which ends the exchange (the Router's business).
//   - Abrupt: the child ends ([Conn.OnClose]), a listen's queue
//     overflows, or [ListenStreams.Interrupt]. No final frame: the
//     exchange of the listen request is cut ([Exchange.Cut] of
//     [ExchangeOf] its context; with none, as in the relay or a test, the
//     listen is only forgotten). The Router's notifications/cancelled
//     that follows is swallowed (for the last 16 listens so ended).
//   - The client: a server-bound notifications/cancelled naming L (the
//     Router sends it when the client closed the stream), or the end of
//     the listen request's context, releases the listen; the notification
//     is swallowed.
//
// With ServeListenOptions.AwaitEnd (the relay), the listen's Handle
// returns only at its end, saying which: nil after the final response,
// the reason of an abrupt end (the edge answers the listen with it, an
// error the host can tell from the final result), frame.ErrCancelled
// for the client's (no answer is due).
//
// Every ending but the child's releases the listen's URI references (see
// Subscribe). Every goroutine of the stage ends with its listen, or after
// its sends to the child once the child is gone.
func ServeListen(o ServeListenOptions) (Middleware, *ListenStreams) {
	if o.MaxListens <= 0 {
		o.MaxListens = DefaultMaxListens
	}
	ctl := &ListenStreams{stages: make(map[*serveListen]struct{})}
	log := loggerOrDiscard(o.Logger)
	return func(next Duplex) Duplex {
		st := &serveListen{
			next:     next,
			log:      log,
			ctl:      ctl,
			max:      o.MaxListens,
			flag:     o.LimitFlag,
			awaitEnd: o.AwaitEnd,
			inline:   o.Inline,
			refs:     make(map[string]int),
			streams:  make(map[frame.ID]*servedListen),
			pending:  make(map[frame.ID]string),
		}
		if !o.CounterIDs {
			if err := st.ids.Randomize(o.Rand); err != nil {
				log.Error("the ids minted for this server are a plain counter", "err", err)
			}
		}
		return Duplex{ToServer: HandlerFunc(st.toServer), ToClient: HandlerFunc(st.toClient)}
	}, ctl
}

// ListenStreams is the handle of the listens a [ServeListen] serves, on
// every child its Middleware was built for. Serve's pool closes it when
// the gateway shuts down, before it stops the children.
type ListenStreams struct {
	mu     sync.Mutex
	closed bool
	stages map[*serveListen]struct{}
}

// Close ends every listen gracefully (see [ServeListen]) and has later
// listens refused. It returns once every final response has been handed
// on, or when ctx ends, returning its error: the listens not finished then
// are ended abruptly.
func (l *ListenStreams) Close(ctx context.Context) error {
	l.mu.Lock()
	l.closed = true
	stages := make([]*serveListen, 0, len(l.stages))
	for st := range l.stages {
		stages = append(stages, st)
	}
	l.mu.Unlock()
	var ending []*servedListen
	for _, st := range stages {
		ending = append(ending, st.endGracefully()...)
	}
	for i, s := range ending {
		select {
		case <-s.done:
		case <-ctx.Done():
			for _, s := range ending[i:] {
				s.st.end(s, errListenShutdown)
			}
			return ctx.Err()
		}
	}
	return nil
}

// serveListen is one ServeListen stage: the listens of one child.
//
// Locks: subMu, then mu, never the other way round. subMu guards refs,
// and the held and tornDown of every listen, and is held across the sends
// of subscribe and unsubscribe; mu guards the rest.
type serveListen struct {
	next     Duplex
	log      *slog.Logger
	ctl      *ListenStreams
	max      int
	flag     string
	awaitEnd bool
	inline   bool
	ids      IDMinter

	subMu sync.Mutex
	refs  map[string]int // references on each URI, by its decoded value

	// bg counts the goroutines taking and letting go of references.
	bg sync.WaitGroup

	mu      sync.Mutex
	started bool
	made    uint64 // listens made, for their order (inline)
	// run is the context of the stage's own requests to the child: it
	// ends with the child.
	run       context.Context
	cancelRun context.CancelFunc
	streams   map[frame.ID]*servedListen // by L, until gone
	gone      []frame.ID                 // listens cut, whose cancel is due
	pending   map[frame.ID]string        // subscribes in flight: the URI
}

// listenState is where a listen is in its life.
type listenState uint8

const (
	listenLive     listenState = iota
	listenGraceful             // its final response is on its way
	listenGone
)

// servedListen is one listen ServeListen serves.
type servedListen struct {
	st    *serveListen
	id    frame.ID
	ctx   context.Context // the listen request's: its exchange
	kinds listenKinds
	uris  []listenURI
	set   map[string]bool // uris by decoded value

	q        fanQueue
	graceful chan struct{} // closed to end it gracefully
	dctx     context.Context
	stop     context.CancelFunc
	done     chan struct{} // closed when nothing delivers for it any more
	released chan struct{} // closed once its URI references are let go
	// sendMu, inline, is held while a message is handed to the listen's
	// client: from its attachment to its ack, and for each notification
	// and its final response, so that none overtakes another.
	sendMu sync.Mutex
	seq    uint64 // its place among the stage's listens (inline)

	// Guarded by st.mu.
	state      listenState
	delivering bool
	failLogged map[string]bool
	// why is what ended it abruptly (its exchange cut), nil otherwise;
	// completed says its final response was handed on.
	why       error
	completed bool

	// Guarded by st.subMu.
	held, tornDown bool
}

// listenURI is one URI of a listen: its JSON token and decoded value.
type listenURI struct{ raw, str string }

func (st *serveListen) toServer(ctx context.Context, m frame.Message) error {
	switch {
	case m.Kind() == frame.Request && m.Method() == listenMethod:
		return st.listen(ctx, m)
	case m.Kind() == frame.Notification && m.Method() == cancelMethod:
		if id, ok := cancelledRequestID(m); ok && st.cancelled(id) {
			return nil
		}
	}
	return st.next.ToServer.Handle(ctx, m)
}

// listen serves a subscriptions/listen.
func (st *serveListen) listen(ctx context.Context, m frame.Message) error {
	id := m.ID()
	req := m.Get("params.notifications")
	if !req.IsObject() {
		return st.next.ToClient.Handle(ctx, frame.ErrorResponse(id, frame.CodeInvalidParams, listenMethod+": params.notifications must be an object"))
	}
	s := st.newListen(ctx, id, req)
	if st.inline {
		s.sendMu.Lock() // nothing overtakes the ack
	}
	if err := st.attach(ctx, s); err != nil {
		st.unlockSend(s)
		s.stop()
		return err
	}
	ack := s.ack()
	err := st.next.ToClient.Handle(ctx, ack)
	st.unlockSend(s)
	if err != nil {
		st.end(s, nil)
		return err
	}
	st.log.Debug("acknowledged a listen", "listen", id, "honoured", ack.Get("params.notifications").Raw)
	st.mu.Lock()
	if s.state == listenGone {
		st.mu.Unlock()
		return st.ended(ctx, s)
	}
	s.delivering = true
	st.mu.Unlock()
	go st.deliver(s)
	if len(s.uris) > 0 {
		st.bg.Go(func() { st.subscribe(s) })
	}
	return st.ended(ctx, s)
}

// unlockSend lets go of s's sendMu, which listen holds inline until the
// ack is handed on.
func (st *serveListen) unlockSend(s *servedListen) {
	if st.inline {
		s.sendMu.Unlock()
	}
}

// ended returns what the Handle of listen s returns once it has been
// acknowledged: nil at once, unless the stage awaits the end
// (ServeListenOptions.AwaitEnd); then, once s has ended and let go of
// its URIs, nil after its final response, the error that ended it
// abruptly, or the client's doing.
func (st *serveListen) ended(ctx context.Context, s *servedListen) error {
	if !st.awaitEnd {
		return nil
	}
	<-s.done
	<-s.released
	st.mu.Lock()
	completed, why := s.completed, s.why
	st.mu.Unlock()
	switch {
	case completed:
		return nil
	case why != nil:
		return why
	case ctx.Err() != nil:
		return context.Cause(ctx)
	}
	return frame.ErrCancelled // the client's notifications/cancelled
}

// newListen works out what a listen honours.
func (st *serveListen) newListen(ctx context.Context, id frame.ID, req gjson.Result) *servedListen {
	var caps gjson.Result
	if c := ConnOf(ctx); c != nil {
		if init, ok := c.ServerInitialize(); ok {
			caps = init.Get("result.capabilities")
		}
	}
	honour := func(asked, cap string) bool {
		return req.Get(asked).Type == gjson.True && caps.Get(cap).Type == gjson.True
	}
	s := &servedListen{
		st:  st,
		id:  id,
		ctx: ctx,
		kinds: listenKinds{
			tools:     honour("toolsListChanged", "tools.listChanged"),
			prompts:   honour("promptsListChanged", "prompts.listChanged"),
			resources: honour("resourcesListChanged", "resources.listChanged"),
		},
		graceful: make(chan struct{}),
		done:     make(chan struct{}),
		released: make(chan struct{}),
	}
	s.q.init()
	if subs := req.Get("resourceSubscriptions"); subs.IsArray() && ServesResourceSubscriptions(caps) {
		s.set = make(map[string]bool)
		s.uris = []listenURI{}
		for _, u := range subs.Array() {
			if len(s.uris) == MaxListenResourceSubscriptions {
				st.log.Debug("a listen's resourceSubscriptions are truncated", "listen", id, "honoured", MaxListenResourceSubscriptions)
				break
			}
			if u.Type != gjson.String || u.Str == "" || s.set[u.Str] {
				continue
			}
			s.set[u.Str] = true
			s.uris = append(s.uris, listenURI{raw: u.Raw, str: u.Str})
		}
	}
	s.dctx, s.stop = context.WithCancel(ctx)
	return s
}

// ack returns the listen's acknowledgement.
func (s *servedListen) ack() frame.Message {
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","method":"` + listenAckMethod + `","params":{"notifications":{`)
	sep := ""
	add := func(name, v string) {
		b.WriteString(sep + `"` + name + `":` + v)
		sep = ","
	}
	if s.kinds.tools {
		add("toolsListChanged", "true")
	}
	if s.kinds.prompts {
		add("promptsListChanged", "true")
	}
	if s.kinds.resources {
		add("resourcesListChanged", "true")
	}
	if s.uris != nil {
		raws := make([]string, len(s.uris))
		for i, u := range s.uris {
			raws[i] = u.raw
		}
		add("resourceSubscriptions", "["+strings.Join(raws, ",")+"]")
	}
	b.WriteString(`},"_meta":{"` + mcp.MetaSubscriptionID + `":` + string(s.id) + `}}}`)
	return frame.MustParse(b.String())
}

// final returns the listen's graceful last frame.
func (s *servedListen) final() frame.Message { return listenFinal(s.id) }

// listenFinal returns the graceful last frame of the listen id: its
// response, naming it as the subscription it ends.
func listenFinal(id frame.ID) frame.Message {
	return frame.MustParse(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"resultType":"complete","_meta":{"` + mcp.MetaSubscriptionID + `":` + string(id) + `}}}`)
}

// attach adds s to the child's fan-out, or refuses it.
func (st *serveListen) attach(ctx context.Context, s *servedListen) error {
	conn, err := st.attachLocked(ctx, s)
	if conn != nil {
		// Outside the locks: a Conn closed already runs childGone at once.
		conn.OnClose(func(error) { st.childGone() })
	}
	return err
}

// attachLocked is attach under the handle's lock; it returns the Conn to
// watch when s is the stage's first listen.
func (st *serveListen) attachLocked(ctx context.Context, s *servedListen) (*Conn, error) {
	st.ctl.mu.Lock()
	defer st.ctl.mu.Unlock()
	if st.ctl.closed {
		return nil, Refuse(503, s.id, frame.CodeInternalError, "the gateway is shutting down")
	}
	st.mu.Lock()
	live := 0
	for _, o := range st.streams {
		if o.state == listenLive {
			live++
		}
	}
	if live >= st.max {
		st.mu.Unlock()
		flag := st.flag
		if flag == "" {
			flag = "--max-listens"
		}
		if flag == "-" {
			st.log.Warn("refused a listen: the server has as many listeners as the gateway serves; end one first", "listen", s.id, "max", st.max)
			return nil, Refuse(503, s.id, frame.CodeInternalError,
				fmt.Sprintf("this server already has %d listeners, the most the gateway serves; end one, or try again later", st.max))
		}
		st.log.Warn("refused a listen: the server has as many listeners as it may; raise "+flag, "listen", s.id, "max", st.max)
		return nil, Refuse(503, s.id, frame.CodeInternalError,
			fmt.Sprintf("this server already has %d listeners, the most the gateway allows (%s); try again later", st.max, flag))
	}
	first := !st.started
	var conn *Conn
	if first {
		st.started = true
		conn = ConnOf(ctx)
		st.run, st.cancelRun = context.WithCancel(WithExchange(context.WithoutCancel(ctx), nil))
	}
	st.made++
	s.seq = st.made
	st.streams[s.id] = s
	st.mu.Unlock()
	if first {
		st.ctl.stages[st] = struct{}{}
	}
	return conn, nil
}

// Why a listen ended abruptly: what the Handle of a listen returns with
// ServeListenOptions.AwaitEnd, for the edge to answer it with.
var (
	errListenServerGone = errors.New("the listen ended: the connection to the server ended")
	errListenShutdown   = errors.New("the listen ended: the gateway shut down before it could end it gracefully")
	errListenOverflow   = fmt.Errorf("the listen ended: its notifications came faster than the client read them (%d waiting); listen again", ListenQueueSize)
)

// Interrupt ends every listen now, abruptly, with why (what the Handle of
// a listen returns under ServeListenOptions.AwaitEnd), and keeps serving
// new ones: the server forgot what they had it do. Their URI references
// are dropped without resources/unsubscribe, since the server holds none
// any more; the next listens subscribe anew. The relay calls it when the
// server's session is re-established: the new session has none of the
// old one's subscriptions, and the host, told its listen ended, listens
// again (and lists again what it may have missed meanwhile).
func (l *ListenStreams) Interrupt(why error) {
	l.mu.Lock()
	stages := make([]*serveListen, 0, len(l.stages))
	for st := range l.stages {
		stages = append(stages, st)
	}
	l.mu.Unlock()
	for _, st := range stages {
		st.interrupt(why)
	}
}

// interrupt is Interrupt for one stage.
func (st *serveListen) interrupt(why error) {
	st.subMu.Lock()
	st.mu.Lock()
	var live []*servedListen
	for _, s := range st.streams {
		if s.state == listenLive {
			live = append(live, s)
		}
		s.held, s.tornDown = false, true // what they held is gone
	}
	st.mu.Unlock()
	clear(st.refs)
	st.subMu.Unlock()
	for _, s := range live {
		st.log.Info("ended a listen: "+why.Error(), "listen", s.id)
		st.end(s, why)
	}
}

// childGone ends every listen abruptly: the child is gone.
func (st *serveListen) childGone() {
	st.ctl.mu.Lock()
	delete(st.ctl.stages, st)
	st.ctl.mu.Unlock()
	st.mu.Lock()
	st.cancelRun()
	all := make([]*servedListen, 0, len(st.streams))
	for _, s := range st.streams {
		all = append(all, s)
	}
	st.mu.Unlock()
	for _, s := range all {
		st.end(s, errListenServerGone)
	}
}

// endGracefully starts the graceful end of every live listen and returns
// them.
func (st *serveListen) endGracefully() []*servedListen {
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []*servedListen
	for _, s := range st.streams {
		if s.state == listenLive {
			s.state = listenGraceful
			close(s.graceful)
			out = append(out, s)
		}
	}
	return out
}

// end ends s abruptly, unless it has ended: it stops delivering, cuts its
// exchange when why says what ended it (nil: the client did), and
// releases its URI references.
func (st *serveListen) end(s *servedListen, why error) {
	cut := why != nil
	st.mu.Lock()
	if s.state == listenGone {
		st.mu.Unlock()
		return
	}
	s.state = listenGone
	s.why = why
	delete(st.streams, s.id)
	st.gone = append(st.gone, s.id) // for the Router's cancel, when it comes
	if len(st.gone) > maxGoneListens {
		st.gone = st.gone[1:]
	}
	if !s.delivering {
		close(s.done)
	}
	st.mu.Unlock()
	s.stop()
	if cut {
		if x := ExchangeOf(s.ctx); x != nil {
			x.Cut()
		}
	}
	st.bg.Go(func() { st.release(s) })
}

// cancelled takes the client's cancel of request id, reporting whether it
// named a listen.
func (st *serveListen) cancelled(id frame.ID) bool {
	st.mu.Lock()
	s := st.streams[id]
	st.mu.Unlock()
	if s != nil {
		st.log.Debug("the client closed a listen", "listen", id)
		st.end(s, nil)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for i, g := range st.gone {
		if g == id {
			st.gone = append(st.gone[:i], st.gone[i+1:]...)
			return true
		}
	}
	return false
}

// deliver hands s's queued notifications client-bound, in order, until s
// ends; on a graceful end, what is queued and then the final response.
func (st *serveListen) deliver(s *servedListen) {
	defer close(s.done)
	send := func(m frame.Message) bool {
		if err := st.next.ToClient.Handle(s.dctx, m); err != nil {
			if s.dctx.Err() == nil {
				st.log.Debug("a listen's client cannot be reached", "listen", s.id, "err", err)
			}
			st.end(s, fmt.Errorf("the listen's client cannot be reached: %w", err))
			return false
		}
		return true
	}
	for {
		select {
		case <-s.dctx.Done():
			st.end(s, nil)
			return
		case <-s.q.wake:
			for _, m := range s.q.take() {
				if !send(m) {
					return
				}
			}
		case <-s.graceful:
			if st.inline {
				s.sendMu.Lock() // after the notification being handed on, if any
				defer s.sendMu.Unlock()
			}
			for _, m := range s.q.take() {
				if !send(m) {
					return
				}
			}
			if !send(s.final()) {
				return
			}
			st.mu.Lock()
			ended := s.state == listenGone
			s.state = listenGone
			s.completed = !ended
			delete(st.streams, s.id)
			st.mu.Unlock()
			s.stop()
			if !ended {
				st.bg.Go(func() { st.release(s) })
			}
			return
		}
	}
}

// subscribe takes s's references on its URIs.
func (st *serveListen) subscribe(s *servedListen) {
	st.subMu.Lock()
	defer st.subMu.Unlock()
	if s.tornDown {
		return
	}
	s.held = true
	for _, u := range s.uris {
		st.refs[u.str]++
		if st.refs[u.str] == 1 {
			st.call("resources/subscribe", u)
		}
	}
}

// release lets go of s's references on its URIs. It runs once per
// listen.
func (st *serveListen) release(s *servedListen) {
	defer close(s.released)
	st.subMu.Lock()
	defer st.subMu.Unlock()
	s.tornDown = true
	if !s.held {
		return
	}
	s.held = false
	for _, u := range s.uris {
		st.refs[u.str]--
		if st.refs[u.str] <= 0 {
			delete(st.refs, u.str)
			st.call("resources/unsubscribe", u)
		}
	}
}

// call sends the child method for u under a minted id; subMu is held.
// Nothing is sent once the child is gone.
func (st *serveListen) call(method string, u listenURI) {
	st.mu.Lock()
	run := st.run
	st.mu.Unlock()
	if run.Err() != nil {
		return
	}
	id := st.ids.Mint(serveListenStage)
	subscribe := method == "resources/subscribe"
	if subscribe {
		st.mu.Lock()
		if len(st.pending) < maxPendingSubscribes {
			st.pending[id] = u.str
		}
		st.mu.Unlock()
	}
	req := frame.MustParse(`{"jsonrpc":"2.0","id":` + string(id) + `,"method":"` + method + `","params":{"uri":` + u.raw + `}}`)
	if err := st.next.ToServer.Handle(run, req); err != nil {
		if subscribe {
			st.mu.Lock()
			delete(st.pending, id)
			st.mu.Unlock()
			st.subscribeFailed(u.str, err.Error())
			return
		}
		st.log.Debug("could not unsubscribe the child from a resource", "uri", u.str, "err", err)
	}
}

// subscribeFailed logs a failed subscribe to uri once for each listen
// that holds it.
func (st *serveListen) subscribeFailed(uri, why string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, s := range st.streams {
		if !s.set[uri] || s.failLogged[uri] {
			continue
		}
		if s.failLogged == nil {
			s.failLogged = make(map[string]bool)
		}
		s.failLogged[uri] = true
		st.log.Warn("the child did not subscribe to a resource; the listen keeps it, updates may not come", "listen", s.id, "uri", uri, "error", why)
	}
}

func (st *serveListen) toClient(ctx context.Context, m frame.Message) error {
	switch m.Kind() {
	case frame.Notification:
		switch m.Method() {
		case toolsListChangedMethod:
			st.fanOut(ctx, m, func(s *servedListen) bool { return s.kinds.tools })
			return nil
		case promptsListChangedMethod:
			st.fanOut(ctx, m, func(s *servedListen) bool { return s.kinds.prompts })
			return nil
		case resourcesListChangedMethod:
			st.fanOut(ctx, m, func(s *servedListen) bool { return s.kinds.resources })
			return nil
		case resourcesUpdatedMethod:
			if uri := m.Get("params.uri"); uri.Type == gjson.String {
				st.fanOut(ctx, m, func(s *servedListen) bool { return s.set[uri.Str] })
			}
			return nil
		}
	case frame.Result, frame.Error:
		if st.answered(m) {
			return nil
		}
	}
	return st.next.ToClient.Handle(ctx, m)
}

// answered takes the child's answer to one of the stage's own requests,
// reporting whether m was one.
func (st *serveListen) answered(m frame.Message) bool {
	id := m.ID()
	if !strings.HasPrefix(string(id), MintedIDPrefix+serveListenStage+"/") {
		return false
	}
	st.mu.Lock()
	uri, ok := st.pending[id]
	delete(st.pending, id)
	st.mu.Unlock()
	if ok && m.Kind() == frame.Error {
		st.subscribeFailed(uri, m.Get("error.message").String())
	}
	return true
}

// fanOut queues m, stamped, for every live listen that wants it; a listen
// whose queue is full ends abruptly. Inline, it hands the copies on
// instead, in the order the listens were made.
func (st *serveListen) fanOut(ctx context.Context, m frame.Message, wants func(*servedListen) bool) {
	var over []*servedListen
	var now []listenCopy
	st.mu.Lock()
	for _, s := range st.streams {
		if s.state != listenLive || !wants(s) {
			continue
		}
		out, err := m.Set(mcp.ParamsSubscriptionID, s.id.Raw())
		if err != nil {
			st.log.Debug("dropped a notification that cannot be stamped", "listen", s.id, "method", m.Method(), "err", err)
			continue
		}
		if st.inline {
			now = append(now, listenCopy{s, out})
			continue
		}
		if !s.q.push(out, ListenQueueSize) {
			over = append(over, s)
		}
	}
	st.mu.Unlock()
	for _, s := range over {
		st.log.Warn("ended a listen whose client does not keep up", "listen", s.id, "queued", ListenQueueSize)
		st.end(s, errListenOverflow)
	}
	slices.SortFunc(now, func(a, b listenCopy) int { return cmp.Compare(a.s.seq, b.s.seq) })
	for _, c := range now {
		st.handOn(ctx, c.s, c.m)
	}
}

// listenCopy is a notification stamped for listen s.
type listenCopy struct {
	s *servedListen
	m frame.Message
}

// handOn hands m to listen s's client at once (inline), unless s has
// ended or is ending; a client that cannot be reached ends it.
func (st *serveListen) handOn(ctx context.Context, s *servedListen, m frame.Message) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	st.mu.Lock()
	live := s.state == listenLive
	st.mu.Unlock()
	if !live {
		return
	}
	if err := st.next.ToClient.Handle(ctx, m); err != nil && s.dctx.Err() == nil {
		st.log.Debug("a listen's client cannot be reached", "listen", s.id, "err", err)
		st.end(s, fmt.Errorf("the listen's client cannot be reached: %w", err))
	}
}

// ServesResourceSubscriptions reports whether [ServeListen] honours a
// listen's resourceSubscriptions for a child with these capabilities (its
// initialize result's): when the child advertises resources.subscribe.
// [LocalDiscover] keeps the flag for such a child
// (LocalDiscoverOptions.KeepResourceSubscribe).
func ServesResourceSubscriptions(capabilities gjson.Result) bool {
	return capabilities.Get("resources.subscribe").Type == gjson.True
}
