package transport_test

import (
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/mcp-stdio/mcp-stdio/transport"
)

func ExampleLimitConnections() {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	ln := transport.LimitConnections(inner, 1, nil)
	srv := &http.Server{
		// Connection: close on answers while new connections wait for a slot.
		Handler:     ln.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })),
		ConnState:   ln.ConnState,   // which connections are sending a request, or have one in flight
		ConnContext: ln.ConnContext, // for Handler
	}
	go srv.Serve(ln)
	defer srv.Close()

	// A connection opened and left silent holds the only place...
	silent, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		panic(err)
	}
	defer silent.Close()

	// ...until a client with a request comes: the silent one makes room
	// (had its client sent a request since, it would get a 503).
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Get("http://" + inner.Addr().String() + "/")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))
	got, err := io.ReadAll(silent)
	fmt.Println(len(got), err)
	// Output:
	// 200 ok
	// 0 <nil>
}

func ExampleConnectionLimit() {
	// A process that may open 20,000 files and run at most 116 children.
	fmt.Println(transport.ConnectionLimit(20000, 116))
	// The limit of this process, raised to its hard limit where allowed.
	fmt.Println(transport.ConnectionLimit(transport.RaiseFileLimit(), 116) > 0)
	// Output:
	// 17829
	// true
}
