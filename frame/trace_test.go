package frame_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestParseTraceParent(t *testing.T) {
	const good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, c := range []struct {
		in string
		ok bool
	}{
		{good, true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds", true}, // a later version's extra field
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-", false}, // version 00 has four fields exactly
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false}, // uppercase
		{"00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01", false},
		{"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x", false},
		{" " + good, false},
		{"", false},
	} {
		t.Run(c.in, func(t *testing.T) {
			is := is.New(t)
			tp, ok := frame.ParseTraceParent(c.in)
			is.Equal(ok, c.ok)
			if ok {
				is.True(tp.Valid())
				is.Equal(tp.String()[3:], c.in[3:55]) // printed back as version 00
			}
		})
	}
	is := is.New(t)
	tp, _ := frame.ParseTraceParent(good)
	is.Equal(tp.TraceIDString(), "4bf92f3577b34da6a3ce929d0e0e4736")
	is.True(tp.Sampled())
	is.Equal(tp.String(), good)
}

func TestValidTraceState(t *testing.T) {
	many := make([]string, 33)
	for i := range many {
		many[i] = "k" + strings.Repeat("a", i) + "=v"
	}
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"", true},
		{"rojo=00f067aa0ba902b7", true},
		{"rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", true},
		{" rojo=1 ,\t, congo=2", true},
		{"tenant1@sys=x", true},
		{"1tenant@sys=x", true},
		{"1key=x", false},
		{"Rojo=1", false},
		{"rojo=1,rojo=2", false},
		{"rojo", false},
		{"rojo=", false},
		{"rojo=a,b", false},
		{"rojo=a=b", false},
		{"rojo=a\x7f", false},
		{"rojo=a ", true}, // the trailing space is OWS around the member
		{"t@=x", false},
		{"t@system_longer_than_14=x", false},
		{strings.Join(many[:32], ","), true},
		{strings.Join(many, ","), false},
	} {
		t.Run(c.in, func(t *testing.T) {
			is.New(t).Equal(frame.ValidTraceState(c.in), c.ok)
		})
	}
}

// FuzzParseTraceParent parses arbitrary traceparent values: whatever it
// takes prints back, as version 00, to the same ids and flags, and parses
// again to the same value.
func FuzzParseTraceParent(f *testing.F) {
	for _, s := range []string{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-extra",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-00000000000000000000000000000000-0000000000000000-00",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\x00",
		"",
	} {
		f.Add(s, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
	}
	f.Fuzz(func(t *testing.T, s, state string) {
		tp, ok := frame.ParseTraceParent(s)
		if !ok {
			if tp.Valid() && tp.Flags != 0 {
				t.Fatalf("an invalid traceparent came back with flags")
			}
		} else {
			if !tp.Valid() || s[3:55] != tp.String()[3:] {
				t.Fatalf("%q parsed to %q", s, tp.String())
			}
			again, ok := frame.ParseTraceParent(tp.String())
			if !ok || again != tp {
				t.Fatalf("%q does not parse back", tp.String())
			}
		}
		if frame.ValidTraceState(state) {
			for i := 0; i < len(state); i++ {
				if state[i] < 0x20 && state[i] != '\t' || state[i] > 0x7e {
					t.Fatalf("tracestate %q with a byte outside printable ASCII passed", state)
				}
			}
		}
	})
}
