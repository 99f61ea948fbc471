package mw

import (
	"context"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestClassifyEra(t *testing.T) {
	for _, tt := range []struct {
		body string
		want Era
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, EraSession},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, EraSession},
		{`{"jsonrpc":"2.0","id":1,"method":"server/discover"}`, EraStateless},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, EraStateless},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io":{"modelcontextprotocol/protocolVersion":"x"}}}}`, EraSession},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"protocolVersion":"2026-07-28"}}}`, EraSession},
		{`[{"jsonrpc":"2.0","id":1,"method":"server/discover"}]`, EraSession},
		{``, EraSession}, // a GET or a DELETE
	} {
		t.Run(tt.body, func(t *testing.T) {
			is := is.New(t)
			var m frame.Message
			if tt.body != "" {
				m = frame.MustParse(tt.body)
			}
			m = m.WithHeader(frame.HeaderProtocolVersion, "2026-07-28") // headers alone are no evidence
			is.Equal(ClassifyEra(m), tt.want)
		})
	}
}

func TestByEra(t *testing.T) {
	is := is.New(t)
	session, stateless := &recorder{}, &recorder{}
	discover := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"server/discover"}`)
	list := frame.MustParse(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	ctx := context.Background()

	fork := ByEra(session, stateless, nil)
	is.NoErr(fork.Handle(ctx, discover))
	is.NoErr(fork.Handle(ctx, list))
	is.Equal(stateless.lines(), []string{discover.String()})
	is.Equal(session.lines(), []string{list.String()})

	onlySession := &recorder{}
	is.NoErr(ByEra(onlySession, nil, nil).Handle(ctx, discover)) // no 2026-07-28 chain: the session era's
	is.Equal(onlySession.lines(), []string{discover.String()})
}

// TestClassifyEraBuildsNoString: the fork classifies every message, and a
// 2026-07-28 one carries the version under a name with dots in it, which
// a gjson path would unescape into a new string each time.
func TestClassifyEraBuildsNoString(t *testing.T) {
	is := is.New(t)
	m := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	is.Equal(testing.AllocsPerRun(100, func() { _ = ClassifyEra(m) }), 0.0)
	is.Equal(ClassifyEra(m), EraStateless)
}
