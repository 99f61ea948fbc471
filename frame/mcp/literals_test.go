package mcp_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// revisionLiteral is a revision date between quotes, as it appears in a
// Go string literal or in JSON inside one.
var revisionLiteral = regexp.MustCompile(`"20\d\d-\d\d-\d\d"`)

// The stages, the wiring and the transports name revisions through this
// package, and the wiring and the transports write no JSON-RPC of their
// own (test files and test-support packages aside): a new revision is a
// change here.
func TestNoProtocolLiteralsOutside(t *testing.T) {
	for _, tt := range []struct {
		dir     string
		jsonrpc bool // "jsonrpc" literals are refused too
	}{
		{"mw", false},
		{"pipeline", true},
		{"transport", true},
	} {
		root := filepath.Join("..", "..", tt.dir)
		checked := 0
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (strings.HasSuffix(d.Name(), "test") || d.Name() == "testdata") {
				return filepath.SkipDir // test support
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			checked++
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				if revisionLiteral.MatchString(lit.Value) {
					t.Errorf("%s: protocol revision literal %s: name it through frame/mcp", fset.Position(lit.Pos()), lit.Value)
				}
				if tt.jsonrpc && strings.Contains(lit.Value, `"jsonrpc"`) {
					t.Errorf("%s: JSON-RPC written by hand: build it with frame or frame/mcp", fset.Position(lit.Pos()))
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if checked == 0 {
			t.Errorf("no Go file checked in %s", tt.dir)
		}
	}
}
