//go:build linux

package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// Every request is classified by the answers its id got: one is answered,
// none is lost unless the driver cancelled it, two are a duplicate, and an
// answer to an id not in flight is a stray.
func TestTrackerClassifies(t *testing.T) {
	is := is.New(t)
	tr := newTracker()
	var told strings.Builder
	tr.log = &told
	ok := tr.start("echo")
	failed := tr.start("echo")
	lost := tr.start("echo")
	twice := tr.start("echo")
	cancelledQuiet := tr.start("cancel")
	cancelledAnswered := tr.start("cancel")
	open := tr.start("echo")
	tr.answer(ok, false, "m")
	tr.answer(failed, true, "m")
	tr.answer(twice, false, "m")
	tr.answer(twice, false, "m")
	tr.cancel(cancelledQuiet)
	tr.cancel(cancelledAnswered)
	tr.answer(cancelledAnswered, true, "m")
	for _, id := range []int64{ok, failed, lost, twice, cancelledQuiet, cancelledAnswered} {
		tr.finish(id)
	}
	tr.answer(ok, false, "m")     // after it finished: a stray
	tr.answer(1000000, true, "m") // never sent: a stray
	is.Equal(tr.answers(open), 0)

	sum, strays := tr.totals()
	is.Equal(sum.sent, int64(7))
	is.Equal(sum.answered, int64(2))
	is.Equal(sum.errors, int64(1))
	is.Equal(sum.cancelled, int64(2))
	is.Equal(sum.cancelNone, int64(1))
	is.Equal(sum.lost, int64(2)) // lost, and open: still in flight
	is.Equal(sum.dup, int64(1))
	is.Equal(strays, int64(2))
	is.True(strings.Contains(tr.table(), "| cancel "))
	is.Equal(strings.Count(told.String(), "\n"), 3) // the duplicate and the strays, told
	is.True(strings.Contains(told.String(), "answered 2 times: m | m"))
}

// descendants finds a child of this process with its command line, and
// alive tells when it has ended.
func TestDescendantsAndAlive(t *testing.T) {
	is := is.New(t)
	cmd := exec.Command("sleep", "300")
	is.NoErr(cmd.Start())
	defer cmd.Process.Kill()
	ds := descendants(os.Getpid())
	i := slices.IndexFunc(ds, func(p proc) bool { return p.pid == cmd.Process.Pid })
	is.True(i >= 0) // the child is found
	p := ds[i]
	is.Equal(p.ppid, os.Getpid())
	is.Equal(p.cmdline, "sleep 300")
	is.True(alive(p))
	is.True(fds(os.Getpid()) > 2)
	is.True(rssKiB(os.Getpid()) > 0)
	is.True(threads(os.Getpid()) > 0)

	is.NoErr(cmd.Process.Kill())
	_ = cmd.Wait()
	is.True(!alive(p)) // ended and reaped
	is.Equal(len(servers([]proc{p, {cmdline: "mcp-stdio example-server"}, {cmdline: "mcp-stdio supervise -- mcp-stdio example-server"}})), 1)
}
