package cli

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// The default of serve's --max-buffered: a share of the machine's memory.
const (
	// bufferedShare divides the machine's memory: the budget is a quarter
	// of it, leaving the rest to the children, the Go runtime's garbage
	// (the heap may grow to about twice what is live) and everything else.
	bufferedShare = 4
	// fallbackMemory is the memory assumed where it cannot be read (any
	// system but Linux): the budget is then 1 GiB.
	fallbackMemory = 4 << 30
)

// machineMemory returns the machine's memory in bytes — MemTotal from
// /proc/meminfo on Linux — and whether it could be read.
func machineMemory() (int64, bool) {
	if runtime.GOOS != "linux" {
		return 0, false
	}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	return parseMemTotal(b)
}

// defaultMaxBuffered returns --max-buffered's default from the machine's
// memory (see machineMemory; fallbackMemory when unknown), never less than
// floor, the largest single message allowed.
func defaultMaxBuffered(mem int64, known bool, floor int64) int64 {
	if !known {
		mem = fallbackMemory
	}
	return max(mem/bufferedShare, floor)
}

// parseMemTotal returns the MemTotal line of /proc/meminfo's text
// ("MemTotal:       16314116 kB") in bytes.
func parseMemTotal(b []byte) (int64, bool) {
	for line := range bytes.Lines(b) {
		rest, ok := bytes.CutPrefix(line, []byte("MemTotal:"))
		if !ok {
			continue
		}
		fields := strings.Fields(string(rest))
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || kb <= 0 || kb > (1<<62)>>10 {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}

// formatSize writes a byte count for people: 3.9 GiB, 512 MiB, 100 B.
func formatSize(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size {
			v := strconv.FormatFloat(float64(n)/float64(u.size), 'f', 1, 64)
			return strings.TrimSuffix(v, ".0") + " " + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " B"
}
