package transport

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Auto speaks Streamable HTTP and falls back to the HTTP+SSE transport
// (2024-11-05) when the server turns out not to know the former. It is the
// relay's default transport.
//
// Every message goes to Streamable first. When a POST, before any POST has
// succeeded, is answered 405, or 400 or 404 whose body is not a JSON-RPC
// message (a Streamable server that refuses a request says why in
// JSON-RPC; an HTTP+SSE server just does not know the route), Auto switches to
// SSE for good: [Auto.Run] starts the SSE client, and that
// message and every later one are sent there, transparently. Once a
// Streamable POST has been answered with a 2xx, Auto never switches.
//
// Set the fields before first use. The methods are safe for concurrent use;
// several first messages failing at once lead to one switch.
type Auto struct {
	// Streamable is tried first.
	Streamable *StreamableClient
	// SSE takes over after a switch. It must deliver to the same sink.
	SSE *SSEClient
	// Logger receives the switch notice; nil discards it.
	Logger *slog.Logger

	mu       sync.Mutex
	mode     autoMode
	switched chan struct{} // closed at the switch
}

type autoMode uint8

const (
	autoProbing    autoMode = iota // no answer decided the transport yet
	autoStreamable                 // a Streamable POST succeeded
	autoSSE                        // switched to HTTP+SSE
)

// Run waits for the switch and then runs the SSE client until ctx ends
// (see [SSEClient.Run]: it fails when the SSE server sends no endpoint in
// time). Without a switch it just waits for ctx. It returns nil when ctx
// ends. Run must be running for a switch to complete.
func (a *Auto) Run(ctx context.Context) error {
	select {
	case <-a.switchedChan():
		return a.SSE.Run(ctx)
	case <-ctx.Done():
		return nil
	}
}

// Handle sends m with the transport in use; see the type's documentation.
func (a *Auto) Handle(ctx context.Context, m frame.Message) error {
	switch a.current() {
	case autoSSE:
		return a.SSE.Handle(ctx, m)
	case autoStreamable:
		return a.Streamable.Handle(ctx, m)
	}
	status, err := a.Streamable.post(ctx, m)
	if status >= 200 && status <= 299 {
		a.settle(autoStreamable, nil)
		return err
	}
	if st, ok := sseAnswer(err); ok && a.settle(autoSSE, st) == autoSSE {
		return a.SSE.Handle(ctx, m)
	}
	return err
}

// Listen opens Streamable's standalone stream; after a switch it reports
// the 405 a server without one gives.
func (a *Auto) Listen(ctx context.Context, h http.Header, opened func()) (string, error) {
	if a.current() == autoSSE {
		return h.Get(frame.HeaderLastEventID), &frame.StatusError{Code: http.StatusMethodNotAllowed}
	}
	return a.Streamable.Listen(ctx, h, opened)
}

// EndSession ends a Streamable session; after a switch there is none and it
// returns nil.
func (a *Auto) EndSession(ctx context.Context, h http.Header) error {
	if a.current() == autoSSE {
		return nil
	}
	return a.Streamable.EndSession(ctx, h)
}

func (a *Auto) current() autoMode {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mode
}

func (a *Auto) switchedChan() chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.switched == nil {
		a.switched = make(chan struct{})
	}
	return a.switched
}

// settle decides the transport, unless an earlier answer already did, and
// returns the transport in use. refusal is the POST's answer that makes it
// switch to HTTP+SSE.
func (a *Auto) settle(to autoMode, refusal *frame.StatusError) autoMode {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mode != autoProbing {
		return a.mode
	}
	a.mode = to
	if to == autoSSE {
		if a.switched == nil {
			a.switched = make(chan struct{})
		}
		// Should the GET be refused too, the SSE client's StartError
		// names both refusals: the URL is probably wrong.
		a.SSE.fallbackFrom = refusal
		close(a.switched)
		orDiscard(a.Logger).Info("server does not speak Streamable HTTP; switching to HTTP+SSE",
			"status", refusal.Code, "sse_url", a.SSE.URL)
	}
	return a.mode
}

// sseAnswer reports whether err is the answer an HTTP+SSE server
// gives to a Streamable POST: 405, or 400/404 whose body is not a JSON-RPC
// message (a Streamable server refusing a request says why in JSON-RPC).
func sseAnswer(err error) (*frame.StatusError, bool) {
	var st *frame.StatusError
	if !errors.As(err, &st) {
		return nil, false
	}
	switch st.Code {
	case http.StatusMethodNotAllowed:
		return st, true
	case http.StatusBadRequest, http.StatusNotFound:
		m, perr := frame.Parse(st.Body)
		return st, perr != nil || m.Kind() == frame.Invalid
	}
	return nil, false
}
