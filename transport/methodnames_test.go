package transport

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// mcpMethod matches what an MCP method name looks like: a bare word MCP
// uses as a method, or a slash-separated name ("tools/call",
// "notifications/cancelled").
var mcpMethod = regexp.MustCompile(`^(initialize|ping|[a-z]+(/[a-zA-Z_]+)+)$`)

// mediaType matches the slash-separated strings that are not methods.
var mediaType = regexp.MustCompile(`^(application|text|image|audio|multipart)/`)

// TestNoMCPMethodNames holds the package to its promise: a transport moves
// bytes and knows no MCP method name. No string literal of the package's
// code (tests aside) may be one.
func TestNoMCPMethodNames(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			if _, ok := n.(*ast.ImportSpec); ok {
				return false // import paths ("net/http") are not the code's strings
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			if mcpMethod.MatchString(s) && !mediaType.MatchString(s) {
				t.Errorf("%s: MCP method name %q in transport code", fset.Position(lit.Pos()), s)
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked only %d files: is the test running in the package directory?", checked)
	}
}

// The check itself tells methods from media types.
func TestMCPMethodPattern(t *testing.T) {
	for _, s := range []string{"initialize", "ping", "tools/call", "notifications/cancelled", "notifications/resources/list_changed", "server/discover"} {
		if !mcpMethod.MatchString(s) || mediaType.MatchString(s) {
			t.Errorf("%q not taken for a method", s)
		}
	}
	for _, s := range []string{"application/json", "text/event-stream", "GET, POST, DELETE", "/mcp", "mcp-stdio"} {
		if mcpMethod.MatchString(s) && !mediaType.MatchString(s) {
			t.Errorf("%q taken for a method", s)
		}
	}
}
