package mw

import (
	"context"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestSingleAnswers(t *testing.T) {
	const (
		ping     = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
		answer   = `{"jsonrpc":"2.0","id":1,"result":{}}`
		progress = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`
		tooMany  = `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"invalid response from the server: a batch of 2 messages answers a single request"}}`
	)
	tests := []struct {
		name  string
		sent  string // what the client sends
		reply string // what the server answers it with
		want  []string
	}{
		{"a batch of one is unwrapped", ping, `[` + answer + `]`, []string{answer}},
		{"a batch of one notification too", ping, ` [ ` + progress + ` ] `, []string{progress}},
		{"an answer in a batch of several is an error", ping, `[` + progress + `,` + answer + `]`, []string{tooMany}},
		{"two answers are an error", ping, `[` + answer + `,{"jsonrpc":"2.0","id":1,"result":{"x":1}}]`, []string{tooMany}},
		{"a batch of several that does not answer passes", ping, `[` + progress + `,` + progress + `]`, []string{`[` + progress + `,` + progress + `]`}},
		{"an invalid message alone is dropped", ping, `[{"id":1,"result":{}}]`, nil},
		{"an empty batch is dropped", ping, `[]`, nil},
		{"a single answer passes", ping, answer, []string{answer}},
		{"a batch answering a batch passes", `[` + ping + `]`, `[` + answer + `]`, []string{`[` + answer + `]`}},
		{"as does one answering a notification", `{"jsonrpc":"2.0","method":"n"}`, `[` + answer + `]`, []string{`[` + answer + `]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			srv := &fakeServer{answer: func(context.Context, frame.Message) ([]frame.Message, error) {
				return []frame.Message{frame.MustParse(tt.reply).WithHeader("Mcp-Session-Id", "s1")}, nil
			}}
			toServer, client := pipeline(srv, SingleAnswers(nil))
			is.NoErr(toServer.Handle(t.Context(), frame.MustParse(tt.sent)))
			is.Equal(client.lines(), tt.want)
			for _, m := range client.all() {
				is.Equal(m.Header().Get("Mcp-Session-Id"), "s1") // the response's headers go along
			}
		})
	}
}

// A batch delivered outside a request — on the standing GET stream — is
// nobody's single answer and passes as it is.
func TestSingleAnswersOutsideARequest(t *testing.T) {
	is := is.New(t)
	client := &recorder{}
	d := SingleAnswers(nil)(Duplex{ToServer: Discard(), ToClient: client})
	batch := `[{"jsonrpc":"2.0","id":1,"result":{}}]`
	is.NoErr(d.ToClient.Handle(t.Context(), frame.MustParse(batch)))
	is.Equal(client.lines(), []string{batch})
}
