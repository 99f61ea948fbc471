package cli

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// releaseStartupPages tells the kernel that the process no longer needs
// the pages of its program it has mapped so far (madvise MADV_DONTNEED on
// the executable's read-only mappings: code, read-only data, the function
// tables). Called once a command has started, it takes out of the
// resident set what only starting touched — package initialisers, flag
// parsing, TLS and OAuth set-up, the listeners — which a Go process
// otherwise keeps mapped for good, with the 64-kB windows around every
// page it touched. The pages stay in the page cache, shared with every
// other process of the same binary; what the command goes on running is
// mapped again, from there, when it runs. Nothing is written or lost: the
// mappings are private, read-only and unmodified.
//
// The program's mappings are those of the file that maps this function's
// code, as /proc/self/smaps names it (device and inode), so an executable
// on an overlay file system (a container's) is found as well as any other.
// It does nothing under a debugger (TracerPid), and nothing when some page
// of those mappings is no longer the file's (a breakpoint or a uprobe
// written into the code), which the release would undo. What it did, or
// why not, is logged at Debug.
func releaseStartupPages(log *slog.Logger) {
	if traced() {
		log.Debug("program pages kept: the process is traced")
		return
	}
	// Read as a stream through a small buffer: the whole text (tens of
	// kB) would leave its garbage in the heap's resident pages.
	smaps, err := os.Open("/proc/self/smaps")
	if err != nil {
		log.Debug("program pages kept", "err", err)
		return
	}
	regions, ok := programRegions(smaps, reflect.ValueOf(releaseStartupPages).Pointer())
	smaps.Close()
	if !ok {
		log.Debug("program pages kept: the program's mappings were not found, or a page of them is not the file's")
		return
	}
	var released uint64
	for _, r := range regions {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, r.start, r.end-r.start, syscall.MADV_DONTNEED); errno != 0 {
			log.Debug("program pages kept", "err", errno)
			return
		}
		released += r.rssKB
	}
	log.Debug("released the program pages start-up mapped", "kB", released)
}

// traced reports whether a tracer (a debugger) is attached, from
// /proc/self/status.
func traced() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("TracerPid:")); ok {
			return strings.TrimSpace(string(rest)) != "0"
		}
	}
	return false
}

// mapping is one mapping of /proc/self/smaps: its addresses, the file it
// maps (device and inode; inode 0 for none), its permissions and what of
// it is resident.
type mapping struct {
	start, end    uintptr
	file          string // "major:minor inode"
	inode         uint64
	perms         string
	rssKB, anonKB uint64
}

// region is one mapping of the program: its addresses and resident size.
type region struct {
	start, end uintptr
	rssKB      uint64
}

// programRegions returns, from /proc/self/smaps, the private mappings
// without write access of the file that maps the address pc. ok is false
// when no file mapping holds pc, when one of those mappings holds
// anonymous pages (a page written since it was mapped, as a breakpoint
// is), or when the text cannot be read as smaps.
func programRegions(smaps io.Reader, pc uintptr) (regions []region, ok bool) {
	var maps []mapping
	sc := bufio.NewScanner(smaps)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if !strings.HasSuffix(f[0], ":") { // a mapping's header line
			m, valid := parseMapping(f)
			if !valid {
				return nil, false
			}
			maps = append(maps, m)
			continue
		}
		if len(maps) == 0 || len(f) < 2 {
			continue
		}
		cur := &maps[len(maps)-1]
		switch f[0] {
		case "Rss:":
			cur.rssKB, _ = strconv.ParseUint(f[1], 10, 64)
		case "Anonymous:":
			cur.anonKB, _ = strconv.ParseUint(f[1], 10, 64)
		}
	}
	if sc.Err() != nil {
		return nil, false
	}
	program := ""
	for _, m := range maps {
		if m.start <= pc && pc < m.end && m.inode != 0 {
			program = m.file
		}
	}
	if program == "" {
		return nil, false
	}
	for _, m := range maps {
		if m.file != program || m.perms[0] != 'r' || m.perms[1] == 'w' || m.perms[3] != 'p' {
			continue
		}
		if m.anonKB != 0 {
			return nil, false
		}
		regions = append(regions, region{start: m.start, end: m.end, rssKB: m.rssKB})
	}
	return regions, true
}

// parseMapping reads a header line of smaps ("start-end perms offset
// major:minor inode [path]"); valid is false for a line that is not one.
func parseMapping(f []string) (m mapping, valid bool) {
	if len(f) < 5 || len(f[1]) != 4 {
		return mapping{}, false
	}
	lo, hi, found := strings.Cut(f[0], "-")
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	inode, err3 := strconv.ParseUint(f[4], 10, 64)
	if !found || err1 != nil || err2 != nil || err3 != nil || end < start || !strings.Contains(f[3], ":") {
		return mapping{}, false
	}
	return mapping{start: uintptr(start), end: uintptr(end), file: f[3] + " " + f[4], inode: inode, perms: f[1]}, true
}

// releaseWhenQuiet returns out, watched: once something has been written
// to it and then nothing for quiet, the program's start-up pages are given
// back (releaseStartupPages), once. The relay uses it on its stdout: its
// start-up lasts until the host's first exchanges (the handshake, the era
// probe, the first lists) are answered, and a host waits for those
// answers, so the pages are given back only when it has gone quiet. The
// watcher ends then, or with ctx.
func releaseWhenQuiet(ctx context.Context, out io.Writer, quiet time.Duration, log *slog.Logger) io.Writer {
	w := &watchedWriter{w: out, wrote: make(chan struct{})}
	go func() {
		select {
		case <-w.wrote:
		case <-ctx.Done():
			return
		}
		for {
			wait := quiet - time.Since(time.Unix(0, w.last.Load()))
			if wait <= 0 {
				releaseStartupPages(log)
				return
			}
			if frame.Sleep(ctx, wait) != nil {
				return
			}
		}
	}()
	return w
}

// watchedWriter is a Writer that notes when it was last written to.
type watchedWriter struct {
	w     io.Writer
	last  atomic.Int64 // unix nanoseconds of the last Write
	first sync.Once
	wrote chan struct{} // closed at the first Write
}

func (w *watchedWriter) Write(p []byte) (int, error) {
	w.last.Store(time.Now().UnixNano())
	w.first.Do(func() { close(w.wrote) })
	return w.w.Write(p)
}
