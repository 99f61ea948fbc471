package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/tidwall/gjson"
)

// --session-era-only turns the example server's 2026-07-28 face off: a
// server/discover probe gets -32601, as from a server written before
// 2026-07-28; without the flag it is answered.
func TestExampleServerSessionEraOnlyFlag(t *testing.T) {
	const discover = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}` + "\n"
	for _, tc := range []struct {
		args []string
		want string // the gjson path that must exist in the answer
	}{
		{[]string{"--session-era-only"}, "error"},
		{nil, "result.supportedVersions"},
	} {
		is := is.New(t)
		var out, errOut bytes.Buffer
		err := ExampleServer(context.Background(), append(tc.args, "--log-level", "error"), os.Getenv,
			strings.NewReader(discover), &out, &errOut, Options{Version: "test"})
		is.NoErr(err)
		answer := gjson.Parse(out.String())
		is.True(answer.Get(tc.want).Exists()) // the answer to discover
		if tc.want == "error" {
			is.Equal(answer.Get("error.code").Int(), int64(-32601))
		}
	}
}
