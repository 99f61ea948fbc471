package cli

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
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
// It does nothing under a debugger (TracerPid), and nothing when some
// page of those mappings is no longer the file's (a breakpoint or a
// uprobe written into the code), which the release would undo. What it
// did, or why not, is logged at Debug.
func releaseStartupPages(log *slog.Logger) {
	if traced() {
		log.Debug("program pages kept: the process is traced")
		return
	}
	exe, err := os.Stat("/proc/self/exe")
	if err != nil {
		log.Debug("program pages kept", "err", err)
		return
	}
	st, ok := exe.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	// Read as a stream through a small buffer: the whole text (tens of
	// kB) would leave its garbage in the heap's resident pages.
	smaps, err := os.Open("/proc/self/smaps")
	if err != nil {
		log.Debug("program pages kept", "err", err)
		return
	}
	regions, ok := programRegions(smaps, fileID{major: devMajor(st.Dev), minor: devMinor(st.Dev), inode: st.Ino})
	smaps.Close()
	if !ok {
		log.Debug("program pages kept: a page of the program's mappings is not the file's")
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

// fileID names a mapped file as /proc/PID/smaps does: the device and the
// inode.
type fileID struct {
	major, minor uint64
	inode        uint64
}

// region is one mapping of the program: its addresses and resident size.
type region struct {
	start, end uintptr
	rssKB      uint64
}

// programRegions returns the private read-only mappings of the file id
// from /proc/self/smaps. ok is false when one of them holds
// anonymous pages (a page written since it was mapped, as a breakpoint
// is), or when the text cannot be read as smaps.
func programRegions(smaps io.Reader, id fileID) (regions []region, ok bool) {
	var cur *region // the current mapping, when it is one of the program's
	sc := bufio.NewScanner(smaps)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if !strings.HasSuffix(f[0], ":") { // a mapping's header line
			cur = nil
			r, mine, valid := parseMapping(f, id)
			if !valid {
				return nil, false
			}
			if mine {
				regions = append(regions, r)
				cur = &regions[len(regions)-1]
			}
			continue
		}
		if cur == nil || len(f) < 2 {
			continue
		}
		switch f[0] {
		case "Rss:":
			cur.rssKB, _ = strconv.ParseUint(f[1], 10, 64)
		case "Anonymous:":
			if f[1] != "0" {
				return nil, false
			}
		}
	}
	return regions, sc.Err() == nil
}

// parseMapping reads a header line of smaps ("start-end perms offset
// major:minor inode [path]"): mine says whether it maps file id privately
// without write access; valid is false for a line that is not a header.
func parseMapping(f []string, id fileID) (r region, mine, valid bool) {
	if len(f) < 5 {
		return region{}, false, false
	}
	lo, hi, found := strings.Cut(f[0], "-")
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	majorText, minorText, found2 := strings.Cut(f[3], ":")
	major, err3 := strconv.ParseUint(majorText, 16, 64)
	minor, err4 := strconv.ParseUint(minorText, 16, 64)
	inode, err5 := strconv.ParseUint(f[4], 10, 64)
	perms := f[1]
	if !found || !found2 || err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil || end < start || len(perms) != 4 {
		return region{}, false, false
	}
	mine = inode == id.inode && major == id.major && minor == id.minor &&
		perms[0] == 'r' && perms[1] != 'w' && perms[3] == 'p'
	return region{start: uintptr(start), end: uintptr(end)}, mine, true
}

// devMajor and devMinor split a Linux device number as the kernel's
// new_encode_dev does.
func devMajor(dev uint64) uint64 { return (dev>>8)&0xfff | (dev>>32)&^0xfff }
func devMinor(dev uint64) uint64 { return dev&0xff | (dev>>12)&^0xff }
