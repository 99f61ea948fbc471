package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/mcp-stdio/mcp-stdio/cmd/internal/procfs"
	"github.com/mcp-stdio/mcp-stdio/transport/transporttest"
)

// smapsSample is /proc/self/smaps of a static Go program (inode 4711 on
// device fd:01), cut to the fields that matter.
const smapsSample = `00400000-00c4a000 r-xp 00000000 fd:01 4711                               /usr/bin/mcp-stdio
Size:               8488 kB
Rss:                4236 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
00c4a000-01590000 r--p 0084a000 fd:01 4711                               /usr/bin/mcp-stdio
Size:               9496 kB
Rss:                4248 kB
Anonymous:             0 kB
VmFlags: rd mr mw me
01590000-015e1000 rw-p 01190000 fd:01 4711                               /usr/bin/mcp-stdio
Size:                324 kB
Rss:                 236 kB
Anonymous:            88 kB
VmFlags: rd wr mr mw me ac
015e1000-01620000 rw-p 00000000 00:00 0
Size:                252 kB
Rss:                 112 kB
Anonymous:           112 kB
02000000-02100000 r--p 00000000 fd:02 4711                               /other/file/with/the/same/inode
Size:               1024 kB
Rss:                 64 kB
Anonymous:             0 kB
f7fc5000-f7fc7000 r-xp 00000000 00:00 0                          [vdso]
Size:                  8 kB
Rss:                   4 kB
Anonymous:             0 kB
`

func TestProgramRegions(t *testing.T) {
	is := is.New(t)
	const pc = 0x401234 // in the program's code
	regions, ok := programRegions(strings.NewReader(smapsSample), pc)
	is.True(ok)
	is.Equal(regions, []region{ // code and read-only data; not the data, not another file
		{start: 0x400000, end: 0xc4a000, rssKB: 4236},
		{start: 0xc4a000, end: 0x1590000, rssKB: 4248},
	})
	regions, ok = programRegions(strings.NewReader(smapsSample), 0xc50000) // in its read-only data
	is.True(ok)
	is.Equal(len(regions), 2)

	// An address no file maps: nothing to release.
	_, ok = programRegions(strings.NewReader(smapsSample), 0xf7fc5100) // the vDSO
	is.True(!ok)
	_, ok = programRegions(strings.NewReader(smapsSample), 0x100)
	is.True(!ok)

	// A breakpoint written into the code: nothing is released.
	patched := strings.Replace(smapsSample, "Rss:                4236 kB\nAnonymous:             0 kB", "Rss:                4236 kB\nAnonymous:             4 kB", 1)
	is.True(patched != smapsSample)
	_, ok = programRegions(strings.NewReader(patched), pc)
	is.True(!ok)

	// Text that is not smaps.
	_, ok = programRegions(strings.NewReader("hello world\n"), pc)
	is.True(!ok)
	_, ok = programRegions(strings.NewReader(""), pc)
	is.True(!ok)
}

// The release takes the program's pages out of this process's resident
// set, and the process goes on running.
func TestReleaseStartupPages(t *testing.T) {
	is := is.New(t)
	before := rssFileKB(t)
	var logs bytes.Buffer
	releaseStartupPages(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	after := rssFileKB(t)
	t.Logf("RssFile %d kB → %d kB; %s", before, after, strings.TrimSpace(logs.String()))
	if traced() {
		t.Skip("traced: the release keeps the pages")
	}
	is.True(strings.Contains(logs.String(), "released the program pages"))
	is.True(after < before*3/4) // most of what was mapped is released
}

// rssFileKB returns this process's RssFile.
func rssFileKB(t *testing.T) int {
	t.Helper()
	kb, err := procfs.StatusKB(os.Getpid(), "RssFile")
	if err != nil {
		t.Fatal(err)
	}
	return kb
}

// The relay's stdout, watched: the pages are given back once it has been
// quiet for the set time after its writes, not before; and the watcher
// ends with its context.
func TestReleaseWhenQuiet(t *testing.T) {
	is := is.New(t)
	const quiet = 50 * time.Millisecond
	logs := &transporttest.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	released := logs.Watch(regexp.MustCompile(`msg="(released the program pages start-up mapped|program pages kept[^"]*)"`))

	var out bytes.Buffer
	w := releaseWhenQuiet(t.Context(), &out, quiet, log)
	var last time.Time
	for range 3 { // a burst of answers
		last = time.Now()
		_, err := io.WriteString(w, "{}\n")
		is.NoErr(err)
	}
	released.Next(t, 10*time.Second)
	is.True(time.Since(last) >= quiet) // not before the quiet
	is.Equal(out.String(), "{}\n{}\n{}\n")

	// Nothing written: nothing given back, and the watcher ends with ctx
	// (the package's TestMain checks that no goroutine is left).
	ctx, cancel := context.WithCancel(t.Context())
	_ = releaseWhenQuiet(ctx, io.Discard, quiet, log)
	cancel()
}
