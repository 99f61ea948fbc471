package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/transport"
)

func ExampleStreamableClient() {
	// A server that answers every POST with a notification and the
	// response, as an event stream, and names a session.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Mcp-Session-Id", "s-1")
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n")
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
	}))
	defer srv.Close()

	client := transport.NewHTTPClient(transport.HTTPOptions{ReadTimeout: 30 * time.Second})
	defer client.CloseIdleConnections()
	c := &transport.StreamableClient{
		URL:         srv.URL,
		Client:      client,
		Header:      http.Header{"Authorization": {"Bearer token"}},
		IdleTimeout: 2 * time.Minute,
		ToClient: transport.SinkFunc(func(ctx context.Context, m frame.Message) error {
			fmt.Println(m, "session:", m.Header().Get("Mcp-Session-Id"))
			return nil
		}),
	}
	err := c.Handle(context.Background(), frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	fmt.Println("err:", err)
	// Output:
	// {"jsonrpc":"2.0","method":"notifications/progress"} session: s-1
	// {"jsonrpc":"2.0","id":1,"result":{}} session: s-1
	// err: <nil>
}

func ExampleParseHeader() {
	name, value, err := transport.ParseHeader("X-Api-Key:  secret ")
	fmt.Printf("%q %q %v\n", name, value, err)
	_, _, err = transport.ParseHeader("X-Evil: a\r\nHost: elsewhere")
	fmt.Println(err)
	// Output:
	// "X-Api-Key" "secret" <nil>
	// forbidden control character in header value
}

func ExampleRedirectError() {
	// A server that sends every request on to another one.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Printf("the other server got Authorization %q\n", r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.RedirectHandler(other.URL+"/mcp", http.StatusTemporaryRedirect))
	defer srv.Close()

	client := transport.NewHTTPClient(transport.HTTPOptions{})
	defer client.CloseIdleConnections()
	c := &transport.StreamableClient{URL: srv.URL, Client: client, Header: http.Header{"Authorization": {"Bearer token"}}}
	ping := frame.MustParse(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)

	var re *transport.RedirectError
	err := c.Handle(context.Background(), ping)
	fmt.Println(errors.As(err, &re), re.Status, re.To == other.URL+"/mcp", re.Downgrade)

	c.FollowRedirects = true // followed, without the credentials
	fmt.Println(c.Handle(context.Background(), ping))
	// Output:
	// true 307 true false
	// the other server got Authorization ""
	// <nil>
}
