package mw_test

import (
	"fmt"

	"github.com/mcp-stdio/mcp-stdio/mw"
)

// A filter that offers only reading tools, and never the secret one.
func ExampleToolFilter_Why() {
	f := mw.NewToolFilter([]string{"read_*", "list_*"}, []string{"read_secret*"})
	for _, tool := range []string{"read_file", "write_file", "read_secrets"} {
		if why := f.Why(tool); why != "" {
			fmt.Printf("%s: %s\n", tool, why)
		} else {
			fmt.Printf("%s: offered\n", tool)
		}
	}
	// Output:
	// read_file: offered
	// write_file: no --allow-tool glob names it
	// read_secrets: --deny-tool "read_secret*" filters it out
}

func ExampleToolGlobMatch() {
	fmt.Println(mw.ToolGlobMatch("github/*", "github/create_issue"))
	fmt.Println(mw.ToolGlobMatch("delete_?", "delete_all"))
	// Output:
	// true
	// false
}
