package transport

import (
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestAccepts(t *testing.T) {
	for _, tt := range []struct {
		accept         string
		sse, json, get bool
	}{
		{"application/json, text/event-stream", true, true, true},
		{"text/event-stream, application/json", true, true, true},
		{"application/json", false, true, false},
		{"text/event-stream", true, false, true},
		{"*/*", false, true, true},
		{"application/*", false, true, false},
		{"text/*", false, false, true},
		{"TEXT/Event-Stream;q=0.5", true, false, true},
		{"text/event-stream;q=0, application/json", false, true, false},
		{"application/json;q=0", false, false, false},
		{"text/html", false, false, false},
		{"", false, false, false},
	} {
		t.Run(tt.accept, func(t *testing.T) {
			is := is.New(t)
			sse, json := acceptsPOST([]string{tt.accept})
			is.Equal(sse, tt.sse)
			is.Equal(json, tt.json)
			is.Equal(acceptsGET([]string{tt.accept}), tt.get)
		})
	}
	is := is.New(t)
	sse, json := acceptsPOST(nil) // no Accept at all: JSON
	is.True(!sse && json)
	is.True(acceptsGET(nil))
}

// FuzzAccept feeds arbitrary Accept values to the parsers: nothing may
// panic, and a type refused with q=0 is never taken.
func FuzzAccept(f *testing.F) {
	for _, s := range []string{"application/json, text/event-stream", "*/*;q=0", "text/event-stream;q=0.0;level=1", ";;,,", "a/b/c", "text/event-stream;q=NaN", "application/json;q=1e400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sse, _ := acceptsPOST([]string{s})
		acceptsGET([]string{s})
		if sse && !strings.Contains(strings.ToLower(s), "event-stream") {
			t.Fatalf("SSE accepted from %q", s)
		}
	})
}
