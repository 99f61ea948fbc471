package exampleserver

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// The 2026-07-28 side: server/discover, subscriptions/listen and the multi
// round-trip (MRTR) form of the ask tool.

// discover answers server/discover. Only 2026-07-28 is listed: a
// connection that has been served a 2026-07-28 request refuses initialize.
func (s *server) discover(context.Context, *request) (object, error) {
	return object{
		"supportedVersions": []string{statelessVersion},
		"capabilities":      capabilities,
		"instructions":      instructions,
	}, nil
}

// listen serves subscriptions/listen: it acknowledges with the honoured
// subset of the requested notifications, then stays open, receiving the
// events toolsChanged and resourceUpdated fan out, until the client
// cancels it or stdin ends; then it answers with the final result.
func (s *server) listen(ctx context.Context, req *request) (object, error) {
	filter := req.params.Get("notifications")
	if !filter.IsObject() {
		return nil, invalidParams("subscriptions/listen needs params.notifications (an object)")
	}
	subs := filter.Get("resourceSubscriptions")
	if subs.Exists() && !subs.IsArray() {
		return nil, invalidParams("notifications.resourceSubscriptions must be an array of URIs")
	}

	l := &listener{id: req.id, uris: make(map[string]bool)}
	honoured := object{}
	for key, on := range map[string]*bool{
		"toolsListChanged":     &l.tools,
		"promptsListChanged":   &l.prompts,
		"resourcesListChanged": &l.resources,
	} {
		if filter.Get(key).Type == gjson.True {
			*on = true
			honoured[key] = true
		}
	}
	var uris []string
	for _, u := range subs.Array() {
		if u.Type == gjson.String && findResource(u.Str) != nil && !l.uris[u.Str] {
			l.uris[u.Str] = true
			uris = append(uris, u.Str)
		}
	}
	if len(uris) > 0 {
		honoured["resourceSubscriptions"] = uris
	}

	select {
	case s.parked <- struct{}{}:
		defer func() { <-s.parked }()
	default:
		return nil, &rpcError{code: frame.CodeInternalError, message: "too many open subscriptions"}
	}
	// The ack is written and the listener registered under notifyMu, so
	// no event of this listen can precede its ack.
	s.notifyMu.Lock()
	s.send(notification("notifications/subscriptions/acknowledged", object{
		"notifications": honoured,
		"_meta":         subscriptionMeta(req.id),
	}))
	s.listeners[req.id] = l
	s.notifyMu.Unlock()
	req.release()

	<-ctx.Done()
	// Once unregistered, no event can follow the final result.
	s.notifyMu.Lock()
	delete(s.listeners, req.id)
	s.notifyMu.Unlock()
	s.log.Debug("listen ended", "id", req.id, "why", context.Cause(ctx))
	return object{"_meta": subscriptionMeta(req.id)}, nil
}

// askWithInputRequest is the ask tool on 2026-07-28. The first call
// returns an input_required result carrying the elicitation request and a
// signed requestState; the client's retry brings the answer in
// inputResponses and the requestState back, and completes. A requestState
// that does not verify is refused; a retry without the answer asks again.
func (s *server) askWithInputRequest(req *request, question string) (object, error) {
	if st := req.params.Get("requestState"); st.Exists() {
		if st.Type != gjson.String || !s.verifyState(st.Str, question) {
			return nil, invalidParams("requestState is invalid or expired; call the tool again without it")
		}
		if answer := req.params.Get("inputResponses.ask"); answer.IsObject() {
			return elicitOutcome(answer), nil
		}
	}
	return object{
		"resultType": "input_required",
		"inputRequests": object{
			"ask": object{"method": "elicitation/create", "params": elicitParams(question, true)},
		},
		"requestState": s.signState(question),
	}, nil
}

// stateTTL is how long a requestState stays valid.
const stateTTL = 10 * time.Minute

// signState returns a requestState for a question of the ask tool:
// base64url(expiry || HMAC-SHA256(key, "ask" 0 expiry question)). The key
// is random per server, so a token is good only for this process, this
// question and until it expires; the client cannot forge or alter it.
func (s *server) signState(question string) string {
	var b [8 + sha256.Size]byte
	binary.BigEndian.PutUint64(b[:8], uint64(s.now().Add(stateTTL).Unix()))
	copy(b[8:], s.stateMAC(b[:8], question))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// verifyState reports whether token is a live requestState for question.
func (s *server) verifyState(token, question string) bool {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(b) != 8+sha256.Size {
		return false
	}
	if !hmac.Equal(b[8:], s.stateMAC(b[:8], question)) {
		return false
	}
	return s.now().Unix() < int64(binary.BigEndian.Uint64(b[:8]))
}

func (s *server) stateMAC(expiry []byte, question string) []byte {
	m := hmac.New(sha256.New, s.key[:])
	m.Write([]byte("ask\x00"))
	m.Write(expiry) // fixed length, so the fields cannot run together
	m.Write([]byte(question))
	return m.Sum(nil)
}
