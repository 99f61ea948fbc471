// Command render writes CONFORMANCE.md from the JSON summary the
// conformance test wrote:
//
//	go run ./cmd/mcp-stdio/internal/conformancereport/render -in summary.json -out CONFORMANCE.md
//
// .ci/conformance runs the test and then this.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/internal/conformancereport"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	in := fs.String("in", "", "the summary `file` (JSON) the conformance test wrote")
	out := fs.String("out", "CONFORMANCE.md", "the Markdown `file` to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *in == "" {
		return fmt.Errorf("-in is required")
	}
	s, err := conformancereport.Read(*in)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := conformancereport.Render(&b, s); err != nil {
		return err
	}
	return os.WriteFile(*out, b.Bytes(), 0o644)
}
