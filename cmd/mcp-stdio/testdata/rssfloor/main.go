// Command rssfloor is the least a Go HTTP gateway process can be: it
// answers every POST with one canned JSON-RPC result and does nothing
// else. BenchmarkIdleRSSFloor measures its idle memory beside serve's, as
// the floor of what any such process built with this Go toolchain can
// reach on the machine measured.
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "serving at http://%s/mcp\n", ln.Addr())
	err = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`)
	}))
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
