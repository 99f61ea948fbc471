package mw

import (
	"context"
	"fmt"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// throughDropCaps sends m server-bound through a DropClientCapabilities
// stage and returns what reaches the server.
func throughDropCaps(t *testing.T, m frame.Message, caps ...string) frame.Message {
	t.Helper()
	stage, err := DropClientCapabilities(caps...)
	if err != nil {
		t.Fatal(err)
	}
	var got frame.Message
	server := HandlerFunc(func(_ context.Context, m frame.Message) error {
		got = m
		return nil
	})
	d := stage(Duplex{ToServer: server, ToClient: Discard()})
	if err := d.ToServer.Handle(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestDropClientCapabilities(t *testing.T) {
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true},"sampling":{ },"elicitation":{"form":{}},"x":1.50},"clientInfo":{"name":"c","version":"1"}}}`
	for _, tt := range []struct {
		name string
		caps []string
		in   string
		want string
	}{
		{"off", nil, init, init},
		{"roots", []string{"roots"}, init,
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{ },"elicitation":{"form":{}},"x":1.50},"clientInfo":{"name":"c","version":"1"}}}`},
		{"all three, repeated", []string{"elicitation", "roots", "sampling", "roots"}, init,
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"x":1.50},"clientInfo":{"name":"c","version":"1"}}}`},
		{"absent", []string{"roots"},
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"sampling":{}} }}`,
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"sampling":{}} }}`},
		{"no capabilities", []string{"roots"},
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`},
		{"capabilities not an object", []string{"roots"},
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":["roots"]}}`,
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":["roots"]}}`},
		{"not initialize", []string{"roots"},
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"capabilities":{"roots":{}}}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"capabilities":{"roots":{}}}}`},
		{"initialize notification", []string{"roots"},
			`{"jsonrpc":"2.0","method":"initialize","params":{"capabilities":{"roots":{}}}}`,
			`{"jsonrpc":"2.0","method":"initialize","params":{"capabilities":{"roots":{}}}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			in := frame.MustParse(tt.in)
			got := throughDropCaps(t, in, tt.caps...)
			is.Equal(got.String(), tt.want)
			if tt.in == tt.want {
				is.True(&got.Bytes()[0] == &in.Bytes()[0]) // the very same bytes, not a copy
			}
		})
	}
}

func TestDropClientCapabilitiesRefusesOtherNames(t *testing.T) {
	is := is.New(t)
	for _, c := range []string{"tools", "", "Roots", "roots.listChanged"} {
		_, err := DropClientCapabilities(c)
		is.True(err != nil) // only roots, sampling and elicitation
	}
}

func TestDropClientCapabilitiesLeavesClientBoundTraffic(t *testing.T) {
	is := is.New(t)
	stage, err := DropClientCapabilities("roots")
	is.NoErr(err)
	var got frame.Message
	d := stage(Duplex{ToServer: Discard(), ToClient: HandlerFunc(func(_ context.Context, m frame.Message) error {
		got = m
		return nil
	})})
	m := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"roots":{}}}}`)
	is.NoErr(d.ToClient.Handle(context.Background(), m))
	is.Equal(got.String(), m.String())
}

func ExampleDropClientCapabilities() {
	stage, _ := DropClientCapabilities("roots")
	child := HandlerFunc(func(_ context.Context, m frame.Message) error {
		fmt.Println(m)
		return nil
	})
	d := Chain(stage)(Duplex{ToServer: child, ToClient: Discard()})
	d.ToServer.Handle(context.Background(), frame.MustParse(
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{"roots":{"listChanged":true},"sampling":{}}}}`))
	// Output:
	// {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{"sampling":{}}}}
}
