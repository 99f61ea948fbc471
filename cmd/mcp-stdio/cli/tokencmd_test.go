package cli_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio/cli"
)

// --bearer-token-command goes with no other source of the token, and its
// command line must split; each refusal is one line naming the flags.
func TestRelayBearerTokenCommandConflicts(t *testing.T) {
	is := is.New(t)
	for _, c := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"--oauth"}, "--bearer-token-command and --oauth are mutually exclusive"},
		{nil, []string{"--oauth-device"}, "--bearer-token-command and --oauth are mutually exclusive"},
		{nil, []string{"--bearer-token", "x"}, "--bearer-token-command and --bearer-token"},
		{map[string]string{"MCP_BEARER_TOKEN": "x"}, nil, "unset MCP_BEARER_TOKEN"},
		{nil, []string{"-H", "Authorization: Bearer x"}, "-H 'Authorization: …'"},
	} {
		code, _, errOut := runRelay(t, c.env, append(append([]string{"--bearer-token-command", "gcloud auth print-access-token"}, c.args...), "http://a/mcp")...)
		is.Equal(code, cli.ExitUsage)
		is.True(strings.Contains(errOut, c.want))
		is.Equal(strings.Count(strings.TrimSpace(errOut), "\n"), 0)
	}
	code, _, errOut := runRelay(t, nil, "--bearer-token-command", "sh -c 'unclosed", "http://a/mcp")
	is.Equal(code, cli.ExitUsage)
	is.True(strings.Contains(errOut, "--bearer-token-command: a single quote is not closed"))
	code, _, errOut = runRelay(t, nil, "--bearer-token-command", "mcp-stdio-no-such-token-command", "http://a/mcp")
	is.Equal(code, cli.ExitFailure)
	is.True(strings.Contains(errOut, "mcp-stdio-no-such-token-command is not found"))
}
