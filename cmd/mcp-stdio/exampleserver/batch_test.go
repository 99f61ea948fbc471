package exampleserver

import (
	"maps"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"
)

// batchAnswers returns the elements of a batch answer by id, the null ones
// under "null".
func batchAnswers(t *testing.T, m gjson.Result) map[string]gjson.Result {
	t.Helper()
	if !m.IsArray() {
		t.Fatalf("want a batch answer, got %s", m.Raw)
	}
	byID := make(map[string]gjson.Result)
	for _, e := range m.Array() {
		id := e.Get("id").Raw
		if _, dup := byID[id]; dup {
			t.Fatalf("two answers for id %s in %s", id, m.Raw)
		}
		byID[id] = e
	}
	return byID
}

// At 2025-03-26 a batch's requests are answered together in one array line;
// notifications in it act and get no entry; a bad element gets an error
// with id null, initialize an error of its own.
func TestBatchAt20250326(t *testing.T) {
	for _, version := range []string{"2025-03-26", "2024-11-05"} {
		t.Run(version, func(t *testing.T) {
			is := is.New(t)
			c := start(t, Options{})
			c.initialize(version, `{}`)
			c.send(`[{"jsonrpc":"2.0","id":1,"method":"ping"},` +
				`{"jsonrpc":"2.0","id":"e","method":"tools/call","params":{"name":"echo","arguments":{"text":"batched"}}},` +
				`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},` +
				`42,` +
				`{"jsonrpc":"2.0","id":9,"method":"initialize","params":{}}]`)
			got := batchAnswers(t, c.recv())
			is.Equal(slices.Sorted(maps.Keys(got)), []string{`"e"`, "1", "9", "null"})
			is.Equal(got["1"].Get("result").Raw, `{}`)
			is.Equal(got[`"e"`].Get("result.content.0.text").String(), "batched")
			is.Equal(got["null"].Get("error.code").Int(), int64(-32600))
			is.Equal(got["9"].Get("error.code").Int(), int64(-32600))

			// A batch of notifications writes nothing.
			c.send(`[{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]`)
			is.Equal(c.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"ping"}`).Get("result").Raw, `{}`)
			// An empty batch is one error.
			c.send(`[]`)
			is.Equal(c.recv().Get("error.code").Int(), int64(-32600))
		})
	}
}

// A request of a batch that the client cancels gets no answer, and the
// batch goes out with the others; progress it reports goes out at once.
func TestBatchWithACancelledRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		c := start(t, Options{})
		c.initialize("2025-03-26", `{}`)
		c.send(`[{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"slow","arguments":{"seconds":60,"steps":60},"_meta":{"progressToken":1}}},` +
			`{"jsonrpc":"2.0","id":3,"method":"ping"}]`)
		is.Equal(c.recv().Get("method").String(), "notifications/progress") // before the batch's answer
		c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s"}}`)
		got := batchAnswers(t, c.recv())
		is.Equal(len(got), 1)
		is.Equal(got["3"].Get("result").Raw, `{}`)
		err, rest := c.finish()
		is.NoErr(err)
		is.Equal(rest, []string(nil))
	})
}

// From 2025-06-18 on, and before any initialize, a batch is one -32600.
func TestBatchRefusedOutsideItsRevisions(t *testing.T) {
	is := is.New(t)
	c := start(t, Options{})
	c.send(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`)
	is.Equal(c.recv().Get("error.code").Int(), int64(-32600))
	c.initialize("2025-11-25", `{}`)
	c.send(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`)
	m := c.recv()
	is.Equal(m.Get("id").Raw, "null")
	is.Equal(m.Get("error.code").Int(), int64(-32600))
}
