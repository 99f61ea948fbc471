package mw

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// refusal returns the status and body of a refusal, or 0 for another
// error.
func refusal(err error) (int, string) {
	var st *frame.StatusError
	if !errors.As(err, &st) {
		return 0, ""
	}
	return st.Code, string(st.Body)
}

func TestRefuseDuplicateIDs(t *testing.T) {
	is := is.New(t)
	server := &recorder{}
	var inner error
	d := RefuseDuplicateIDs(DuplicateIDsOptions{})(Duplex{
		ToServer: HandlerFunc(func(ctx context.Context, m frame.Message) error {
			server.Handle(ctx, m)
			return inner
		}),
		ToClient: Discard(),
	})
	ctx := t.Context()
	send := func(s string) error { return d.ToServer.Handle(ctx, frame.MustParse(s)) }

	is.NoErr(send(`{"jsonrpc":"2.0","id":2,"method":"ask"}`))
	status, body := refusal(send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	is.Equal(status, http.StatusBadRequest)
	is.Equal(body, `{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"invalid request: a request with this id is already in progress"}}`)
	is.NoErr(send(`{"jsonrpc":"2.0","id":"2","method":"ping"}`)) // another raw id

	// A batch is judged as a whole, and nothing of a refused one passes.
	before := len(server.all())
	status, _ = refusal(send(`[{"jsonrpc":"2.0","id":3,"method":"a"},{"jsonrpc":"2.0","id":3,"method":"b"}]`))
	is.Equal(status, http.StatusBadRequest)
	status, _ = refusal(send(`[{"jsonrpc":"2.0","id":4,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"}]`))
	is.Equal(status, http.StatusBadRequest)
	is.Equal(len(server.all()), before)
	is.NoErr(send(`[{"jsonrpc":"2.0","id":3,"method":"a"},{"jsonrpc":"2.0","id":4,"method":"b"}]`)) // 3 and 4 were not kept

	// The server's answer frees an id; so does the client's cancel.
	is.NoErr(d.ToClient.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":2,"result":{}}`)))
	is.NoErr(send(`{"jsonrpc":"2.0","id":2,"method":"again"}`))
	is.NoErr(send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`))
	is.NoErr(send(`{"jsonrpc":"2.0","id":3,"method":"again"}`))

	// A request that could not be delivered frees its id.
	inner = errors.New("gone")
	is.True(send(`{"jsonrpc":"2.0","id":9,"method":"a"}`) != nil)
	inner = nil
	is.NoErr(send(`{"jsonrpc":"2.0","id":9,"method":"a"}`))
}

func TestRefuseDuplicateIDsBound(t *testing.T) {
	is := is.New(t)
	d := RefuseDuplicateIDs(DuplicateIDsOptions{Max: 2})(Duplex{ToServer: Discard(), ToClient: Discard()})
	ctx := t.Context()
	for _, id := range []string{"1", "2", "3"} {
		is.NoErr(d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":`+id+`,"method":"a"}`)))
	}
	is.NoErr(d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"a"}`))) // the oldest was forgotten
	status, _ := refusal(d.ToServer.Handle(ctx, frame.MustParse(`{"jsonrpc":"2.0","id":3,"method":"a"}`)))
	is.Equal(status, http.StatusBadRequest)
}

func TestUnbatch(t *testing.T) {
	is := is.New(t)
	server := &recorder{}
	cancelled := frame.ID("2")
	d := Unbatch()(Duplex{ToServer: HandlerFunc(func(ctx context.Context, m frame.Message) error {
		server.Handle(ctx, m)
		if m.ID() == cancelled {
			return frame.ErrCancelled
		}
		return nil
	}), ToClient: Discard()})
	batch := frame.MustParse(`[{"jsonrpc":"2.0","id":1,"method":"a"}, {"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":2,"method":"b"},{"jsonrpc":"2.0","id":3,"method":"c"}]`).
		WithHeader(frame.HeaderSessionID, "s1")
	err := d.ToServer.Handle(t.Context(), batch)
	var ce *CancelledError
	is.True(errors.As(err, &ce))
	is.Equal(ce.IDs, []frame.ID{"2"})
	is.True(errors.Is(err, frame.ErrCancelled))
	is.Equal(server.lines(), []string{
		`{"jsonrpc":"2.0","id":1,"method":"a"}`,
		`{"jsonrpc":"2.0","method":"n"}`,
		`{"jsonrpc":"2.0","id":2,"method":"b"}`,
		`{"jsonrpc":"2.0","id":3,"method":"c"}`, // the rest still delivered
	})
	is.Equal(server.all()[0].Header().Get(frame.HeaderSessionID), "s1") // the batch's headers go along

	single := frame.MustParse(`{"jsonrpc":"2.0","id":7,"method":"a"}`)
	is.NoErr(d.ToServer.Handle(t.Context(), single))
	is.Equal(server.lines()[4], single.String())

	fail := errors.New("gone")
	stop := Unbatch()(Duplex{ToServer: HandlerFunc(func(context.Context, frame.Message) error { return fail }), ToClient: Discard()})
	is.True(errors.Is(stop.ToServer.Handle(t.Context(), batch), fail)) // the first failure stops it
}

func TestCheckVersionHeader(t *testing.T) {
	is := is.New(t)
	server := &recorder{}
	d := CheckVersionHeader()(Duplex{ToServer: server, ToClient: Discard()})
	m := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	is.NoErr(d.ToServer.Handle(t.Context(), m))                                                       // none
	is.NoErr(d.ToServer.Handle(t.Context(), m.WithHeader(frame.HeaderProtocolVersion, "2025-06-18"))) // known
	status, body := refusal(d.ToServer.Handle(t.Context(), frame.Message{}.WithHeader(frame.HeaderProtocolVersion, "1999-01-01")))
	is.Equal(status, http.StatusBadRequest) // a GET too
	is.Equal(body, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"unsupported MCP-Protocol-Version \"1999-01-01\""}}`)
	is.Equal(len(server.all()), 2)
	for _, v := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"} {
		is.True(KnownProtocolVersion(v))
	}
	is.True(!KnownProtocolVersion("2025-11-26"))
}
