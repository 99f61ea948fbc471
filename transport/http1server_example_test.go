package transport_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/mcp-stdio/mcp-stdio/transport"
)

func ExampleHTTP1Server() {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	ln := transport.LimitConnections(inner, 100, nil)
	srv := &transport.HTTP1Server{
		Handler: ln.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "got %d bytes", len(body))
		})),
		ConnState:   ln.ConnState,
		ConnContext: ln.ConnContext,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	client := &http.Client{Transport: &http.Transport{}}
	for range 2 { // the second request reuses the connection, idle in between
		resp, err := client.Post("http://"+inner.Addr().String()+"/mcp", "application/json", nil)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.ContentLength, string(body))
	}
	client.CloseIdleConnections()

	fmt.Println(srv.Shutdown(context.Background()), <-served)
	// Output:
	// 200 11 got 0 bytes
	// 200 11 got 0 bytes
	// <nil> http: Server closed
}
