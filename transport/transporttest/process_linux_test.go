//go:build linux

package transporttest_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

func TestProcessGone(t *testing.T) {
	is := is.New(t)
	cmd := transporttest.Command("cat")
	stdin, err := cmd.StdinPipe()
	is.NoErr(err)
	is.NoErr(cmd.Start())
	pid := cmd.Process.Pid
	is.True(!transporttest.ProcessGone(t, pid, 0)) // running

	stdin.Close()                                        // cat exits
	is.True(transporttest.ProcessGone(t, pid, testWait)) // a zombie: not waited for yet
	is.NoErr(cmd.Wait())
	is.True(transporttest.ProcessGone(t, pid, 0)) // reaped
}
