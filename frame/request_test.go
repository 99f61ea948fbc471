package frame_test

import (
	"fmt"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

func TestNewRequestNotification(t *testing.T) {
	is := is.New(t)
	m := frame.NewRequest(`"a"`, "tools/list", []byte("{\n\"cursor\":\"c\"}"))
	is.Equal(m.String(), `{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"cursor":"c"}}`) // one line
	is.Equal(m.Kind(), frame.Request)
	is.Equal(m.ID(), frame.ID(`"a"`))
	m = frame.NewRequest("3", "ping", nil)
	is.Equal(m.String(), `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	n := frame.NewNotification("notifications/initialized", nil)
	is.Equal(n.String(), `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	is.Equal(n.Kind(), frame.Notification)
	n = frame.NewNotification("a\"b", []byte("{\"x\":\"\xff\"}"))
	is.Equal(n.String(), `{"jsonrpc":"2.0","method":"a\"b","params":{"x":"`+"\ufffd"+`"}}`) // valid UTF-8
}

// A stage that sends a request of its own builds it under an id it owns.
func ExampleNewRequest() {
	fmt.Println(frame.NewRequest(`"mcp-stdio/1"`, "tools/list", []byte(`{"cursor":"c2"}`)))
	fmt.Println(frame.NewNotification("notifications/progress", []byte(`{"progressToken":1,"progress":1}`)))
	// Output:
	// {"jsonrpc":"2.0","id":"mcp-stdio/1","method":"tools/list","params":{"cursor":"c2"}}
	// {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}
}
