package exampleserver

import (
	"bytes"
	"context"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// JSON-RPC batches. MCP 2025-03-26 says a server MUST accept them (and
// 2024-11-05 speaks JSON-RPC 2.0, which has them); 2025-06-18 removed them.
// On a connection that initialized at one of those two versions, a batch is
// taken apart on the read loop: each element is received as if it had come
// on its own line, and the responses to its requests are held back until
// the last one is in, then written together as one array line (in the order
// they came). Server-to-client messages a request causes (progress, an
// elicitation) still go out at once, on their own lines. A request the
// client cancels gets no response, so the batch does not wait for it. A
// batch with nothing to answer writes nothing; an empty batch is answered
// with one -32600 error, as JSON-RPC says.

// batchVersion reports whether connections of protocol version v accept
// batches.
func batchVersion(v string) bool { return v == "2024-11-05" || v == "2025-03-26" }

// batchReply collects the responses to one batch's requests. Its fields are
// guarded by server.mu.
type batchReply struct {
	waiting    int              // responses still to come
	ids        map[frame.ID]int // responses still to come, per request id
	got        []frame.Message  // the answers so far
	dispatched bool             // every element has been received
}

// receiveBatch takes a batch apart; see the comment at the top of the file.
func (s *server) receiveBatch(ctx context.Context, m frame.Message) {
	if s.era != eraSession || !batchVersion(s.protocolVersion) {
		s.log.Warn("batch refused", "protocolVersion", s.protocolVersion)
		s.send(frame.ErrorResponse("", frame.CodeInvalidRequest, "invalid request: batches are part of MCP 2025-03-26 and 2024-11-05 only"))
		return
	}
	elems := m.Get("@this").Array()
	if len(elems) == 0 {
		s.send(frame.ErrorResponse("", frame.CodeInvalidRequest, "invalid request: empty batch"))
		return
	}
	b := &batchReply{ids: make(map[frame.ID]int)}
	var take []frame.Message
	s.mu.Lock()
	for _, e := range elems {
		em, err := frame.Parse([]byte(e.Raw))
		switch {
		case err != nil || em.Kind() == frame.Invalid || em.Kind() == frame.Batch:
			b.got = append(b.got, frame.ErrorResponse("", frame.CodeInvalidRequest, "invalid request: not a JSON-RPC 2.0 message"))
		case em.Kind() == frame.Request && em.ID().IsNull(),
			em.Kind() == frame.Notification && em.Get("id").Exists():
			b.got = append(b.got, frame.ErrorResponse("", frame.CodeInvalidRequest, "invalid request: id must be a string or a number"))
		case em.Kind() == frame.Request && em.Method() == "initialize":
			b.got = append(b.got, frame.ErrorResponse(em.ID(), frame.CodeInvalidRequest, "invalid request: initialize must not be part of a batch"))
		case em.Kind() == frame.Request && s.batches[em.ID()] != nil && b.ids[em.ID()] == 0:
			// Its answer would be taken for the other batch's.
			b.got = append(b.got, frame.ErrorResponse(em.ID(), frame.CodeInvalidRequest, "invalid request: this id is already in use by a request in progress"))
		default:
			if em.Kind() == frame.Request {
				b.ids[em.ID()]++
				b.waiting++
				s.batches[em.ID()] = b
			}
			take = append(take, em)
		}
	}
	s.mu.Unlock()
	for _, em := range take {
		s.receive(ctx, em)
	}
	s.mu.Lock()
	b.dispatched = true
	ready := b.waiting == 0
	s.mu.Unlock()
	if ready {
		s.writeBatch(b)
	}
}

// collect keeps a response that answers a request of a batch, and writes
// the batch when it was the last; it reports whether m was kept.
func (s *server) collect(m frame.Message) bool {
	return s.settle(m.ID(), &m)
}

// skipInBatch stops a batch from waiting for the response to id, which
// will not come (the client cancelled the request).
func (s *server) skipInBatch(id frame.ID) { s.settle(id, nil) }

// settle records that the response to id came (m) or will not (nil), and
// writes the batch once nothing more is to come. It reports whether id
// belonged to a batch.
func (s *server) settle(id frame.ID, m *frame.Message) bool {
	s.mu.Lock()
	b := s.batches[id]
	if b == nil {
		s.mu.Unlock()
		return false
	}
	if m != nil {
		b.got = append(b.got, *m)
	}
	b.waiting--
	if b.ids[id]--; b.ids[id] == 0 {
		delete(b.ids, id)
		delete(s.batches, id)
	}
	ready := b.dispatched && b.waiting == 0
	s.mu.Unlock()
	if ready {
		s.writeBatch(b)
	}
	return true
}

// writeBatch writes a batch's answers as one array line, or nothing when
// there are none.
func (s *server) writeBatch(b *batchReply) {
	if len(b.got) == 0 {
		return
	}
	parts := make([][]byte, len(b.got))
	for i, m := range b.got {
		parts[i] = m.Bytes()
	}
	line := append(append([]byte{'['}, bytes.Join(parts, []byte{','})...), ']')
	m, err := frame.ParseOwned(line)
	if err != nil {
		s.log.Error("batch answer did not parse", "err", err)
		return
	}
	s.write(m)
}
