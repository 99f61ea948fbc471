// Command floorrelay is the least a stdio-to-Streamable-HTTP relay can do,
// kept as a benchmark baseline, not as a tool: it reads one line from stdin,
// POSTs it, tracks Mcp-Session-Id, and copies the answer's JSON or SSE data
// lines to stdout — one request at a time, with no validation, no
// cancellation, no retry, no GET stream. BenchmarkRelayVsDirect run against
// it (MCP_STDIO_E2E_BINARY) shows what any relay in its own process costs on
// a machine, so that mcp-stdio's own overhead can be told apart from the
// cost of the extra process. See BENCHMARKS.md.
package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
)

func main() {
	url := os.Args[len(os.Args)-1] // flags before the URL are ignored
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	var session string
	for {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			session = forward(url, session, line, out)
		}
		if err != nil {
			return
		}
	}
}

// forward POSTs one message and copies the answer to out; it returns the
// session id to use from then on.
func forward(url, session string, msg []byte, out *bufio.Writer) string {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(msg))
	if err != nil {
		return session
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return session
	}
	defer resp.Body.Close()
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		session = s
	}
	body, _ := io.ReadAll(resp.Body)
	for l := range bytes.Lines(body) {
		l = bytes.TrimRight(l, "\r\n")
		switch {
		case bytes.HasPrefix(l, []byte("data: ")):
			out.Write(l[len("data: "):])
			out.WriteByte('\n')
		case bytes.HasPrefix(l, []byte("{")):
			out.Write(l)
			out.WriteByte('\n')
		}
	}
	out.Flush()
	return session
}
