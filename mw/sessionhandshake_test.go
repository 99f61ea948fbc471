package mw

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// laterChild stands for a child process: Handle returns once the message
// is written, and the answer comes later, on another goroutine, through
// deliver.
type laterChild struct {
	deliver func(frame.Message) bool
	answer  func(m frame.Message) (frame.Message, bool)
	sent    recorder
	wg      sync.WaitGroup
}

func (c *laterChild) Handle(ctx context.Context, m frame.Message) error {
	c.sent.Handle(ctx, m)
	if a, ok := c.answer(m); ok {
		c.wg.Go(func() { c.deliver(a) })
	}
	return nil
}

func TestInitialize(t *testing.T) {
	is := is.New(t)
	calls := NewRemap("serve-init")
	child := &laterChild{
		deliver: calls.Capture,
		answer: func(m frame.Message) (frame.Message, bool) {
			if m.Method() != "initialize" {
				return frame.Message{}, false
			}
			return answerWith(m, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"child","version":"1"}}`), true
		},
	}
	defer child.wg.Wait()
	conn := NewConn(EraSession)
	ctx := WithConn(context.Background(), conn)
	res, err := Initialize(ctx, child, calls, HandshakeOptions{ClientVersion: "1.2.3", Roots: true})
	is.NoErr(err)
	is.Equal(res.String(), `{"jsonrpc":"2.0","id":"mcp-stdio/serve-init/1","result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"child","version":"1"}}}`)
	const init = `{"jsonrpc":"2.0","id":"mcp-stdio/serve-init/1","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"elicitation":{},"roots":{}},"clientInfo":{"name":"mcp-stdio","version":"1.2.3"}}}`
	is.Equal(child.sent.lines(), []string{init, `{"jsonrpc":"2.0","method":"notifications/initialized"}`})
	got, ok := conn.ServerInitialize()
	is.True(ok)
	is.Equal(got.String(), res.String())
	req, _ := conn.ClientInitialize()
	is.Equal(req.String(), init)                   // recorded as it was sent
	is.Equal(conn.ProtocolVersion(), "2025-06-18") // whatever the server answered
}

func TestInitializeFails(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		is := is.New(t)
		calls := NewRemap("serve-init")
		child := &laterChild{deliver: calls.Capture, answer: func(m frame.Message) (frame.Message, bool) {
			return frame.ErrorResponse(m.ID(), -32602, "unsupported protocol version"), true
		}}
		defer child.wg.Wait()
		conn := NewConn(EraSession)
		_, err := Initialize(WithConn(context.Background(), conn), child, calls, HandshakeOptions{})
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "-32602 unsupported protocol version"))
		is.Equal(len(child.sent.all()), 1) // no notifications/initialized
		_, ok := conn.ServerInitialize()
		is.True(!ok) // nothing recorded
	})
	t.Run("no answer before ctx ends", func(t *testing.T) {
		is := is.New(t)
		calls := NewRemap("serve-init")
		child := &laterChild{deliver: calls.Capture, answer: func(frame.Message) (frame.Message, bool) { return frame.Message{}, false }}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := Initialize(ctx, child, calls, HandshakeOptions{})
		is.True(errors.Is(err, context.Canceled))
	})
}

// TestHandshakeForModern: the relay's lazy handshake. A 2026-07-28 host's
// first request makes the gateway's initialize (declaring what the host
// declares) and initialized go first, under minted ids whose answer stays
// here; concurrent requests wait for the same handshake; later requests,
// and a session-era client's, pass.
func TestHandshakeForModern(t *testing.T) {
	is := is.New(t)
	release := make(chan struct{})
	var inits sync.WaitGroup
	inits.Add(1)
	s := &fakeServer{}
	s.answer = func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		switch {
		case m.Method() == "initialize":
			inits.Done()
			<-release
			return []frame.Message{answerWith(m, `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}`)}, nil
		case m.Kind() == frame.Request:
			return []frame.Message{answerWith(m, `{}`)}, nil
		}
		return nil, nil
	}
	toServer, client := pipeline(s, HandshakeForModern(HandshakeOptions{ClientVersion: "v"}))
	conn := NewConn(EraSession)
	ctx := WithConn(context.Background(), conn)
	modern := func(id string) frame.Message {
		return frame.MustParse(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"extensions":{},"elicitation":{"form":{}}}}}}`)
	}
	var wg sync.WaitGroup
	for _, id := range []string{"1", "2"} {
		wg.Go(func() { is.NoErr(toServer.Handle(ctx, modern(id))) })
	}
	inits.Wait()
	close(release)
	wg.Wait()
	is.NoErr(toServer.Handle(ctx, modern("3")))
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)))

	sent := s.sent.lines()
	is.Equal(len(sent), 6)
	is.Equal(sent[0], `{"jsonrpc":"2.0","id":"mcp-stdio/handshake/1","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true},"elicitation":{"form":{}}},"clientInfo":{"name":"mcp-stdio","version":"v"}}}`)
	is.Equal(sent[1], `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	var ids []string
	for _, m := range client.all() {
		ids = append(ids, m.ID().String())
	}
	is.Equal(len(ids), 4) // the handshake's answer stayed here
	is.True(!strings.Contains(strings.Join(ids, ","), "handshake"))
	_, ok := conn.ServerInitialize()
	is.True(ok)
}

// TestHandshakeForModernHostsClientInfo: the handshake made for a
// 2026-07-28 host names the host in its clientInfo when the host named
// itself.
func TestHandshakeForModernHostsClientInfo(t *testing.T) {
	is := is.New(t)
	s := &fakeServer{}
	s.answer = func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		if m.Kind() == frame.Request {
			return []frame.Message{answerWith(m, `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}`)}, nil
		}
		return nil, nil
	}
	toServer, _ := pipeline(s, HandshakeForModern(HandshakeOptions{ClientVersion: "v"}))
	ctx := WithConn(context.Background(), NewConn(EraSession))
	is.NoErr(toServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"host","version":"9","title":"Host"}}}}`)))
	is.Equal(s.sent.lines()[0], `{"jsonrpc":"2.0","id":"mcp-stdio/handshake/1","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"9","title":"Host"}}}`)
}

