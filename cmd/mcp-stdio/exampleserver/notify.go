package exampleserver

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Messages the server sends on its own: progress, log messages, change
// notifications and requests to the client.

// listener is an open subscriptions/listen and the notifications it
// honours.
type listener struct {
	id                        frame.ID
	tools, prompts, resources bool
	uris                      map[string]bool
}

// subscriptionMeta is the _meta that ties a notification or result to the
// listen with request id id.
func subscriptionMeta(id frame.ID) object {
	return object{metaSubscriptionID: json.RawMessage(id.Raw())}
}

// toolsChanged announces that the tool list changed: as a plain
// notification unless the connection is on 2026-07-28, and on every listen
// that asked for it.
func (s *server) toolsChanged() {
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	if s.connEra() != eraStateless {
		s.send(notification("notifications/tools/list_changed", nil))
	}
	for _, l := range s.listeners {
		if l.tools {
			s.send(notification("notifications/tools/list_changed", object{"_meta": subscriptionMeta(l.id)}))
		}
	}
}

// resourceUpdated announces that the resource uri changed, to session-era
// subscribers and to the listens that watch it.
func (s *server) resourceUpdated(uri string) {
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	if s.subscribed[uri] {
		s.send(notification("notifications/resources/updated", object{"uri": uri}))
	}
	for _, l := range s.listeners {
		if l.uris[uri] {
			s.send(notification("notifications/resources/updated", object{"uri": uri, "_meta": subscriptionMeta(l.id)}))
		}
	}
}

// progress reports progress on req when it carries a progress token. The
// token is echoed as the exact bytes the client sent.
func (s *server) progress(req *request, done, total float64, message string) {
	tok := req.params.Get("_meta.progressToken")
	if tok.Type != gjson.String && tok.Type != gjson.Number {
		return
	}
	s.send(notification("notifications/progress", object{
		"progressToken": json.RawMessage(tok.Raw),
		"progress":      done,
		"total":         total,
		"message":       message,
	}))
}

// clientLog sends a notifications/message when the client asked for this
// level: with logging/setLevel on a session-era connection, with the
// request's _meta logLevel on a 2026-07-28 request.
func (s *server) clientLog(req *request, level string, data any) {
	var threshold string
	if req.stateless {
		threshold = req.params.Get(pathLogLevel()).String()
	} else {
		s.mu.Lock()
		threshold = s.logLevel
		s.mu.Unlock()
	}
	at := slices.Index(logLevels, threshold)
	if at < 0 || slices.Index(logLevels, level) < at {
		return
	}
	s.send(notification("notifications/message", object{"level": level, "logger": s.opts.Name, "data": data}))
}

// requestClient sends the client a request (session era only) and waits for
// its response. ok is false when no answer can come: stdin ended, or too
// many requests already wait on the client. While it waits, the handler
// gives its slot back, because the answer arrives through the read loop.
// When ctx ends first, the client is told with notifications/cancelled.
func (s *server) requestClient(ctx context.Context, req *request, method string, params any) (reply frame.Message, ok bool, err error) {
	select {
	case s.parked <- struct{}{}:
		defer func() { <-s.parked }()
	default:
		s.log.Warn("too many requests waiting on the client", "method", method)
		return frame.Message{}, false, nil
	}
	ch := make(chan frame.Message, 1)
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return frame.Message{}, false, nil
	}
	s.nextID++
	id := frame.StringID("srv-" + strconv.FormatInt(s.nextID, 10))
	s.pending[id] = ch
	s.mu.Unlock()

	s.send(outgoingRequest(id, method, params))
	req.release()
	select {
	case reply, ok = <-ch:
		return reply, ok, nil
	case <-ctx.Done():
		s.mu.Lock()
		_, still := s.pending[id]
		delete(s.pending, id)
		s.mu.Unlock()
		if still {
			s.send(notification("notifications/cancelled", object{
				"requestId": json.RawMessage(id.Raw()),
				"reason":    "the tool call that asked was cancelled",
			}))
		}
		return frame.Message{}, false, context.Cause(ctx)
	}
}
