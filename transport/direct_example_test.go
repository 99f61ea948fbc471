package transport_test

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/mcp-stdio/mcp-stdio/transport"
)

// A line through a pipe, written and read with direct system calls where
// the platform allows (os.Pipe's ends are non-blocking and polled).
func ExampleDirectReader() {
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	in, out := transport.DirectReader(r), transport.DirectWriter(w)
	go func() {
		_, _ = io.WriteString(out, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
		w.Close()
	}()
	line, err := bufio.NewReader(in).ReadString('\n')
	fmt.Printf("%q %v\n", line, err)
	// Output: "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n" <nil>
}