// TestHandshakeForModernRetries: a failed handshake fails the request
// that waited for it; the next one tries again.
func TestHandshakeForModernRetries(t *testing.T) {
	is := is.New(t)
	refuse := true
	s := &fakeServer{}
	s.answer = func(_ context.Context, m frame.Message) ([]frame.Message, error) {
		switch {
		case m.Method() == "initialize" && refuse:
			return nil, errors.New("connection refused")
		case m.Kind() == frame.Request:
			return []frame.Message{answerWith(m, `{}`)}, nil
		}
		return nil, nil
	}
	toServer, client := pipeline(s, HandshakeForModern(HandshakeOptions{}))
	ctx := WithConn(context.Background(), NewConn(EraSession))
	discover := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"server/discover"}`)
	err := toServer.Handle(ctx, discover)
	is.True(err != nil && strings.Contains(err.Error(), "connection refused"))
	refuse = false
	is.NoErr(toServer.Handle(ctx, discover))
	is.Equal(len(client.all()), 1)
}

// TestInitializeWith: a caller at a chain's client end sends the
// initialize under id "0" and answers it itself; NoCapabilities declares
// none; an error answer is an *InitializeRefusedError.
func TestInitializeWith(t *testing.T) {
	answer := func(result bool) (*recorder, Caller) {
		sent := &recorder{}
		return sent, func(ctx context.Context, req frame.Message) (frame.Message, error) {
			_ = sent.Handle(ctx, req)
			if !result {
				return frame.ErrorResponse(req.ID(), -32602, "unsupported protocol version"), nil
			}
			return answerWith(req, `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}`), nil
		}
	}
	t.Run("answered", func(t *testing.T) {
		is := is.New(t)
		sent, call := answer(true)
		next := &recorder{}
		conn := NewConn(EraSession)
		res, err := InitializeWith(WithConn(context.Background(), conn), next, call,
			HandshakeOptions{ClientName: "mcp-stdio", ClientVersion: "check", Roots: true, NoCapabilities: true})
		is.NoErr(err)
		is.Equal(res.Get("result.serverInfo.name").String(), "s")
		is.Equal(sent.lines(), []string{`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-stdio","version":"check"}}}`})
		is.Equal(next.lines(), []string{`{"jsonrpc":"2.0","method":"notifications/initialized"}`})
		got, ok := conn.ServerInitialize()
		is.True(ok)
		is.Equal(got.String(), res.String())
	})
	t.Run("refused", func(t *testing.T) {
		is := is.New(t)
		_, call := answer(false)
		next := &recorder{}
		conn := NewConn(EraSession)
		_, err := InitializeWith(WithConn(context.Background(), conn), next, call, HandshakeOptions{})
		var refused *InitializeRefusedError
		is.True(errors.As(err, &refused))
		code, _ := refused.Answer.ErrorCode()
		is.Equal(code, -32602)
		is.True(strings.Contains(err.Error(), "-32602 unsupported protocol version"))
		is.Equal(len(next.all()), 0) // no notifications/initialized
		_, ok := conn.ServerInitialize()
		is.True(!ok)
	})
	t.Run("call fails", func(t *testing.T) {
		is := is.New(t)
		_, err := InitializeWith(context.Background(), &recorder{}, func(context.Context, frame.Message) (frame.Message, error) {
			return frame.Message{}, frame.ErrUnavailable
		}, HandshakeOptions{})
		is.True(errors.Is(err, frame.ErrUnavailable))
	})
}
