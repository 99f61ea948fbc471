package cli_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/mcp-stdio/mcp-stdio/auth/authtest"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// The test binary doubles as the user's browser (see
// transporttest.RunProgram): run as "<binary> browser-helper URL" (what
// $BROWSER is set to in the OAuth tests) it follows the authorization
// redirect like a browser would.
func init() {
	transporttest.RunProgram(map[string]func(args []string) int{
		"browser-helper": authtest.Browser,
	})
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
