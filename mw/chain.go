package mw

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Handler accepts one message. See the package documentation for the
// contract.
type Handler interface {
	Handle(ctx context.Context, m frame.Message) error
}

// HandlerFunc adapts a function to [Handler].
type HandlerFunc func(ctx context.Context, m frame.Message) error

// Handle calls f(ctx, m).
func (f HandlerFunc) Handle(ctx context.Context, m frame.Message) error { return f(ctx, m) }

// Duplex is a stage's pair of handlers. Given to a [Middleware] it holds the
// stage's exits: ToServer delivers toward the server (the next stage in),
// ToClient delivers toward the client (the next stage out). Returned from a
// Middleware it holds the stage's entries.
type Duplex struct {
	ToServer Handler
	ToClient Handler
}

// Middleware builds one stage around the exits it is given and returns the
// stage's entries. It is called once per pipeline (once per session in
// serve). The stage may keep next.ToClient while it is built but must not
// call it before the pipeline runs: the outer stages are bound afterwards.
type Middleware func(next Duplex) Duplex

// Chain stacks ms into one Middleware, ms[0] nearest the client. Server-bound
// traffic falls through ms[0], ms[1], …; client-bound traffic climbs back up
// in reverse. A nil entry is skipped, so optional stages can be listed
// inline.
func Chain(ms ...Middleware) Middleware {
	return func(next Duplex) Duplex {
		var stages []Middleware
		for _, m := range ms {
			if m != nil {
				stages = append(stages, m)
			}
		}
		if len(stages) == 0 {
			return next
		}
		// Build from the inside out. Each stage's client exit is bound late,
		// once the stage outside it exists.
		exits := make([]*lateHandler, len(stages))
		entries := make([]Duplex, len(stages))
		inner := next.ToServer
		for i := len(stages) - 1; i >= 0; i-- {
			exits[i] = &lateHandler{}
			entries[i] = stages[i](Duplex{ToServer: inner, ToClient: exits[i]})
			inner = entries[i].ToServer
		}
		exits[0].set(next.ToClient)
		for i := 1; i < len(stages); i++ {
			exits[i].set(entries[i-1].ToClient)
		}
		return Duplex{ToServer: entries[0].ToServer, ToClient: entries[len(stages)-1].ToClient}
	}
}

// lateHandler forwards to a handler bound after construction.
type lateHandler struct {
	h atomic.Pointer[Handler]
}

func (l *lateHandler) set(h Handler) {
	if h == nil {
		h = Discard()
	}
	l.h.Store(&h)
}

func (l *lateHandler) Handle(ctx context.Context, m frame.Message) error {
	h := l.h.Load()
	if h == nil {
		return errUnbound
	}
	return (*h).Handle(ctx, m)
}

// Late is a Handler whose target is bound after construction, for wiring a
// transport (which must be built before the chain) to the chain's
// client-bound entry (which exists only after). Handle before Bind fails.
type Late struct{ lateHandler }

// Bind sets the handler Late forwards to.
func (l *Late) Bind(h Handler) { l.set(h) }

type unboundError struct{}

func (unboundError) Error() string { return "mw: handler used before the pipeline was bound" }

var errUnbound error = unboundError{}

// Discard returns a Handler that accepts every message and drops it.
func Discard() Handler {
	return HandlerFunc(func(context.Context, frame.Message) error { return nil })
}

// Passthrough is the Middleware that does nothing; a stage that is turned
// off can be replaced by it.
func Passthrough(next Duplex) Duplex { return next }

// ServerBound returns a Middleware that acts on server-bound traffic only;
// f receives the inner ToServer exit and returns the stage's entry.
// Client-bound traffic passes untouched.
func ServerBound(f func(next Handler) Handler) Middleware {
	return func(next Duplex) Duplex {
		return Duplex{ToServer: f(next.ToServer), ToClient: next.ToClient}
	}
}

// ClientBound returns a Middleware that acts on client-bound traffic only;
// f receives the outer ToClient exit and returns the stage's entry.
// Server-bound traffic passes untouched.
func ClientBound(f func(next Handler) Handler) Middleware {
	return func(next Duplex) Duplex {
		return Duplex{ToServer: next.ToServer, ToClient: f(next.ToClient)}
	}
}

// MintedIDPrefix starts the JSON string of every id a stage mints. Client ids
// with this prefix are refused at the edge of the relay, so minted ids never
// collide with a client's.
const MintedIDPrefix = `"mcp-stdio/`

// IDMinter mints ids for messages a stage originates. The zero value is ready
// to use and safe for concurrent use; it mints a counter, which whoever
// sees one id can guess the next from. [IDMinter.Randomize] puts a random
// part before the counter, for ids minted toward a server many clients
// share.
type IDMinter struct {
	n    atomic.Uint64
	salt string // "" or "<random>/"
}

// IDRandomBytes is how many random bytes [IDMinter.Randomize] reads: 96
// bits, 16 characters of unpadded base64url in every id.
const IDRandomBytes = 12

// Randomize has g mint "mcp-stdio/<stage>/<random>/<n>" from now on, with
// <random> the unpadded base64url of IDRandomBytes bytes read from r (nil
// means crypto/rand): no one can guess an id of g's from another g's, nor
// from a counter alone. Call it before g mints, from one goroutine. It
// fails only when r does.
func (g *IDMinter) Randomize(r io.Reader) error {
	if r == nil {
		r = rand.Reader
	}
	var b [IDRandomBytes]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return fmt.Errorf("mw: reading the random part of minted ids: %w", err)
	}
	g.salt = base64.RawURLEncoding.EncodeToString(b[:]) + "/"
	return nil
}

// Mint returns a fresh id, the JSON string "mcp-stdio/<stage>/<n>", or
// "mcp-stdio/<stage>/<random>/<n>" once g is randomized; it allocates the
// id's bytes and nothing else.
func (g *IDMinter) Mint(stage string) frame.ID {
	n := g.n.Add(1)
	var buf [80]byte
	b := append(buf[:0], MintedIDPrefix...)
	b = append(b, stage...)
	b = append(b, '/')
	b = append(b, g.salt...)
	b = strconv.AppendUint(b, n, 10)
	b = append(b, '"')
	return frame.ID(b)
}

// IsMinted reports whether id was minted by a stage.
func IsMinted(id frame.ID) bool { return strings.HasPrefix(string(id), MintedIDPrefix) }
