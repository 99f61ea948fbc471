// Command floorserve is the least a Streamable-HTTP-to-stdio gateway can
// do, kept as a benchmark baseline, not as a tool: one session, one child,
// one request at a time. It writes each POST body to the child's stdin as
// a line and answers a request with the child's response line as JSON
// (with FLOOR_SSE set, as one SSE event), skipping anything else the child
// writes; notifications and responses get 202. A 2026-07-28 client's
// requests (no session header, no initialize) go to a second child,
// started by the first of them, as serve gives them a pooled child of
// their own. No validation, no
// concurrency, no GET stream, no security. BenchmarkServeVsPeers run
// against it (MCP_STDIO_E2E_BINARY) shows what any gateway in its own
// process costs on a machine, so that serve's own overhead can be told
// apart from the cost of the extra process. See BENCHMARKS.md.
//
//	floorserve serve [ignored flags] -- CMD ARGS...
//	floorserve example-server [flags]   (mcp-stdio's, so the child is the same)
package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/cli"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == cli.ExampleServerCommand {
		err := cli.ExampleServer(context.Background(), os.Args[2:], os.Getenv, os.Stdin, os.Stdout, os.Stderr, cli.Options{Version: "floor", OwnProcess: true})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	i := slices.Index(os.Args, "--")
	if i < 0 || i == len(os.Args)-1 {
		fmt.Fprintln(os.Stderr, "usage: floorserve serve [flags] -- CMD ARGS...")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	g := &gateway{child: os.Args[i+1:], sse: os.Getenv("FLOOR_SSE") != ""}
	// The line mcp-stdio serve prints, which the benchmarks wait for.
	fmt.Fprintf(os.Stderr, "mcp-stdio: serving floorserve at http://%s/mcp\n", ln.Addr())
	_ = http.Serve(ln, g)
}

// gateway is the one session and the 2026-07-28 clients' child.
type gateway struct {
	child []string
	sse   bool

	mu      sync.Mutex // one request at a time
	session pipe       // the session's child, started by initialize
	modern  pipe       // the 2026-07-28 clients' child, started by their first request
}

// pipe is one child's stdin and stdout.
type pipe struct {
	in  io.Writer
	out *bufio.Reader
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	method := gjson.GetBytes(body, "method")
	c := &g.session
	switch {
	case method.Str == "initialize":
		if c.in == nil {
			if *c, err = g.start(); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		w.Header().Set("Mcp-Session-Id", "floor")
	case r.Header.Get("Mcp-Session-Id") == "":
		c = &g.modern
		if c.in == nil {
			if *c, err = g.start(); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
	case c.in == nil:
		http.Error(w, "no session", http.StatusBadRequest)
		return
	}
	if _, err := c.in.Write(append(body, '\n')); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	id := gjson.GetBytes(body, "id")
	if !id.Exists() || !method.Exists() {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	for {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		if gjson.GetBytes(line, "method").Exists() || gjson.GetBytes(line, "id").Raw != id.Raw {
			continue // the child's own requests and notifications are dropped
		}
		if g.sse {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(slices.Concat([]byte("event: message\ndata: "), line, []byte("\n\n")))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(line)
		return
	}
}

// start spawns a child; it lives as long as the gateway.
func (g *gateway) start() (pipe, error) {
	cmd := exec.Command(g.child[0], g.child[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return pipe{}, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return pipe{}, err
	}
	if err := cmd.Start(); err != nil {
		return pipe{}, err
	}
	return pipe{in: in, out: bufio.NewReader(out)}, nil
}
