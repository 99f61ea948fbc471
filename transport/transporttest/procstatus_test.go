package transporttest_test

import (
	"os"
	"testing"

	"github.com/matryer/is"

	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

func TestProcStatusKB(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc")
	}
	is := is.New(t)
	rss, err := transporttest.ProcStatusKB(os.Getpid(), "VmRSS")
	is.NoErr(err)
	is.True(rss > 0)
	_, err = transporttest.ProcStatusKB(os.Getpid(), "NoSuchField")
	is.True(err != nil)
}
