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
		Handler:   http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }),
		ConnState: ln.ConnState, // which connections are idle
	}
	go srv.Serve(ln)
	defer srv.Close()

	// A connection opened and left silent holds the only place...
	silent, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		panic(err)
	}
	defer silent.Close()

	// ...until a client with a request comes: the silent one makes room.
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
