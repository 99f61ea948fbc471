package frame_test

import (
	"fmt"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// A session-era host gets none of the _meta keys 2026-07-28 introduced;
// other keys of the reserved prefix (a session-era task's) are not among
// them.
func ExampleIsModernMetaKey() {
	for _, key := range []string{frame.MetaServerInfo, "io.modelcontextprotocol/related-task", "progressToken"} {
		fmt.Println(key, frame.IsModernMetaKey(key))
	}
	fmt.Println(frame.IsSessionEraVersion("2025-06-18"), frame.IsSessionEraVersion(frame.ModernVersion))
	// Output:
	// io.modelcontextprotocol/serverInfo true
	// io.modelcontextprotocol/related-task false
	// progressToken false
	// true false
}
