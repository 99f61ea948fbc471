//go:build unix

package cli

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// endWithParent ends serve at once when the parent that asked is gone
// already; it ignores, with a warning, a variable that is not a process
// id or names a process that is not the parent; without it, it does
// nothing. (The parent's death itself is shown end to end, with the npm
// launcher: TestServeEndsWithItsLauncher.)
func TestEndWithParent(t *testing.T) {
	t.Cleanup(func() { clearParentDeathSignal(t) })
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip(err)
	}
	for _, c := range []struct {
		value, log string
		ended      bool
	}{
		{"", "", false},
		{"abc", "ignoring MCP_STDIO_PARENT_PID: not a process id", false},
		{strconv.Itoa(os.Getpid()), "is not serve's parent", false},
		{strconv.Itoa(dead.Process.Pid), "the parent process that started serve is gone", true},
	} {
		t.Run(c.value, func(t *testing.T) {
			is := is.New(t)
			logs := &transporttest.SyncBuffer{}
			getenv := func(k string) string {
				if k == "MCP_STDIO_PARENT_PID" {
					return c.value
				}
				return ""
			}
			ctx, stop := endWithParent(t.Context(), getenv, slog.New(slog.NewTextHandler(logs, nil)))
			defer stop()
			is.Equal(ctx.Err() != nil, c.ended)
			is.True(c.log == "" && logs.String() == "" || c.log != "" && strings.Contains(logs.String(), c.log))
			if !c.ended {
				is.True(context.Cause(ctx) == nil)
			}
		})
	}
}
