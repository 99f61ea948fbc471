package cli_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcp-stdio/mcp-stdio/auth/authtest"
)

// TestMain lets the test binary double as the user's browser: run as
// "<binary> browser-helper URL" (what $BROWSER is set to in the OAuth tests)
// it follows the authorization redirect like a browser would.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "browser-helper" {
		if err := authtest.Visit(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "browser-helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
